package sessions_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/lessons"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sessions"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// learningService is a service that learns (mode) over every memory system, the simulated model
// upstream.
func learningService(t *testing.T, mode string, st hippocam.Store) *sessions.Service {
	t.Helper()
	return learningServiceWith(t, st, learnSetup{mode: mode})
}

// learnSetup varies learningServiceWith: the systems offered (default all), wrappers of the
// learning components' model and of the engine's (default none), and the rest of the service's
// configuration.
type learnSetup struct {
	mode    string
	systems []string
	wrap    func(hippocam.Model) hippocam.Model
	agent   func(hippocam.Model) hippocam.Model // wraps the engine's model
	config  func(*sessions.Config)
}

func learningServiceWith(t *testing.T, st hippocam.Store, o learnSetup) *sessions.Service {
	t.Helper()
	tok := tokenizer.MustDefault()
	model, err := openai.New(openai.Config{BaseURL: "http://sim.local/v1", Model: sim.ModelID,
		HTTPClient: &http.Client{Transport: sim.New(tok).Transport()}})
	if err != nil {
		t.Fatal(err)
	}
	var main hippocam.Model = model
	if o.agent != nil {
		main = o.agent(model)
	}
	e, err := engine.New(engine.ForWindow(8000), main, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := &learn.Env{Model: model, Tok: tok}
	if o.wrap != nil {
		env.Model = o.wrap(model)
	}
	if o.systems == nil {
		o.systems = library.Names()
	}
	systems, err := library.Library(env, o.systems)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sessions.Config{Engine: e, Store: st, Learn: o.mode, Systems: systems, LearnEnv: env, JobPoll: 10 * time.Millisecond}
	if o.config != nil {
		o.config(&cfg)
	}
	svc, err := sessions.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// task starts a task: one user message in a session of its own.
func task(t *testing.T, svc *sessions.Service, tenant, id, text string, edit func(*sessions.Request)) (*sessions.Result, error) {
	t.Helper()
	req := &sessions.Request{Tenant: tenant, Name: id, Received: time.Now(),
		Conversation: &hippocam.Conversation{Format: hippocam.FormatChat, Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: text}}}}
	if edit != nil {
		edit(req)
	}
	return svc.Continue(context.Background(), req)
}

const salesTask = "Sales report\ntags: revenue weekly\ndecide status_filter: shipped | all | pending"

// A task start is routed and gets the cluster's advisory; its outcome ends it and updates the
// cluster; the next task of its kind reuses the cluster and is advised by what the first one
// learned. A second outcome, and a request to the ended session, are conflicts that change
// nothing.
func TestLearningTaskCycle(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc := learningService(t, sessions.LearnRouted, st)
	res, err := task(t, svc, "acme", "t1", salesTask, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := res.Learning
	if l == nil || l.Cluster == "" || l.Decision != "create" || l.Advisory != "" {
		t.Fatalf("first task's learning %+v: want a new cluster and no advisory yet", l)
	}
	chosen := strings.TrimPrefix(res.Answer.Content, "status_filter = ")
	if _, err := svc.EndTask(ctx, "acme", "t1", sessions.Outcome{Feedback: "feedback: status_filter = " + chosen + " wrong"}, true); err != nil {
		t.Fatal(err)
	}
	c, err := st.Cluster(ctx, "acme", l.Cluster)
	if err != nil || c.Trajectories != 1 || !c.HasApplied("t1") {
		t.Fatalf("cluster after the outcome: %+v (%v)", c, err)
	}
	if _, err := svc.EndTask(ctx, "acme", "t1", sessions.Outcome{Feedback: "again"}, true); hippocam.ErrorCode(err) != hippocam.ECONFLICT {
		t.Fatalf("second outcome: %v, want a conflict", err)
	}
	if _, err := svc.Continue(ctx, &sessions.Request{Tenant: "acme", Name: "t1", Received: time.Now(), Conversation: &hippocam.Conversation{
		Format: hippocam.FormatChat, Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: salesTask}, res.Answer, {Role: hippocam.RoleUser, Content: "!say more"}}}}); hippocam.ErrorCode(err) != hippocam.ECONFLICT {
		t.Fatalf("a request to the ended task: %v, want a conflict", err)
	}
	if c2, _ := st.Cluster(ctx, "acme", l.Cluster); c2.Version != c.Version {
		t.Fatal("a refused outcome changed the cluster")
	}
	res2, err := task(t, svc, "acme", "t2", salesTask, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Learning.Cluster != l.Cluster || res2.Learning.Decision != "match" || !strings.Contains(res2.Learning.Advisory, chosen) {
		t.Fatalf("second task's learning %+v: want the first cluster (the task names its scope: a lexical match), its advisory naming %q", res2.Learning, chosen)
	}
	if strings.Contains(res2.Answer.Content, "= "+chosen) {
		t.Fatalf("the second task chose %q again although the first was told it was wrong", res2.Answer.Content)
	}
	s, _ := st.Session(ctx, "acme", "t2")
	if s.Transcript.Learning == nil || s.Transcript.Learning.Cluster != l.Cluster || s.Context[0].Kind != hippocam.KindAdvisory {
		t.Fatalf("the routing decision and advisory are not recorded on the session: %+v", s.Transcript.Learning)
	}
	// Opting out: no routing, no advisory.
	res3, err := task(t, svc, "acme", "t3", salesTask, func(r *sessions.Request) { r.LearnOff = true })
	if err != nil || res3.Learning != nil {
		t.Fatalf("Hippocam-Learn: off still routed: %+v (%v)", res3.Learning, err)
	}
	// Deleting a session removes it from its cluster.
	if err := svc.Delete(ctx, "acme", "t1"); err != nil {
		t.Fatal(err)
	}
	if c, _ := st.Cluster(ctx, "acme", l.Cluster); c.HasApplied("t1") {
		t.Fatal("the deleted session still feeds its cluster")
	}
}

