package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// streaming makes the simulated model stream: every main-model answer is marked with the number
// of its call ("<3>") and sent in pieces of a few bytes, so a test can tell which call a piece of
// text came from.
type streaming struct {
	inner hippocam.Model
	mu    sync.Mutex
	calls int // main-model calls
}

func (s *streaming) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	return s.CompleteStream(ctx, req, nil)
}

func (s *streaming) CompleteStream(ctx context.Context, req *hippocam.Request, fn func(string) error) (*hippocam.Response, error) {
	resp, err := s.inner.Complete(ctx, req)
	if err != nil || req.Role != hippocam.CallAgent {
		return resp, err
	}
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	if resp.Message.Content != "" {
		resp.Message.Content = fmt.Sprintf("<%d>", n) + resp.Message.Content
	}
	for text := resp.Message.Content; text != "" && fn != nil; {
		k := min(len(text), 5)
		if err := fn(text[:k]); err != nil {
			return nil, err
		}
		text = text[k:]
	}
	return resp, nil
}

// JANUS and the main call start together. When JANUS leaves the context as it was, the answer
// under way stands (one main call); when its guidance changes the context, the main call is made
// again and the discarded one is accounted for under its own role. Either way the caller gets
// the answer's text as it comes, only the text of the answer that stood, and the stored answer is
// exactly that text.
func TestSpeculativeJanus(t *testing.T) {
	m := &streaming{inner: mustSim(t)}
	e := mustEngine(t, engine.ForWindow(8000), m)
	st := newConversation(t, e).st
	var got strings.Builder
	step := func(text string) *engine.Result {
		t.Helper()
		got.Reset()
		res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{
			Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: text}},
			OnText:   func(p string) { got.WriteString(p) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != res.Answer.Content {
			t.Fatalf("the caller received %q, the stored answer is %q", got.String(), res.Answer.Content)
		}
		return res
	}
	before := m.calls
	res := step("!say hello")
	if res.Speculation != engine.SpeculationStood || m.calls-before != 1 {
		t.Fatalf("JANUS skipped: speculation %q with %d main calls, want it to stand with one", res.Speculation, m.calls-before)
	}
	if res.Usage[hippocam.CallSpeculative].Calls != 0 {
		t.Fatalf("a speculation that stood was accounted as wasted: %+v", res.Usage)
	}
	before = m.calls
	res = step("#open Read the exports | both exports are read\n!say reading")
	if res.Speculation != engine.SpeculationRedone || m.calls-before != 2 {
		t.Fatalf("JANUS opened an intent: speculation %q with %d main calls, want it redone with two", res.Speculation, m.calls-before)
	}
	if !strings.HasPrefix(res.Answer.Content, fmt.Sprintf("<%d>", m.calls)) {
		t.Fatalf("the answer %q is not the last call's (%d)", res.Answer.Content, m.calls)
	}
	if u := res.Usage[hippocam.CallSpeculative]; u.Calls != 1 || u.Input == 0 {
		t.Fatalf("the discarded call is not accounted for: %+v", u)
	}
	if s, err := st.Session(context.Background(), "", "s1"); err != nil || s.Usage[hippocam.CallSpeculative].Calls != 1 {
		t.Fatalf("session usage %+v (%v): the discarded call must be in it", s.Usage, err)
	}
}

// With speculation off, every step makes its main call after JANUS, once.
func TestSpeculationOff(t *testing.T) {
	m := &streaming{inner: mustSim(t)}
	cfg := engine.ForWindow(8000)
	cfg.Speculate = false
	c := newConversation(t, mustEngine(t, cfg, m))
	for _, text := range []string{"!say hello", "#open Read the exports | both exports are read\n!say reading"} {
		before := m.calls
		if res := c.mustUser(text); res.Speculation != "" || m.calls-before != 1 {
			t.Fatalf("speculation %q, %d main calls", res.Speculation, m.calls-before)
		}
	}
}

// Speculation changes when the main call starts, not what the session becomes: a long session
// with speculation ends with the same context and the same answers as one without.
func TestSpeculationSameState(t *testing.T) {
	const w, rounds = 8000, 150
	on := engine.ForWindow(w)
	off := on
	off.Speculate = false
	var ctxs [2][]hippocam.Message
	var right [2]int
	var stood, redone int
	for i, cfg := range []engine.Config{on, off} {
		c := newConversation(t, mustEngine(t, cfg, &streaming{inner: mustSim(t)}))
		for r := 0; r < rounds; r++ {
			var res *engine.Result
			switch {
			case r%10 == 0:
				res = c.mustUser(fmt.Sprintf("#open Task %d | task %d is done\nk%d := v%d\n!say working", r, r, r, r))
			case r%10 == 6:
				res = c.mustUser(fmt.Sprintf("#close Task %d\n!say closed", r-6))
			case r%10 == 8 && r > 20:
				res = c.mustUser(fmt.Sprintf("!ask k%d", r-18))
				if res.Answer.Content != "" && strings.Contains(res.Answer.Content, fmt.Sprintf("v%d", r-18)) {
					right[i]++
				}
			default:
				res = c.mustUser(fmt.Sprintf("note %d: %s\n!say noted", r, filler(fmt.Sprint(r), 8)))
			}
			switch res.Speculation {
			case engine.SpeculationStood:
				stood++
			case engine.SpeculationRedone:
				redone++
			}
		}
		ctxs[i] = c.session().Context
	}
	if stood == 0 || redone == 0 {
		t.Fatalf("speculation stood %d times and was redone %d times: the test needs both", stood, redone)
	}
	if right[0] != right[1] || right[0] == 0 {
		t.Errorf("right answers: %d with speculation, %d without", right[0], right[1])
	}
	// The answers carry their call's number, which speculation shifts: compare the rest.
	strip := func(ms []hippocam.Message) []hippocam.Message {
		out := append([]hippocam.Message(nil), ms...)
		for i := range out {
			if out[i].Role == hippocam.RoleAssistant {
				if _, rest, ok := strings.Cut(out[i].Content, ">"); ok && strings.HasPrefix(out[i].Content, "<") {
					out[i].Content = rest
				}
			}
		}
		return out
	}
	if d := contextDiff(strip(ctxs[0]), strip(ctxs[1])); d != "" {
		t.Errorf("with speculation the context differs: %s", d)
	}
}

// Before each main-model call's text reaches OnText, OnCall gets the input tokens of the request
// sent, whether the call was the speculative one that stood or one made again after JANUS.
func TestOnCallBeforeText(t *testing.T) {
	m := &streaming{inner: mustSim(t)}
	e := mustEngine(t, engine.ForWindow(8000), m)
	st := newConversation(t, e).st
	for _, text := range []string{"!say hello", "#open Read the exports | both exports are read\n!say reading"} {
		var calls []int
		textFirst := false
		res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{
			Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: text}},
			OnText: func(string) {
				if len(calls) == 0 {
					textFirst = true
				}
			},
			OnCall: func(n int) { calls = append(calls, n) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if textFirst || len(calls) != 1 || calls[0] == 0 || calls[0] != res.MaxRequestTokens {
			t.Fatalf("%q: OnCall got %v (text before it: %v), want once the request's %d tokens before the text",
				text, calls, textFirst, res.MaxRequestTokens)
		}
	}
}
