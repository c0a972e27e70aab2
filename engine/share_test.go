package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/openai/wire"
)

// sentLog passes every call on and keeps, by role, the chat-completions body of its request as
// it was sent, and the request itself, to encode it again at the end.
type sentLog struct {
	inner  hippocam.Model
	mu     sync.Mutex
	bodies map[hippocam.CallRole][]string
	reqs   map[hippocam.CallRole][]*hippocam.Request
}

func (r *sentLog) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	body := encodeRequest(req)
	r.mu.Lock()
	r.bodies[req.Role] = append(r.bodies[req.Role], body)
	r.reqs[req.Role] = append(r.reqs[req.Role], req)
	r.mu.Unlock()
	return r.inner.Complete(ctx, req)
}

func encodeRequest(req *hippocam.Request) string {
	w, err := wire.FromRequest("m", req)
	if err != nil {
		return "error: " + err.Error()
	}
	b, err := json.Marshal(w)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

// sharedRun drives a session step by step, each step on the session the last one returned (as
// the session service does with its cache), with sharing on or off: intents opened and closed,
// tool results that fill the window (folds), questions answered through recall, a framing that
// changes and answers regenerated. It returns the sentLog.
func sharedRun(t *testing.T, on bool, mode consolidation, rounds int) *sentLog {
	t.Helper()
	defer engine.SetSharing(on)()
	rec := &sentLog{inner: mustSim(t), bodies: map[hippocam.CallRole][]string{}, reqs: map[hippocam.CallRole][]*hippocam.Request{}}
	e := mustEngine(t, engine.ForWindow(6000), rec)
	ctx := context.Background()
	st := inmem.New()
	s := engine.NewSession("", "s", time.Unix(0, 0).UTC())
	if err := st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	arch := hippocam.SessionArchive(st, "", "s")
	framing := []hippocam.Message{{Role: hippocam.RoleSystem, Content: "You are a test agent."}}
	newFraming := true
	var last hippocam.Message
	step := func(r int, in engine.Input) {
		t.Helper()
		in.Framing, in.NewFraming, in.Defer = framing, newFraming, mode != consolidateInline
		res, err := e.Step(ctx, s, arch, in)
		if err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		if err := st.Commit(ctx, res.Session, res.Change); err != nil {
			t.Fatalf("round %d: commit: %v", r, err)
		}
		s, last, newFraming = res.Session, res.Answer, false
		if mode == consolidateJob && res.Deferred {
			job, err := e.Consolidate(ctx, s, arch)
			if err != nil {
				t.Fatalf("round %d: job: %v", r, err)
			}
			if err := st.Commit(ctx, job.Session, job.Change); err != nil {
				t.Fatalf("round %d: job commit: %v", r, err)
			}
			s = job.Session
		}
	}
	user := func(r int, text string) {
		step(r, engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: text}}})
	}
	depth := 0
	for r := 0; r < rounds; r++ {
		if r%23 == 22 {
			framing = []hippocam.Message{{Role: hippocam.RoleSystem, Content: fmt.Sprintf("You are a test agent, version %d.", r)}}
			newFraming = true
		}
		switch {
		case r%17 == 16 && len(last.ToolCalls) == 0:
			step(r, engine.Input{Regenerate: last.ID})
		case depth < 2 && r%9 == 0:
			user(r, fmt.Sprintf("#open Task %d | task %d is done\nWork on task %d.", r, r, r))
			depth++
		case depth > 0 && r%9 == 5:
			user(r, fmt.Sprintf("#close Task %d\n!say closed", r-5-(r-5)%9))
			depth--
		case r%4 == 1:
			user(r, fmt.Sprintf("!call read_file {\"path\":\"f%d\"}", r))
			calls := last.CallIDs()
			if len(calls) != 1 {
				t.Fatalf("round %d: %d calls", r, len(calls))
			}
			step(r, engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleTool, ToolCallID: calls[0],
				Content: fmt.Sprintf("detail d%d := v%d\n%s", r, r, filler(fmt.Sprintf("f%d", r), 25))}}})
		case r%4 == 3 && r > 8:
			user(r, fmt.Sprintf("!ask d%d", r-6)) // stated at r-6, unless an intent opened or closed there
		default:
			user(r, fmt.Sprintf("k%d := w%d\n!say noted", r%13, r))
		}
	}
	if _, err := e.SettleVerdict(ctx, "", "s"); err != nil { // the last step's JANUS call
		t.Fatal(err)
	}
	return rec
}