// Nothing of one tenant's clusters reaches another: pinning another tenant's cluster id makes a
// cluster of one's own; its advisory is empty.
func TestLearningTenantIsolation(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc := learningService(t, sessions.LearnRouted, st)
	res, err := task(t, svc, "acme", "a1", salesTask, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.EndTask(ctx, "acme", "a1", sessions.Outcome{Feedback: "feedback: status_filter = all wrong"}, true); err != nil {
		t.Fatal(err)
	}
	foreign := res.Learning.Cluster
	res2, err := task(t, svc, "other", "b1", salesTask, func(r *sessions.Request) { r.Cluster = foreign })
	if err != nil {
		t.Fatal(err)
	}
	if res2.Learning.Advisory != "" {
		t.Fatalf("tenant other got an advisory from acme's cluster: %q", res2.Learning.Advisory)
	}
	mine, _ := st.Clusters(ctx, "other")
	theirs, _ := st.Clusters(ctx, "acme")
	if len(mine) != 1 || len(theirs) != 1 || mine[0].Trajectories != 0 || theirs[0].Trajectories != 1 {
		t.Fatalf("clusters: other %+v, acme %+v", mine, theirs)
	}
	if _, err := svc.EndTask(ctx, "other", "a1", sessions.Outcome{Feedback: "x"}, true); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Fatalf("an outcome for another tenant's session: %v, want not found", err)
	}
}

