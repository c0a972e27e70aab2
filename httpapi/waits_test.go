package httpapi_test

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sessions"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
)

// newDeferringServer is newServer with a session service that leaves consolidation for jobs
// (as hippocam serve does by default); no worker runs them: the test does, with
// RunPendingJobs, when it wants them run.
func newDeferringServer(t *testing.T) (*testServer, *sessions.Service) {
	t.Helper()
	up := newUpstream(t)
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.MaxRetries = up.URL+"/v1", "hippocam-sim", 0
	model, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ecfg := engine.ForWindow(8000)
	ecfg.Janus = engine.JanusGate // the waits it counts follow the steps that close intents
	e, err := engine.New(ecfg, model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sqlite.New(t.TempDir() + "/h.db")
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := sessions.New(sessions.Config{Engine: e, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: db, Sessions: svc, Upstream: model, Metrics: httpapi.NewMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &testServer{Server: ts, store: db, up: up}, svc
}

// series reads one series of /metrics (0 when the proxy does not expose it).
func (s *testServer) series(t *testing.T, name, labels string) float64 {
	t.Helper()
	body := s.do(t, "GET", "/metrics", "", "", nil).body
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name+labels) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// hippocam_consolidation_waits_total counts steps whose answer waited for consolidation, not
// consolidation jobs: when every job runs after its answer, no step waited. Steps that answer
// with consolidation still pending show in hippocam_consolidation_lag_steps, by how far behind
// they were; the one that reaches the lag bound runs the work first and counts once, as
// how="lag". Jobs are counted apart, in hippocam_consolidation_jobs_total.
func TestConsolidationWaitsCountSteps(t *testing.T) {
	ctx := context.Background()
	s, svc := newDeferringServer(t)
	a := &agent{t: t, s: s, session: "w"}
	waits := func() (waited float64) {
		for _, how := range []string{"running", "window", "lag", "regenerate", "inline"} {
			waited += s.series(t, "hippocam_consolidation_waits_total", `{how="`+how+`"}`)
		}
		return waited
	}
	// Two intents, each closed, each closure's job run by a worker after the answer.
	for _, label := range []string{"Read the exports", "Send the report"} {
		a.user(false, "#open "+label+" | it is done\n!say working")
		a.user(false, "#close "+label+"\n!say done")
		if err := svc.RunPendingJobs(ctx); err != nil {
			t.Fatal(err)
		}
	}
	a.user(false, "!say next")
	if w := waits(); w != 0 {
		t.Fatalf("no step waited, yet %v waits", w)
	}
	if n := s.series(t, "hippocam_consolidation_lag_steps_count", ""); n != 0 {
		t.Fatalf("%v steps answered with consolidation pending, want none", n)
	}
	if n := s.series(t, "hippocam_consolidation_jobs_total", `{result="consolidated"}`); n != 2 {
		t.Fatalf("%v consolidation jobs consolidated, want 2", n)
	}
	if n := s.series(t, "hippocam_consolidations_total", `{kind="intent"}`); n != 2 {
		t.Fatalf("%v intent consolidations, want 2", n)
	}
	// A closure whose job no worker takes: the next steps answer with it pending, one step
	// further behind each, until the lag bound; the step after runs it first.
	a.user(false, "#open Check the totals | the totals match\n!say checking")
	a.user(false, "#close Check the totals\n!say checked")
	for range engine.DefaultMaxLag {
		a.user(false, "!say carrying on")
	}
	if w := waits(); w != 0 {
		t.Fatalf("steps within the lag bound waited: %v", w)
	}
	if n, sum := s.series(t, "hippocam_consolidation_lag_steps_count", ""), s.series(t, "hippocam_consolidation_lag_steps_sum", ""); n != engine.DefaultMaxLag || sum != engine.DefaultMaxLag*(engine.DefaultMaxLag+1)/2 {
		t.Fatalf("lag: %v steps summing %v", n, sum)
	}
	a.user(false, "!say at last")
	if l, w := s.series(t, "hippocam_consolidation_waits_total", `{how="lag"}`), waits(); l != 1 || w != 1 {
		t.Fatalf("the step at the lag bound: %v waits for the lag, %v in all; want 1 and 1", l, w)
	}
	if err := svc.RunPendingJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if w := waits(); w != 1 {
		t.Fatalf("a job that found nothing to do changed the waits: %v", w)
	}
	if c, n := s.series(t, "hippocam_consolidation_jobs_total", `{result="consolidated"}`), s.series(t, "hippocam_consolidation_jobs_total", `{result="nothing"}`); c != 2 || n != 1 {
		t.Fatalf("consolidation jobs: %v consolidated, %v with nothing left; want 2 and 1", c, n)
	}
	if n := s.series(t, "hippocam_consolidations_total", `{kind="intent"}`); n != 3 {
		t.Fatalf("%v intent consolidations, want 3", n)
	}
}
