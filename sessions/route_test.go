package sessions_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/sessions"
)

// routerProbe counts the router's and the reasoning_bank judge's calls of the learning model. The
// first fail router calls fail with a model error; while gate is open (not closed), router calls
// wait for it.
type routerProbe struct {
	inner  hippocam.Model
	fail   int
	gate   chan struct{}
	mu     sync.Mutex
	router int
	judge  int
}

func (m *routerProbe) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	switch req.Role {
	case hippocam.CallRouter:
		m.mu.Lock()
		m.router++
		n := m.router
		m.mu.Unlock()
		if m.gate != nil {
			select {
			case <-m.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if n <= m.fail {
			return nil, hippocam.Errorf(hippocam.EUNAVAILABLE, "the router's upstream is down")
		}
	case hippocam.CallRBJudge:
		m.mu.Lock()
		m.judge++
		m.mu.Unlock()
	}
	return m.inner.Complete(ctx, req)
}

func (m *routerProbe) calls() (router, judge int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.router, m.judge
}

// mainRecorder keeps the messages of the engine's main-model calls.
type mainRecorder struct {
	inner hippocam.Model
	mu    sync.Mutex
	reqs  [][]hippocam.Message
}

func (m *mainRecorder) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role == hippocam.CallAgent {
		m.mu.Lock()
		m.reqs = append(m.reqs, append([]hippocam.Message(nil), req.Messages...))
		m.mu.Unlock()
	}
	return m.inner.Complete(ctx, req)
}

// take returns the main calls' messages recorded since the last take.
func (m *mainRecorder) take() [][]hippocam.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.reqs
	m.reqs = nil
	return out
}

// advisories counts the advisory messages in msgs: in a context by kind, in a model request
// (which carries no kinds) by the advisory's header.
func advisories(msgs []hippocam.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Kind == hippocam.KindAdvisory || strings.HasPrefix(m.Content, hippocam.AdvisoryHeader) {
			n++
		}
	}
	return n
}

// next continues a task's session: its history so far, then text.
func next(t *testing.T, svc *sessions.Service, id string, history []hippocam.Message, text string) (*sessions.Result, []hippocam.Message) {
	t.Helper()
	history = append(history, hippocam.Message{Role: hippocam.RoleUser, Content: text})
	res, err := svc.Continue(context.Background(), &sessions.Request{Tenant: "acme", Name: id, Received: time.Now(),
		Conversation: &hippocam.Conversation{Format: hippocam.FormatChat, Messages: history}})
	if err != nil {
		t.Fatal(err)
	}
	return res, append(history, res.Answer)
}

// A task that the pinned cluster, the global cluster or a lexical match of a cluster's scope
// settles makes no router call; the router runs only for the task nothing settles.
func TestRouteKnownMakesNoRouterCall(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, mode, pin string
		decision        string
	}{
		{"pinned", sessions.LearnRouted, "Weekly sales report", "pinned"},
		{"global", sessions.LearnGlobal, "", "global"},
		{"match", sessions.LearnRouted, "", "match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := inmem.New()
			m := &routerProbe{}
			svc := learningServiceWith(t, st, learnSetup{mode: tc.mode, systems: []string{"icl"},
				wrap: func(inner hippocam.Model) hippocam.Model { m.inner = inner; return m }})
			pin := func(r *sessions.Request) { r.Cluster = tc.pin }
			routerCalls := 0
			if tc.decision == "match" { // a cluster for the scope to match, made by the router
				res, err := task(t, svc, "acme", "t0", salesTask, nil)
				if err != nil || res.Learning.Decision != "create" {
					t.Fatalf("the first task: %+v (%v)", res.Learning, err)
				}
				routerCalls = 1
			} else if _, err := task(t, svc, "acme", "t0", salesTask, pin); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.EndTask(ctx, "acme", "t0", sessions.Outcome{Feedback: "feedback: status_filter = all wrong"}, true); err != nil {
				t.Fatal(err)
			}
			res, err := task(t, svc, "acme", "t1", salesTask, pin)
			if err != nil {
				t.Fatal(err)
			}
			if l := res.Learning; l.Decision != tc.decision || l.Cluster == "" || !strings.Contains(l.Advisory, "status_filter") {
				t.Fatalf("learning %+v: want %s, with the first task's advisory", l, tc.decision)
			}
			if n, _ := m.calls(); n != routerCalls {
				t.Fatalf("%d router calls, want %d", n, routerCalls)
			}
		})
	}
}

