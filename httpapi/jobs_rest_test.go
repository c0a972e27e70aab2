package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
)

// A job that failed is listed for its tenant with its attempts and last error, and no longer
// running; another tenant sees none of it.
func TestListJobs(t *testing.T) {
	s := newServer(t, 8000, map[string]string{acmeKey: "acme", otherKey: "other"})
	ctx := context.Background()
	var listed struct {
		Jobs []hippocam.JobInfo `json:"jobs"`
	}
	r := s.do(t, "GET", "/api/jobs", acmeKey, "", nil)
	if r.status != http.StatusOK || string(r.body) != "{\"jobs\":[]}\n" {
		t.Fatalf("GET /api/jobs with no jobs: %d %s", r.status, r.body)
	}

	sess := &hippocam.Session{Tenant: "acme", ID: "s1"}
	if err := s.store.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if err := s.store.Commit(ctx, sess, hippocam.Change{From: sess.Version, Jobs: []hippocam.Job{{Kind: hippocam.JobConsolidate}}}); err != nil {
		t.Fatal(err)
	}
	// A worker claims the job and its run fails, as the model's fault would make it: the job
	// waits a day with the error.
	j, err := s.store.ClaimJob(ctx, "w", time.Hour)
	if err != nil || j == nil {
		t.Fatalf("claim: %v, %v", j, err)
	}
	if err := s.store.RetryJob(ctx, j, "w", 24*time.Hour, "model: 503 service unavailable"); err != nil {
		t.Fatal(err)
	}

	r = s.do(t, "GET", "/api/jobs", acmeKey, "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /api/jobs: %d %s", r.status, r.body)
	}
	r.json(t, &listed)
	if len(listed.Jobs) != 1 {
		t.Fatalf("listed %+v, want the one failed job", listed.Jobs)
	}
	got := listed.Jobs[0]
	if got.ID != j.ID || got.Session != "s1" || got.Kind != hippocam.JobConsolidate || got.Attempts != 1 ||
		got.LastError != "model: 503 service unavailable" || got.Running || got.DueAt.Before(time.Now().Add(23*time.Hour)) {
		t.Errorf("listed %+v, want s1's consolidation at attempt 1 with its error, not running, due in a day", got)
	}

	r = s.do(t, "GET", "/api/jobs", otherKey, "", nil)
	listed.Jobs = nil
	r.json(t, &listed)
	if r.status != http.StatusOK || listed.Jobs == nil || len(listed.Jobs) != 0 {
		t.Errorf("another tenant's GET /api/jobs: %d %s, want an empty list", r.status, r.body)
	}
	if r := s.do(t, "GET", "/api/jobs", "", "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("GET /api/jobs without a key: %d, want 401", r.status)
	}
}