// Eight tasks of one kind run at once and end at once on one cluster: every update lands.
func TestLearningConcurrentOutcomes(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc := learningService(t, sessions.LearnRouted, st)
	first, err := task(t, svc, "acme", "c0", salesTask, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 1; i <= 8; i++ {
		wg.Go(func() {
			id := fmt.Sprintf("c%d", i)
			if _, err := task(t, svc, "acme", id, salesTask, func(r *sessions.Request) { r.Cluster = first.Learning.Cluster }); err != nil {
				errs <- err
				return
			}
			if _, err := svc.EndTask(ctx, "acme", id, sessions.Outcome{Feedback: "feedback: status_filter = all wrong"}, false); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { svc.RunJobs(wctx); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, _ := st.Cluster(ctx, "acme", first.Learning.Cluster)
		if c.Trajectories == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 8 updates landed", c.Trajectories)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-done
	if n, _ := st.QueuedJobs(ctx); n != 0 {
		t.Fatalf("%d jobs left", n)
	}
}

// Bad outcomes change nothing.
func TestLearningBadOutcome(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc := learningService(t, sessions.LearnGlobal, st)
	if _, err := task(t, svc, "acme", "g1", salesTask, nil); err != nil {
		t.Fatal(err)
	}
	for _, o := range []sessions.Outcome{{}, {Feedback: "  "}, {Feedback: strings.Repeat("x", sessions.MaxFeedbackBytes+1)}, {Feedback: "ok", Attempts: -1}, {Feedback: "ok", Attempts: sessions.MaxAttempts + 1}, {Feedback: "ok", Attempts: 1_000_000_000_000}} {
		if _, err := svc.EndTask(ctx, "acme", "g1", o, true); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Fatalf("outcome %.40q: %v, want invalid", o.Feedback, err)
		}
	}
	if _, err := svc.EndTask(ctx, "acme", "nope", sessions.Outcome{Feedback: "x"}, true); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Fatalf("unknown session: %v", err)
	}
	s, _ := st.Session(ctx, "acme", "g1")
	if s.Transcript.Learning.Ended || s.Transcript.Learning.Decision != "global" {
		t.Fatalf("learning %+v", s.Transcript.Learning)
	}
}

// Lessons learn from all the attempts of a task key at once: an outcome that says there are N
// attempts waits for the rest, and POST /api/tasks/{key}/learn (LearnTask) learns from those
// that came.
func TestLearningLessonsWaitForAttempts(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc := learningServiceWith(t, st, learnSetup{mode: sessions.LearnGlobal, systems: []string{"lessons"}})
	lessonsSys := lessons.New(nil)
	entries := func() int {
		c, err := st.Cluster(ctx, "acme", "global")
		if err != nil {
			t.Fatal(err)
		}
		return lessonsSys.Entries(c.State)
	}
	end := func(id, verdict string, attempts int) {
		t.Helper()
		if _, err := task(t, svc, "acme", id, salesTask, func(r *sessions.Request) { r.TaskKey = "sales-1" }); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.EndTask(ctx, "acme", id, sessions.Outcome{Feedback: "feedback: status_filter = " + verdict, Attempts: attempts}, true); err != nil {
			t.Fatal(err)
		}
	}
	end("a1", "shipped right", 2)
	if n := entries(); n != 0 {
		t.Fatalf("%d lessons after the first of two attempts: it must wait for the second", n)
	}
	end("a2", "all wrong", 2)
	if n := entries(); n == 0 || svc.Stats().UpdateEventCount(lessons.Name, "added") != int64(n) {
		t.Fatalf("%d lessons after both attempts, %d counted as added", n, svc.Stats().UpdateEventCount(lessons.Name, "added"))
	}
	applied := func(id string) bool {
		c, _ := st.Cluster(ctx, "acme", "global")
		ls, err := lessons.ParseState(c.State)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(ls.Applied, id)
	}
	end("b1", "pending wrong", 3) // one of three, then the client asks to learn now
	if applied("b1") {
		t.Fatal("learned from one of three attempts")
	}
	if n, err := svc.LearnTask(ctx, "acme", "sales-1"); err != nil || n != 1 {
		t.Fatalf("LearnTask: %d clusters, %v", n, err)
	}
	if !applied("b1") {
		t.Fatal("LearnTask did not learn from the waiting attempt")
	}
	if n, err := svc.LearnTask(ctx, "acme", "sales-1"); err != nil || n != 0 {
		t.Fatalf("LearnTask again: %d clusters, %v: nothing was waiting", n, err)
	}
}

// refusingModel answers every call of one role with a 400, and passes the rest on.
type refusingModel struct {
	inner hippocam.Model
	role  hippocam.CallRole
}

func (m refusingModel) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role == m.role {
		return nil, hippocam.Errorf(hippocam.EINVALID, "refused")
	}
	return m.inner.Complete(ctx, req)
}

// A model fault during a cluster update: the job retries, then is left failed in the queue,
// counted; the cluster is as it was, never half-applied.
func TestLearningUpdateFaultLeftFailed(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc := learningServiceWith(t, st, learnSetup{mode: sessions.LearnGlobal, systems: []string{"reasoning_bank"},
		wrap: func(m hippocam.Model) hippocam.Model { return refusingModel{m, hippocam.CallRBJudge} },
		config: func(c *sessions.Config) {
			c.JobPoll, c.JobBackoff, c.JobLease = time.Millisecond, time.Microsecond, time.Second
		}})
	if _, err := task(t, svc, "acme", "f1", salesTask, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.EndTask(ctx, "acme", "f1", sessions.Outcome{Feedback: "feedback: status_filter = all wrong"}, false); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { svc.RunJobs(wctx); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for svc.Stats().JobsLeftFailed == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the failing job was never left failed: %+v", svc.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	<-done
	if n, _ := st.QueuedJobs(ctx); n != 1 {
		t.Fatalf("%d jobs queued: the failed job must stay visible", n)
	}
	c, _ := st.Cluster(ctx, "acme", "global")
	if c.Trajectories != 0 || c.Version != 0 {
		t.Fatalf("the cluster changed: %+v", c)
	}
}

// Two replicas over one Postgres: tasks of one family start and end on either, each replica's
// workers take whichever update jobs the shared queue holds, and every update lands once.
func TestLearningReplicasPostgres(t *testing.T) {
	dsn := postgresSchema(t)
	ctx := context.Background()
	stores := [2]hippocam.Store{openPostgres(t, dsn), openPostgres(t, dsn)}
	svcs := [2]*sessions.Service{learningService(t, sessions.LearnRouted, stores[0]), learningService(t, sessions.LearnRouted, stores[1])}
	first, err := task(t, svcs[0], "acme", "p0", salesTask, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 1; i <= 8; i++ {
		wg.Go(func() {
			svc := svcs[i%2]
			id := fmt.Sprintf("p%d", i)
			if _, err := task(t, svc, "acme", id, salesTask, func(r *sessions.Request) { r.Cluster = first.Learning.Cluster }); err != nil {
				t.Error(err)
				return
			}
			if _, err := svc.EndTask(ctx, "acme", id, sessions.Outcome{Feedback: "feedback: status_filter = all wrong"}, false); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	wctx, stop := context.WithCancel(ctx)
	var workers sync.WaitGroup
	for _, svc := range svcs {
		workers.Go(func() { svc.RunJobs(wctx) })
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := stores[0].Cluster(ctx, "acme", first.Learning.Cluster)
		if err != nil {
			t.Fatal(err)
		}
		// A job's update commits before the job leaves the queue: wait for both.
		queued, err := stores[1].QueuedJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Trajectories == 8 && queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 8 updates landed, %d jobs left", c.Trajectories, queued)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	workers.Wait()
	if c, _ := stores[0].Cluster(ctx, "acme", first.Learning.Cluster); c.Trajectories != 8 {
		t.Fatalf("%d updates landed once the queue was empty, want 8", c.Trajectories)
	}
}

// judgeCounter counts the reasoning_bank judge calls of a cluster update (one per update of one
// trajectory). The first of them waits, up to hold, for a second one to start, so that a
// second run of the same update, if any, overlaps the first; the first refuse of them fail.
type judgeCounter struct {
	inner  hippocam.Model
	hold   time.Duration
	refuse int
	mu     sync.Mutex
	calls  int
	second chan struct{}
}

func (m *judgeCounter) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role != hippocam.CallRBJudge {
		return m.inner.Complete(ctx, req)
	}
	m.mu.Lock()
	m.calls++
	n := m.calls
	if n == 2 {
		close(m.second)
	}
	m.mu.Unlock()
	if n == 1 {
		select {
		case <-m.second:
		case <-time.After(m.hold):
		}
	}
	if n <= m.refuse {
		return nil, hippocam.Errorf(hippocam.EINVALID, "refused")
	}
	return m.inner.Complete(ctx, req)
}

func (m *judgeCounter) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// An outcome's cluster update calls the model once: with wait, while a worker is ready to take
// the job queued beside the inline run; and without wait, from the job. An inline run that fails
// is retried once by its job.
func TestLearningUpdateRunsOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wait   bool
		refuse int
		calls  int
	}{
		{"wait", true, 0, 1},
		{"queued", false, 0, 1},
		{"wait-failed", true, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := inmem.New()
			m := &judgeCounter{hold: 300 * time.Millisecond, refuse: tc.refuse, second: make(chan struct{})}
			svc := learningServiceWith(t, st, learnSetup{mode: sessions.LearnGlobal, systems: []string{"reasoning_bank"},
				wrap: func(inner hippocam.Model) hippocam.Model { m.inner = inner; return m },
				config: func(c *sessions.Config) {
					c.JobPoll, c.JobBackoff = time.Millisecond, time.Microsecond
				}})
			if _, err := task(t, svc, "acme", "o1", salesTask, nil); err != nil {
				t.Fatal(err)
			}
			wctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { svc.RunJobs(wctx); close(done) }()
			defer func() { stop(); <-done }()
			_, err := svc.EndTask(ctx, "acme", "o1", sessions.Outcome{Feedback: "feedback: status_filter = all wrong"}, tc.wait)
			if (err != nil) != (tc.refuse > 0 && tc.wait) {
				t.Fatalf("EndTask: %v", err)
			}
			if tc.wait && err == nil {
				if c, _ := st.Cluster(ctx, "acme", "global"); c == nil || !c.HasApplied("o1") {
					t.Fatalf("the cluster after an outcome with wait: %+v", c)
				}
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				n, err := st.QueuedJobs(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d jobs still queued", n)
				}
				time.Sleep(5 * time.Millisecond)
			}
			c, err := st.Cluster(ctx, "acme", "global")
			if err != nil || c.Trajectories != 1 || !c.HasApplied("o1") {
				t.Fatalf("the cluster: %+v (%v)", c, err)
			}
			if got := m.count(); got != tc.calls {
				t.Fatalf("%d judge calls of the update, want %d", got, tc.calls)
			}
		})
	}
}
