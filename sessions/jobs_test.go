package sessions_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sessions"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// gatedModel holds PRECIP calls at its gate until the test opens it, and logs the calls it
// sees: "precip" when a PRECIP call returns, and the role of any other call as it is made.
type gatedModel struct {
	inner   hippocam.Model
	mu      sync.Mutex
	gate    chan struct{} // nil: no gate
	entered chan struct{}
	precips int
	events  []string
	agent   []*hippocam.Request // the main model's requests
}

func (g *gatedModel) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role != hippocam.CallPrecip {
		g.log(string(req.Role), req)
		return g.inner.Complete(ctx, req)
	}
	g.mu.Lock()
	g.precips++
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	resp, err := g.inner.Complete(ctx, req)
	g.log("precip", nil)
	return resp, err
}

func (g *gatedModel) log(event string, req *hippocam.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, event)
	if req != nil && req.Role == hippocam.CallAgent {
		g.agent = append(g.agent, req)
	}
}

// shut puts up a gate: PRECIP calls made from now on wait until it opens.
func (g *gatedModel) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan struct{})
}

// stepAside lets later PRECIP calls through while those waiting at the gate keep waiting; it
// returns the gate, to open with close.
func (g *gatedModel) stepAside() chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	gate := g.gate
	g.gate = nil
	return gate
}

// open opens the gate.
func (g *gatedModel) open() { close(g.stepAside()) }

// since returns the events logged after the first n.
func (g *gatedModel) since(n int) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.events[n:])
}

func (g *gatedModel) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.events)
}

func (g *gatedModel) agentCalls() []*hippocam.Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.agent)
}

func gatedService(t *testing.T, st hippocam.Store) (*sessions.Service, *gatedModel) {
	t.Helper()
	tok := tokenizer.MustDefault()
	model, err := openai.New(openai.Config{BaseURL: "http://sim.local/v1", Model: sim.ModelID,
		HTTPClient: &http.Client{Transport: sim.New(tok).Transport()}})
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedModel{inner: model, entered: make(chan struct{}, 1)}
	return serviceOver(t, st, g, gateConfig(8000)), g // PRECIP in the step that closes
}

