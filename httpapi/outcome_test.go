package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"

	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sessions"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
)

// newLearningServer is newServer with routed learning over every memory system.
func newLearningServer(t *testing.T, keys map[string]string) *testServer {
	t.Helper()
	ts, _ := newLearningServerWith(t, keys, learningOptions{})
	return ts
}

// learningOptions varies newLearningServerWith: global learning over these systems (default:
// routed over every one), and a wrapper of the learning components' model.
type learningOptions struct {
	systems []string
	wrap    func(hippocam.Model) hippocam.Model
}

func newLearningServerWith(t *testing.T, keys map[string]string, o learningOptions) (*testServer, *sessions.Service) {
	t.Helper()
	up := newUpstream(t)
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.MaxRetries = up.URL+"/v1", "hippocam-sim", 0
	model, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tok := tokenizer.MustDefault()
	e, err := engine.New(engine.ForWindow(8000), model, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sqlite.New(t.TempDir() + "/h.db")
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	env := &learn.Env{Model: model, Tok: tok}
	mode, names := sessions.LearnRouted, library.Names()
	if o.systems != nil {
		mode, names = sessions.LearnGlobal, o.systems
	}
	if o.wrap != nil {
		env.Model = o.wrap(model)
	}
	systems, err := library.Library(env, names)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sessions.New(sessions.Config{Engine: e, Store: db, Inline: true, Learn: mode, Systems: systems, LearnEnv: env,
		JobPoll: time.Millisecond, JobBackoff: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: db, Sessions: svc, Upstream: model, Keys: keys, Metrics: httpapi.NewMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &testServer{Server: ts, store: db, up: up}, svc
}

// Through HTTP: a task start names its cluster in Hippocam-Cluster (streamed or not); the
// outcome ends it (202 queued, or 200 with ?wait=1), a second outcome and a request to the
// ended session are 409s, bad bodies 400s, another tenant's session a 404.
func TestOutcomeOverHTTP(t *testing.T) {
	keys := map[string]string{"k-acme": "acme", "k-other": "other"}
	s := newLearningServer(t, keys)
	chat := func(key, session string, stream bool, text string) reply {
		t.Helper()
		body, _ := json.Marshal(wire.ChatRequest{Model: "m", Stream: stream, Messages: []wire.ChatMessage{{Role: "user", Content: wire.StringContent(text)}}})
		return s.do(t, "POST", "/v1/chat/completions", key, session, body, httpapi.TaskHeader, "sales")
	}
	for i, stream := range []bool{false, true} {
		id := []string{"t-plain", "t-streamed"}[i]
		r := chat("k-acme", id, stream, salesTaskText)
		if r.status != 200 || r.header.Get(httpapi.ClusterHeader) == "" {
			t.Fatalf("%s: status %d, cluster header %q: %s", id, r.status, r.header.Get(httpapi.ClusterHeader), r.body)
		}
	}
	// Attempts are bounded (sessions.MaxAttempts): one more is a 400 that leaves the task running.
	for _, n := range []int{sessions.MaxAttempts + 1, -1} {
		body := fmt.Sprintf(`{"feedback":"x","attempts":%d}`, n)
		if r := s.do(t, "POST", "/api/sessions/t-plain/outcome", "k-acme", "", []byte(body)); r.status != 400 || !strings.Contains(string(r.body), "attempts") {
			t.Fatalf("outcome %s: %d %s, want a 400 about attempts", body, r.status, r.body)
		}
	}
	out := s.do(t, "POST", "/api/sessions/t-plain/outcome", "k-acme", "", []byte(`{"feedback":"feedback: status_filter = all wrong","success":false,"reward":0}`))
	if out.status != 202 || !strings.Contains(string(out.body), `"update":"queued"`) {
		t.Fatalf("outcome: %d %s", out.status, out.body)
	}
	out = s.do(t, "POST", "/api/sessions/t-streamed/outcome?wait=1", "k-acme", "", []byte(`{"feedback":"feedback: status_filter = all wrong"}`))
	if out.status != 200 || !strings.Contains(string(out.body), `"update":"done"`) {
		t.Fatalf("outcome ?wait=1: %d %s", out.status, out.body)
	}
	if r := s.do(t, "POST", "/api/sessions/t-streamed/outcome", "k-acme", "", []byte(`{"feedback":"again"}`)); r.status != 409 {
		t.Fatalf("second outcome: %d %s", r.status, r.body)
	}
	for _, body := range []string{`{}`, `{"feedback":""}`, `not json`, `{"feedback":"x","extra":1}`} {
		if r := s.do(t, "POST", "/api/sessions/t-plain/outcome", "k-acme", "", []byte(body)); r.status != 400 && r.status != 409 {
			t.Fatalf("outcome %s: %d %s, want a 4xx", body, r.status, r.body)
		}
	}
	if r := s.do(t, "POST", "/api/sessions/t-plain/outcome", "k-other", "", []byte(`{"feedback":"x"}`)); r.status != 404 {
		t.Fatalf("another tenant's outcome: %d %s", r.status, r.body)
	}
}

const salesTaskText = "Sales report\ntags: revenue weekly\ndecide status_filter: shipped | all | pending"

// The learning metrics: routing decisions by system, advisory tokens, outcomes by update.
func TestLearningMetrics(t *testing.T) {
	s := newLearningServer(t, nil)
	body, _ := json.Marshal(wire.ChatRequest{Model: "m", Messages: []wire.ChatMessage{{Role: "user", Content: wire.StringContent(salesTaskText)}}})
	if r := s.do(t, "POST", "/v1/chat/completions", "", "m1", body); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := s.do(t, "POST", "/api/sessions/m1/outcome?wait=1", "", "", []byte(`{"feedback":"feedback: status_filter = all wrong"}`)); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r := s.do(t, "GET", "/metrics", "", "", nil)
	for _, want := range []string{`hippocam_learn_routing_total{decision="create",system=`, `hippocam_learn_outcomes_total{update="done"} 1`, "hippocam_learn_updates_total 1", "hippocam_learn_advisory_tokens_total", "hippocam_lessons_added_total", "hippocam_jobs_queued", "hippocam_job_lag_seconds_total"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// judgeCounter counts the reasoning_bank judge calls (one per cluster update of one trajectory)
// and refuses the first refuse of them.
type judgeCounter struct {
	inner  hippocam.Model
	refuse int
	mu     sync.Mutex
	calls  int
}

func (m *judgeCounter) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role == hippocam.CallRBJudge {
		m.mu.Lock()
		m.calls++
		n := m.calls
		m.mu.Unlock()
		if n <= m.refuse {
			return nil, hippocam.Errorf(hippocam.EINVALID, "refused")
		}
	}
	return m.inner.Complete(ctx, req)
}

// Through HTTP, with the job workers running: an outcome with ?wait=1 makes its cluster update's
// model calls once (200 done), and one whose inline update fails answers 202 queued and its job
// makes the update.
func TestOutcomeWaitUpdatesOnce(t *testing.T) {
	for _, tc := range []struct {
		refuse, status, calls int
		update                string
	}{{0, 200, 1, "done"}, {1, 202, 2, "queued"}} {
		m := &judgeCounter{refuse: tc.refuse}
		s, svc := newLearningServerWith(t, nil, learningOptions{systems: []string{"reasoning_bank"},
			wrap: func(inner hippocam.Model) hippocam.Model { m.inner = inner; return m }})
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { svc.RunJobs(ctx); close(done) }()
		body, _ := json.Marshal(wire.ChatRequest{Model: "m", Messages: []wire.ChatMessage{{Role: "user", Content: wire.StringContent(salesTaskText)}}})
		if r := s.do(t, "POST", "/v1/chat/completions", "", "w1", body); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		r := s.do(t, "POST", "/api/sessions/w1/outcome?wait=1", "", "", []byte(`{"feedback":"feedback: status_filter = all wrong"}`))
		if r.status != tc.status || !strings.Contains(string(r.body), `"update":"`+tc.update+`"`) {
			t.Fatalf("outcome ?wait=1 with %d refused: %d %s", tc.refuse, r.status, r.body)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			n, err := s.store.QueuedJobs(context.Background())
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
		stop()
		<-done
		c, err := s.store.Cluster(context.Background(), "", "global")
		if err != nil || c.Trajectories != 1 || !c.HasApplied("w1") {
			t.Fatalf("the cluster: %+v (%v)", c, err)
		}
		m.mu.Lock()
		calls := m.calls
		m.mu.Unlock()
		if calls != tc.calls {
			t.Fatalf("%d refused: %d judge calls of the update, want %d", tc.refuse, calls, tc.calls)
		}
	}
}
