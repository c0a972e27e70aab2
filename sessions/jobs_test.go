package sessions_test

import (
	"context"
	"net/http"
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

// gatedModel holds every PRECIP call until the test opens the gate.
type gatedModel struct {
	inner   hippocam.Model
	mu      sync.Mutex
	gate    chan struct{} // nil: no gate
	entered chan struct{}
	precips int
}

func (g *gatedModel) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role == hippocam.CallPrecip {
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
	}
	return g.inner.Complete(ctx, req)
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
	e, err := engine.New(gateConfig(8000), g, tok, nil) // PRECIP in the step that closes
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sessions.New(sessions.Config{Engine: e, Store: st, JobPoll: 10 * time.Millisecond, JobLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return svc, g
}

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
	if got := svc.Stats(); got.JobsDone != 2 || got.WaitsInline != 0 {
		t.Fatalf("stats %+v", got)
	}
}

// The next step waits for its session's job only while it runs; when no worker has taken the
// job yet, the step does the work itself, first. Both are counted.
func TestNextStepAndPendingJob(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc, g := gatedService(t, st)
	c := &client{}
	c.step(t, svc, "s", "#open Read the exports | both exports are read\n!say reading")
	c.step(t, svc, "s", "#close Read the exports\n!say done")
	// No worker: the next step runs the pending work first.
	res := c.step(t, svc, "s", "!say next")
	if !res.Step.RanPending || res.Step.IntentConsolidations != 1 || svc.Stats().WaitsInline != 1 {
		t.Fatalf("ran pending %v, %d intent consolidations, stats %+v", res.Step.RanPending, res.Step.IntentConsolidations, svc.Stats())
	}
	if err := svc.RunPendingJobs(ctx); err != nil { // the job finds nothing left
		t.Fatal(err)
	}
	// A worker that is running the job holds the session: the next step waits for it.
	c.step(t, svc, "s", "#open Send the report | the report is sent\n!say sending")
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
	c.step(t, svc, "s", "#close Send the report\n!say sent")
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { svc.RunJobs(wctx); close(done) }()
	<-g.entered // the job is inside PRECIP
	next := make(chan *sessions.Result)
	go func() { next <- c.step(t, svc, "s", "!say after") }()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-next:
		t.Fatal("the next step did not wait for the running job")
	default:
	}
	close(g.gate)
	res = <-next
	stop()
	<-done
	if res.Step.RanPending || svc.Stats().WaitsRunning != 1 {
		t.Fatalf("ran pending %v, stats %+v: the step should have waited for the job", res.Step.RanPending, svc.Stats())
	}
	s, _ := st.Session(ctx, "t", "s")
	if s.Consolidations.Intent != 2 || !s.Pending.Empty() {
		t.Fatalf("consolidations %+v, pending %+v", s.Consolidations, s.Pending)
	}
}