// The requests a session sends are the same, byte for byte, whether its steps share their
// context's room and their requests' prefix (share.go) or copy them, with consolidation in the
// step and in jobs; and no request sent changes afterwards (nothing handed out is written
// again). (What steps keep from call to call is checked against a fresh count at every use in
// all of the package's tests: main_test.go.)
func TestSharingSendsTheSameRequests(t *testing.T) {
	rounds := 160
	if testing.Short() {
		rounds = 60
	}
	for _, mode := range []consolidation{consolidateInline, consolidateJob} {
		t.Run(fmt.Sprint("mode=", mode), func(t *testing.T) {
			shared := sharedRun(t, true, mode, rounds)
			copied := sharedRun(t, false, mode, rounds)
			for role, want := range copied.bodies {
				got := shared.bodies[role]
				if len(got) != len(want) {
					t.Fatalf("%s: %d requests shared, %d copied", role, len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s request %d differs:\nshared %.400s\ncopied %.400s", role, i, got[i], want[i])
					}
				}
			}
			if len(shared.bodies) != len(copied.bodies) || len(shared.bodies[hippocam.CallAgent]) < rounds {
				t.Fatalf("%d roles shared, %d copied; %d main calls", len(shared.bodies), len(copied.bodies), len(shared.bodies[hippocam.CallAgent]))
			}
			for _, role := range []hippocam.CallRole{hippocam.CallPrecip, hippocam.CallPalim} {
				if len(shared.bodies[role]) == 0 {
					t.Errorf("no %s request: the run does not exercise the shared prefix's sub-prefixes", role)
				}
			}
			for role, reqs := range shared.reqs {
				for i, req := range reqs {
					if encodeRequest(req) != shared.bodies[role][i] {
						t.Fatalf("%s request %d changed after it was sent", role, i)
					}
				}
			}
		})
	}
}

// Two steps on one session state (a request and its retry, or a step after one that failed
// having appended) each see only their own messages: the first takes the room after the
// context, the second copies it, and neither changes the other's result or the state.
func TestStepsOnOneStateStayApart(t *testing.T) {
	e := mustEngine(t, gateWindow(100000), mustSim(t))
	ctx := context.Background()
	st := inmem.New()
	s := engine.NewSession("", "s", time.Unix(0, 0).UTC())
	if err := st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	arch := hippocam.SessionArchive(st, "", "s")
	say := func(s *hippocam.Session, text string) *engine.Result {
		t.Helper()
		res, err := e.Step(ctx, s, arch, engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!say " + text}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i := range 3 {
		res := say(s, fmt.Sprint(i))
		if err := st.Commit(ctx, res.Session, res.Change); err != nil {
			t.Fatal(err)
		}
		s = res.Session
	}
	before := append([]hippocam.Message(nil), s.Context...)
	a := say(s, "a")
	b := say(s, "b")
	c := say(a.Session, "c")
	for _, r := range []struct {
		res  *engine.Result
		base []hippocam.Message
		said []string
	}{{a, before, []string{"a"}}, {b, before, []string{"b"}}, {c, before, []string{"a", "c"}}} {
		got := r.res.Session.Context
		if len(got) != len(r.base)+2*len(r.said) || !slices.EqualFunc(got[:len(r.base)], r.base, sameIDContent) {
			t.Fatalf("context %s, want %s then %q", describe(got), describe(r.base), r.said)
		}
		for k, text := range r.said {
			if u, ans := got[len(r.base)+2*k], got[len(r.base)+2*k+1]; u.Content != "!say "+text || ans.Content != text {
				t.Fatalf("context %s, want %s then %q", describe(got), describe(r.base), r.said)
			}
		}
	}
	if !slices.EqualFunc(s.Context, before, sameIDContent) {
		t.Fatalf("the state changed: %s, was %s", describe(s.Context), describe(before))
	}
}

func sameIDContent(x, y hippocam.Message) bool { return x.ID == y.ID && x.Content == y.Content }

func describe(ms []hippocam.Message) string {
	var b []string
	for _, m := range ms {
		b = append(b, m.ID+":"+clip(m.Content))
	}
	return fmt.Sprint(b)
}