// serviceOver is a session service over st whose engine calls model.
func serviceOver(t *testing.T, st hippocam.Store, model hippocam.Model, cfg engine.Config) *sessions.Service {
	t.Helper()
	e, err := engine.New(cfg, model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sessions.New(sessions.Config{Engine: e, Store: st, JobPoll: 10 * time.Millisecond, JobLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// runJobs runs svc's workers until the test ends, and returns a channel that receives the
// result of every consolidation job they run.
func runJobs(t *testing.T, svc *sessions.Service) <-chan *engine.Result {
	t.Helper()
	jobs := make(chan *engine.Result, 16)
	svc.ObserveJobs(func(res *engine.Result, err error) {
		if err != nil {
			t.Errorf("a job failed: %v", err)
		}
		jobs <- res
	})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.RunJobs(ctx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	return jobs
}

// deadlockGuard bounds a wait that only a bug makes long.
const deadlockGuard = time.Minute

func (c *client) step(t *testing.T, svc *sessions.Service, name, text string) *sessions.Result {
	t.Helper()
	c.history = append(c.history, hippocam.Message{Role: hippocam.RoleUser, Content: text})
	res, err := svc.Continue(context.Background(), c.request(name, false))
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	c.history = append(c.history, res.Answer)
	return res
}

// A step that closes an intent answers first: its consolidation is left in the session with a
// job, committed together. A worker runs the job; running it again changes nothing.
func TestConsolidationJob(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc, g := gatedService(t, st)
	c := &client{}
	c.step(t, svc, "s", "#open Read the exports | both exports are read\n!say reading")
	res := c.step(t, svc, "s", "#close Read the exports\n!say done")
	if g.precips != 0 || !res.Step.Deferred {
		t.Fatalf("the step ran PRECIP %d times before answering (deferred %v)", g.precips, res.Step.Deferred)
	}
	s, _ := st.Session(ctx, "t", "s")
	if n, _ := st.QueuedJobs(ctx); n != 1 || s.Pending.Empty() {
		t.Fatalf("%d jobs queued, pending %+v: the step's work is not recorded", n, s.Pending)
	}
	if err := svc.RunPendingJobs(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ = st.Session(ctx, "t", "s")
	if n, _ := st.QueuedJobs(ctx); n != 0 || !s.Pending.Empty() || s.Consolidations.Intent != 1 || g.precips != 1 {
		t.Fatalf("after the job: %d queued, pending %+v, consolidations %+v, %d PRECIP calls", n, s.Pending, s.Consolidations, g.precips)
	}
	// The same job again (a replica that ran it too, a crash before it was marked done).
	again := s.Clone()
	if err := st.Commit(ctx, again, hippocam.Change{From: s.Version, Jobs: []hippocam.Job{{Kind: hippocam.JobConsolidate}}}); err != nil {
		t.Fatal(err)
	}
	if err := svc.RunPendingJobs(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := st.Session(ctx, "t", "s")
	if after.Version != again.Version || g.precips != 1 || len(after.Context) != len(s.Context) {
		t.Fatalf("a second run changed the session: version %d→%d, %d PRECIP calls", again.Version, after.Version, g.precips)
	}
	if n, _ := st.QueuedJobs(ctx); n != 0 {
		t.Fatalf("%d jobs left", n)
	}
	if got := svc.Stats(); got.JobsDone != 2 || got.WaitsInline+got.WaitsWindow+got.WaitsLag+got.WaitsRunning != 0 {
		t.Fatalf("stats %+v", got)
	}
}

// The lag bound: with no worker, steps answer with the work pending until it has waited MaxLag
// steps; the next one runs it first, counted as a wait for the lag. The job then finds nothing.
func TestLagBound(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc, g := gatedService(t, st)
	c := &client{}
	c.step(t, svc, "s", "#open Read the exports | both exports are read\n!say reading")
	c.step(t, svc, "s", "#close Read the exports\n!say done")
	for i := 1; i <= engine.DefaultMaxLag; i++ {
		res := c.step(t, svc, "s", "!say next")
		if res.Step.RanPending || res.Step.Lag != i || g.precips != 0 {
			t.Fatalf("step %d behind: ran pending %v, lag %d, %d PRECIP calls", i, res.Step.RanPending, res.Step.Lag, g.precips)
		}
	}
	res := c.step(t, svc, "s", "!say at last")
	if !res.Step.RanPending || res.Step.PendingReason != engine.PendingLag || res.Step.Lag != 0 || res.Step.IntentConsolidations != 1 {
		t.Fatalf("ran pending %v (%q), lag %d, %d intent consolidations", res.Step.RanPending, res.Step.PendingReason, res.Step.Lag, res.Step.IntentConsolidations)
	}
	if got := svc.Stats(); got.WaitsLag != 1 || got.WaitsRunning+got.WaitsWindow+got.WaitsInline != 0 || got.PendingSteps != engine.DefaultMaxLag || got.MaxLag != engine.DefaultMaxLag {
		t.Fatalf("stats %+v", got)
	}
	if err := svc.RunPendingJobs(ctx); err != nil { // the job finds nothing left
		t.Fatal(err)
	}
	if s, _ := st.Session(ctx, "t", "s"); s.Consolidations.Intent != 1 || !s.Pending.Empty() || g.precips != 1 {
		t.Fatalf("consolidations %+v, pending %+v, %d PRECIP calls", s.Consolidations, s.Pending, g.precips)
	}
}

// A step that arrives while its session's job is in PRECIP answers and commits before PRECIP
// returns; the job's memory is then carried onto the newer session, and the next step sees it.
func TestStepDoesNotWaitForTheJob(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc, g := gatedService(t, st)
	c := &client{}
	c.step(t, svc, "s", "#open Read the exports | both exports are read\n!say reading")
	c.step(t, svc, "s", "!say the first export holds 12 rows")
	g.shut()
	c.step(t, svc, "s", "#close Read the exports\n!say done")
	jobs := runJobs(t, svc)
	<-g.entered // the job is inside PRECIP, and stays there
	before := g.count()
	next := make(chan *sessions.Result, 1)
	go func() { next <- c.step(t, svc, "s", "!say carrying on") }()
	var res *sessions.Result
	select {
	case res = <-next:
	case <-time.After(deadlockGuard):
		t.Fatal("the step waited for the job's PRECIP call")
	}
	calls := g.since(before)
	if res.Waited || res.Step.RanPending || res.Step.Lag != 1 || !slices.Contains(calls, string(hippocam.CallAgent)) || slices.Contains(calls, "precip") {
		t.Fatalf("waited %v, ran pending %v, lag %d, calls %v", res.Waited, res.Step.RanPending, res.Step.Lag, calls)
	}
	stepped, _ := st.Session(ctx, "t", "s")
	if stepped.Version != res.Session.Version || stepped.Pending.Empty() {
		t.Fatalf("the step is not committed (version %d, the step's %d), or its pending work is gone", stepped.Version, res.Session.Version)
	}
	g.open()
	job := <-jobs
	if job == nil || job.IntentConsolidations != 1 || svc.Stats().JobsRebased != 1 || svc.Stats().JobPartsDropped != 0 {
		t.Fatalf("job %+v, stats %+v", job, svc.Stats())
	}
	s, _ := st.Session(ctx, "t", "s")
	if !s.Pending.Empty() || s.Consolidations.Intent != 1 || s.Version != stepped.Version+1 {
		t.Fatalf("after the job: pending %+v, consolidations %+v, version %d", s.Pending, s.Consolidations, s.Version)
	}
	memory := checkWhole(t, st, s, c.history)
	// The job's ids come after the step's, and its text names the ref it has now.
	if !strings.HasPrefix(memory.Content, hippocam.RefTag(memory.Ref)) || idNumber(memory.ID) <= idNumber(res.Answer.ID) {
		t.Fatalf("memory %s %q after answer %s", memory.ID, firstLine(memory.Content), res.Answer.ID)
	}
	// The next step's request holds the memory.
	after := len(g.agentCalls())
	c.step(t, svc, "s", "!say next")
	if !requestHolds(g.agentCalls()[after:], memory.Content) {
		t.Fatal("the next step's request does not hold the job's memory")
	}
	if got := svc.Stats(); got.WaitsRunning+got.WaitsWindow+got.WaitsLag+got.WaitsInline != 0 {
		t.Fatalf("a step waited: %+v", got)
	}
}

// A step whose context would not fit the window without the pending work waits for the
// job that is doing it: its model calls come after the job's PRECIP call returned.
func TestWindowWaitsForTheJob(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc, g := gatedService(t, st)
	c := &client{}
	c.step(t, svc, "s", "#open Read the exports | both exports are read\n!say reading")
	c.step(t, svc, "s", "Here is the first export:\n"+rows("first", 200)+"!say read")
	g.shut()
	c.step(t, svc, "s", "#close Read the exports\n!say done")
	jobs := runJobs(t, svc)
	<-g.entered
	big := "Here is the second export:\n" + rows("second", 200) + "!say read too"
	before := g.count()
	next := make(chan *sessions.Result, 1)
	go func() { next <- c.step(t, svc, "s", big) }()
	for deadline := time.Now().Add(deadlockGuard); svc.Stats().WaitsRunning == 0; time.Sleep(time.Millisecond) {
		select {
		case res := <-next:
			t.Fatalf("the step answered without waiting for the job (ran pending %v, calls %v)", res.Step.RanPending, g.since(before))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the step did not wait for the job")
		}
	}
	g.open()
	res := <-next
	events := g.since(before)
	if !res.Waited || len(events) == 0 || events[0] != "precip" || !slices.Contains(events, string(hippocam.CallAgent)) {
		t.Fatalf("waited %v; calls %v: the job's PRECIP should come first", res.Waited, events)
	}
	if job := <-jobs; job == nil || job.IntentConsolidations != 1 {
		t.Fatalf("job %+v", job)
	}
	s, _ := st.Session(ctx, "t", "s")
	checkWhole(t, st, s, c.history)
	if s.Consolidations.Intent != 1 || res.Step.RanPending || svc.Stats().WaitsRunning != 1 || svc.Stats().WaitsWindow != 0 {
		t.Fatalf("consolidations %+v, ran pending %v, stats %+v", s.Consolidations, res.Step.RanPending, svc.Stats())
	}
}

// A job whose work a step did meanwhile (here on another replica, which cannot see the job run
// and allows no lag) commits none of it a second time: its memory is dropped, its usage kept,
// and the session stays whole.
func TestJobWorkDoneMeanwhile(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc, g := gatedService(t, st)
	cfg := engine.ForWindow(8000)
	cfg.MaxLag = 0
	other := serviceOver(t, st, g, cfg)
	c := &client{}
	c.step(t, svc, "s", "#open Read the exports | both exports are read\n!say reading")
	c.step(t, svc, "s", "!say the first export holds 12 rows")
	g.shut()
	c.step(t, svc, "s", "#close Read the exports\n!say done")
	jobs := runJobs(t, svc)
	<-g.entered
	held := g.stepAside() // the job's PRECIP call keeps waiting; the other replica's goes through
	res := c.step(t, other, "s", "!say carrying on")
	if !res.Step.RanPending || res.Step.PendingReason != engine.PendingLag || res.Step.IntentConsolidations != 1 {
		t.Fatalf("the other replica's step: ran pending %v (%q), %d intent consolidations", res.Step.RanPending, res.Step.PendingReason, res.Step.IntentConsolidations)
	}
	mid, _ := st.Session(ctx, "t", "s")
	close(held)
	job := <-jobs
	if job == nil || job.IntentConsolidations != 0 || len(job.Change.Ops) != 0 || svc.Stats().JobPartsDropped != 1 {
		t.Fatalf("job %+v, stats %+v", job, svc.Stats())
	}
	s, _ := st.Session(ctx, "t", "s")
	if s.Consolidations.Intent != 1 || !s.Pending.Empty() || len(s.Context) != len(mid.Context) {
		t.Fatalf("consolidations %+v, pending %+v, %d context messages (%d before the job)", s.Consolidations, s.Pending, len(s.Context), len(mid.Context))
	}
	checkWhole(t, st, s, c.history)
	if s.Usage[hippocam.CallPrecip].Calls != 2 {
		t.Fatalf("PRECIP usage %+v: the job's call was paid for and is kept", s.Usage[hippocam.CallPrecip])
	}
}

// checkWhole checks that s holds history exactly (every message once, in order, through the
// archive), that its ids are unique and every memory names its own ref, and returns its last
// intent memory.
func checkWhole(t *testing.T, st hippocam.Store, s *hippocam.Session, history []hippocam.Message) hippocam.Message {
	t.Helper()
	ctx := context.Background()
	arch := hippocam.SessionArchive(st, s.Tenant, s.ID)
	got, err := sessions.Transcript(ctx, arch, s.Context)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(history) {
		t.Fatalf("the session holds %d messages, the client sent and got %d", len(got), len(history))
	}
	for i := range got {
		if got[i].Role != history[i].Role || got[i].Content != history[i].Content {
			t.Fatalf("message %d: %s %q, want %s %q", i, got[i].Role, got[i].Content, history[i].Role, history[i].Content)
		}
	}
	all, err := hippocam.Expand(ctx, arch, s.Context)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range all {
		if seen[m.ID] {
			t.Fatalf("id %s twice", m.ID)
		}
		seen[m.ID] = true
		if idNumber(m.ID) > s.Seq {
			t.Fatalf("id %s beyond the session's sequence %d", m.ID, s.Seq)
		}
	}
	var memory hippocam.Message
	var walk func([]hippocam.Message)
	walk = func(layer []hippocam.Message) {
		for _, m := range layer {
			if !m.Consolidated() || m.Kind.Hidden() {
				continue
			}
			if m.Kind == hippocam.KindIntentMemory {
				memory = m
			}
			if !strings.Contains(m.Content, hippocam.RefTag(m.Ref)) {
				t.Fatalf("memory %s does not name its ref %s: %q", m.ID, m.Ref, firstLine(m.Content))
			}
			kids, err := arch.Children(ctx, m.Ref)
			if err != nil {
				t.Fatal(err)
			}
			walk(kids)
		}
	}
	walk(s.Context)
	return memory
}

func idNumber(id string) int64 {
	n, _ := strconv.ParseInt(strings.TrimLeft(id, "abcdefghijklmnopqrstuvwxyz"), 10, 64)
	return n
}

func requestHolds(reqs []*hippocam.Request, text string) bool {
	for _, r := range reqs {
		for _, m := range r.Messages {
			if m.Content == text {
				return true
			}
		}
	}
	return false
}

func rows(tag string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "row %03d | %s | item-%d | qty %d\n", i, tag, 1000+i*7, i%9+1)
	}
	return b.String()
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