// A task only the router can settle, with a router slower than RouteWait: the first answer goes
// without an advisory and records the decision as pending; the next request applies the
// router's decision and carries its advisory, after its own message; later requests carry it
// once, and the router is not asked again. The router is held by a gate, not by time.
func TestRouteSlowRouterAppliesAtNextRequest(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	m := &routerProbe{gate: make(chan struct{})}
	rec := &mainRecorder{}
	svc := learningServiceWith(t, st, learnSetup{mode: sessions.LearnRouted, systems: []string{"icl"},
		wrap:   func(inner hippocam.Model) hippocam.Model { m.inner = inner; return m },
		agent:  func(inner hippocam.Model) hippocam.Model { rec.inner = inner; return rec },
		config: func(c *sessions.Config) { c.RouteWait = time.Nanosecond }})
	// A cluster that has learned something, and its twin: the same scope, so that no lexical
	// match settles the next task and the router must (it reuses the older of the two).
	pinned, err := task(t, svc, "acme", "t0", salesTask, func(r *sessions.Request) { r.Cluster = "Sales report" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.EndTask(ctx, "acme", "t0", sessions.Outcome{Feedback: "feedback: status_filter = all wrong"}, true); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateCluster(ctx, &hippocam.Cluster{Tenant: "acme", ID: "c-twin", System: "icl", Description: "Sales report"}); err != nil {
		t.Fatal(err)
	}
	rec.take()

	// First request: the router is held.
	first, history := next(t, svc, "t1", nil, salesTask)
	if l := first.Learning; l == nil || l.Decision != hippocam.DecisionPending || l.Cluster != "" || l.Advisory != "" {
		t.Fatalf("first answer's learning %+v: want pending, no advisory", first.Learning)
	}
	if n := advisories(first.Session.Context); n != 0 {
		t.Fatalf("%d advisories in the context after the first answer", n)
	}
	for _, r := range rec.take() {
		if advisories(r) != 0 {
			t.Fatal("the first answer's request carried an advisory")
		}
	}
	close(m.gate)
	if !sessions.WaitRouting(svc, "acme", "t1") {
		t.Fatal("no routing kept for the next request")
	}

	// Second request: the decision and the advisory.
	second, history := next(t, svc, "t1", history, "!say more")
	l := second.Learning
	if l == nil || l.Decision != "reuse" || l.Cluster != pinned.Learning.Cluster || !strings.Contains(l.Advisory, "status_filter") {
		t.Fatalf("second request's learning %+v: want the router's reuse of %s with its advisory", l, pinned.Learning.Cluster)
	}
	if rl := second.Session.Transcript.Learning; rl.Decision != "reuse" || rl.Cluster != l.Cluster || rl.Advisory != l.Advisory {
		t.Fatalf("the session records %+v", rl)
	}
	c := second.Session.Context
	if n := len(c); advisories(c) != 1 || c[n-3].Content != "!say more" || c[n-2].Kind != hippocam.KindAdvisory || !strings.Contains(c[n-2].Content, l.Advisory) {
		t.Fatalf("context %v: want one advisory, after the second request's message", kinds(c))
	}
	reqs := rec.take()
	if len(reqs) == 0 {
		t.Fatal("no main call recorded")
	}
	for _, r := range reqs {
		if advisories(r) != 1 {
			t.Fatalf("the second request's main call carried %d advisories, want 1", advisories(r))
		}
	}

	// Third request: the advisory is in the context once; nothing is routed again.
	third, _ := next(t, svc, "t1", history, "!say done")
	if third.Learning != nil || advisories(third.Session.Context) != 1 {
		t.Fatalf("third request: learning %+v, %d advisories", third.Learning, advisories(third.Session.Context))
	}
	for _, r := range rec.take() {
		if advisories(r) != 1 {
			t.Fatalf("the third request's main call carried %d advisories, want 1", advisories(r))
		}
	}
	if n, _ := m.calls(); n != 1 {
		t.Fatalf("%d router calls, want 1", n)
	}
}

func kinds(ms []hippocam.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.Role)+"/"+string(m.Kind))
	}
	return out
}

