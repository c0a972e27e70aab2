package sessions_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/sessions"
)

// Advise routes a task text as a task start would and reads the cluster's advisory, without a
// session: the cluster the router opens for it is the one the proxied task with that text then
// reuses, and once that task's outcome is in, the advice holds what it taught.
func TestAdvise(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc := learningService(t, sessions.LearnRouted, st)
	first, err := svc.Advise(ctx, "acme", salesTask)
	if err != nil || first == nil || first.Decision != "create" || first.Cluster == "" || first.Advisory != "" {
		t.Fatalf("advice before any task: %+v (%v)", first, err)
	}
	if list, err := st.Sessions(ctx, "acme"); err != nil || len(list) != 0 {
		t.Fatalf("Advise stored sessions: %v (%v)", list, err)
	}
	res, err := task(t, svc, "acme", "t1", salesTask, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Learning.Cluster != first.Cluster || res.Learning.Decision != "reuse" {
		t.Fatalf("the task after the advice: %+v, want cluster %s reused", res.Learning, first.Cluster)
	}
	chosen := strings.TrimPrefix(res.Answer.Content, "status_filter = ")
	if _, err := svc.EndTask(ctx, "acme", "t1", sessions.Outcome{Feedback: "feedback: status_filter = " + chosen + " wrong"}, true); err != nil {
		t.Fatal(err)
	}
	after, err := svc.Advise(ctx, "acme", salesTask)
	if err != nil || after.Cluster != first.Cluster || after.Decision != "reuse" || !strings.Contains(after.Advisory, chosen) || after.AdvisoryTokens == 0 {
		t.Fatalf("advice after the outcome: %+v (%v), want the advisory naming %q", after, err, chosen)
	}
	// Another tenant is routed among its own clusters only.
	theirs, err := svc.Advise(ctx, "other", salesTask)
	if err != nil || theirs.Decision != "create" || theirs.Advisory != "" {
		t.Fatalf("the other tenant's advice: %+v (%v)", theirs, err)
	}
}

// Bad texts are refused and change nothing; with learning off there is no advice.
func TestAdviseRefusals(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc := learningService(t, sessions.LearnRouted, st)
	for _, text := range []string{"", "  \n", strings.Repeat("x", sessions.MaxAdviceBytes+1), "bad \xff byte"} {
		if _, err := svc.Advise(ctx, "acme", text); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("Advise(%.20q): %v, want EINVALID", text, err)
		}
	}
	if clusters, err := st.Clusters(ctx, "acme"); err != nil || len(clusters) != 0 {
		t.Fatalf("refused advice created clusters: %v (%v)", clusters, err)
	}
	off := learningService(t, sessions.LearnOff, inmem.New())
	if tl, err := off.Advise(ctx, "acme", salesTask); err != nil || tl != nil {
		t.Fatalf("advice with learning off: %+v (%v)", tl, err)
	}
}