// A router fault is not a decision: the task stays pending and is routed again at its next
// request, or at its outcome when it ends first, so that its outcome's update reaches a cluster,
// exactly once. Routings that keep failing stop at a bound.
func TestRouteFaultRoutedAgain(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T, fail int) (*sessions.Service, hippocam.Store, *routerProbe) {
		st := inmem.New()
		m := &routerProbe{fail: fail}
		svc := learningServiceWith(t, st, learnSetup{mode: sessions.LearnRouted, systems: []string{"reasoning_bank"},
			wrap: func(inner hippocam.Model) hippocam.Model { m.inner = inner; return m },
			config: func(c *sessions.Config) {
				c.RouteWait = -1 // the first answer waits for the router: the fault is seen at once
				c.JobPoll, c.JobBackoff = time.Millisecond, time.Microsecond
			}})
		return svc, st, m
	}
	faulted := func(t *testing.T, res *sessions.Result) {
		t.Helper()
		if l := res.Learning; l == nil || l.Decision != hippocam.DecisionPending || l.RouteFailures != 1 || !strings.HasPrefix(l.Reason, "routing failed") {
			t.Fatalf("learning after a router fault: %+v", res.Learning)
		}
	}
	t.Run("next-request", func(t *testing.T) {
		svc, st, m := setup(t, 1)
		first, history := next(t, svc, "f1", nil, salesTask)
		faulted(t, first)
		second, _ := next(t, svc, "f1", history, "!say more")
		l := second.Session.Transcript.Learning
		if l.Decision != "create" || l.Cluster == "" || second.Learning == nil {
			t.Fatalf("learning after the next request: %+v", l)
		}
		if _, err := svc.EndTask(ctx, "acme", "f1", sessions.Outcome{Feedback: "feedback: status_filter = all wrong"}, true); err != nil {
			t.Fatal(err)
		}
		if c, err := st.Cluster(ctx, "acme", l.Cluster); err != nil || !c.HasApplied("f1") {
			t.Fatalf("the cluster after the outcome: %+v (%v)", c, err)
		}
		if r, _ := m.calls(); r != 2 {
			t.Fatalf("%d router calls, want 2", r)
		}
	})
	t.Run("outcome", func(t *testing.T) {
		svc, st, m := setup(t, 1)
		first, _ := next(t, svc, "f1", nil, salesTask)
		faulted(t, first)
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { svc.RunJobs(wctx); close(done) }() // a worker ready to take the job at once
		defer func() { stop(); <-done }()
		ended, err := svc.EndTask(ctx, "acme", "f1", sessions.Outcome{Feedback: "feedback: status_filter = all wrong"}, true)
		if err != nil {
			t.Fatal(err)
		}
		l := ended.Transcript.Learning
		if l.Decision != "create" || l.Cluster == "" || !l.Ended {
			t.Fatalf("the ended task's learning: %+v", l)
		}
		if c, err := st.Cluster(ctx, "acme", l.Cluster); err != nil || !c.HasApplied("f1") || c.Trajectories != 1 {
			t.Fatalf("the cluster after the outcome: %+v (%v)", c, err)
		}
		waitJobs(t, st)
		if r, j := m.calls(); r != 2 || j != 1 {
			t.Fatalf("%d router calls and %d judge calls, want 2 and 1", r, j)
		}
		if s, _ := st.Session(ctx, "acme", "f1"); s.Transcript.Learning.Cluster != l.Cluster {
			t.Fatalf("the stored session says %+v", s.Transcript.Learning)
		}
	})
	t.Run("outcome-bound", func(t *testing.T) {
		svc, st, m := setup(t, 1000)
		first, _ := next(t, svc, "f1", nil, salesTask)
		faulted(t, first)
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { svc.RunJobs(wctx); close(done) }()
		defer func() { stop(); <-done }()
		if _, err := svc.EndTask(ctx, "acme", "f1", sessions.Outcome{Feedback: "x"}, true); err == nil {
			t.Fatal("the outcome's routing failed, and EndTask said nothing")
		}
		waitJobs(t, st) // the job tries again, and gives the task up at the bound
		s, _ := st.Session(ctx, "acme", "f1")
		if l := s.Transcript.Learning; l.Decision != "stateless" || l.RouteFailures != 3 || !l.Ended {
			t.Fatalf("learning after the outcome's routings kept failing: %+v", l)
		}
		if r, _ := m.calls(); r != 3 {
			t.Fatalf("%d router calls, want 3", r)
		}
	})
	t.Run("bound", func(t *testing.T) {
		svc, _, m := setup(t, 1000)
		res, history := next(t, svc, "f1", nil, salesTask)
		for i := 2; i <= 4; i++ {
			res, history = next(t, svc, "f1", history, "!say more")
		}
		if l := res.Session.Transcript.Learning; l.Decision != "stateless" || l.RouteFailures != 3 {
			t.Fatalf("learning after routings kept failing: %+v", l)
		}
		if r, _ := m.calls(); r != 3 {
			t.Fatalf("%d router calls, want 3", r)
		}
		ended, err := svc.EndTask(ctx, "acme", "f1", sessions.Outcome{Feedback: "x"}, true)
		if err != nil || ended.Transcript.Learning.Cluster != "" {
			t.Fatalf("outcome of a stateless task: %+v (%v)", ended, err)
		}
	})
}

// waitJobs waits until the store's job queue is empty.
func waitJobs(t *testing.T, st hippocam.Store) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := st.QueuedJobs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still queued", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A task that ends while its routing is still owed, the router having decided after the first
// answer: the outcome takes that decision (no second router call), records it on the session and
// updates the cluster it names.
func TestRouteSlowRouterTakenAtOutcome(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	m := &routerProbe{gate: make(chan struct{})}
	svc := learningServiceWith(t, st, learnSetup{mode: sessions.LearnRouted, systems: []string{"icl"},
		wrap:   func(inner hippocam.Model) hippocam.Model { m.inner = inner; return m },
		config: func(c *sessions.Config) { c.RouteWait = time.Nanosecond }})
	first, _ := next(t, svc, "s1", nil, salesTask)
	if first.Learning.Decision != hippocam.DecisionPending {
		t.Fatalf("first answer's learning %+v: want pending", first.Learning)
	}
	close(m.gate)
	if !sessions.WaitRouting(svc, "acme", "s1") {
		t.Fatal("no routing kept")
	}
	ended, err := svc.EndTask(ctx, "acme", "s1", sessions.Outcome{Feedback: "feedback: status_filter = all wrong"}, true)
	if err != nil {
		t.Fatal(err)
	}
	l := ended.Transcript.Learning
	if l.Decision != "create" || l.Cluster == "" || l.Advisory != "" {
		t.Fatalf("the ended task's learning %+v: want the router's decision, no advisory (none reached the task)", l)
	}
	if c, err := st.Cluster(ctx, "acme", l.Cluster); err != nil || !c.HasApplied("s1") {
		t.Fatalf("the cluster after the outcome: %+v (%v)", c, err)
	}
	if r, _ := m.calls(); r != 1 {
		t.Fatalf("%d router calls, want 1: the outcome takes the routing already made", r)
	}
}
