package sessions_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/sessions"
)

// Advise routes a task text as a task start would and reads the cluster's advisory, without a
// session and without changing anything: before any task it names the cluster the router would
// open but opens none; once the proxied task with that text has ended, the advice is that
// cluster's and holds what it taught.
func TestAdvise(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc := learningService(t, sessions.LearnRouted, st)
	first, err := svc.Advise(ctx, "acme", salesTask)
	if err != nil || first == nil || first.Decision != "create" || first.System == "" || first.Cluster != "" || first.Advisory != "" {
		t.Fatalf("advice before any task: %+v (%v)", first, err)
	}
	if list, err := st.Sessions(ctx, "acme"); err != nil || len(list) != 0 {
		t.Fatalf("Advise stored sessions: %v (%v)", list, err)
	}
	if clusters, err := st.Clusters(ctx, "acme"); err != nil || len(clusters) != 0 {
		t.Fatalf("Advise created clusters: %v (%v)", clusters, err)
	}
	res, err := task(t, svc, "acme", "t1", salesTask, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Learning.Decision != "create" || res.Learning.System != first.System {
		t.Fatalf("the task after the advice: %+v, want a %s cluster created", res.Learning, first.System)
	}
	chosen := strings.TrimPrefix(res.Answer.Content, "status_filter = ")
	if _, err := svc.EndTask(ctx, "acme", "t1", sessions.Outcome{Feedback: "feedback: status_filter = " + chosen + " wrong"}, true); err != nil {
		t.Fatal(err)
	}
	before, _ := st.Clusters(ctx, "acme")
	after, err := svc.Advise(ctx, "acme", salesTask)
	if err != nil || after.Cluster != res.Learning.Cluster || after.Decision != "match" || !strings.Contains(after.Advisory, chosen) || after.AdvisoryTokens == 0 {
		t.Fatalf("advice after the outcome: %+v (%v), want the advisory naming %q", after, err, chosen)
	}
	if now, _ := st.Clusters(ctx, "acme"); len(now) != len(before) || now[0].Version != before[0].Version {
		t.Errorf("Advise changed the clusters: %+v, before %+v", now, before)
	}
	// Another tenant is routed among its own clusters only.
	theirs, err := svc.Advise(ctx, "other", salesTask)
	if err != nil || theirs.Decision != "create" || theirs.Advisory != "" {
		t.Fatalf("the other tenant's advice: %+v (%v)", theirs, err)
	}
}

// A numeric cluster waiting for its first reuse is not configured by a question: the probe's
// text could be anything, and a failed configuration is final.
func TestAdviseLeavesNumericClusterWarming(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc := learningService(t, sessions.LearnRouted, st)
	const forecast = "Weekly sales forecast\nobs sales[store=north,week=1] = 101\nestimate sales[store=north,week=2]"
	res, err := task(t, svc, "acme", "n1", forecast, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.EndTask(ctx, "acme", "n1", sessions.Outcome{Feedback: "feedback: sales[store=north,week=2] = 101, outcome sales[store=north,week=2] = 104"}, true); err != nil {
		t.Fatal(err)
	}
	c, err := st.Cluster(ctx, "acme", res.Learning.Cluster)
	if err != nil || c.System != "regression" {
		t.Fatalf("the numeric task's cluster: %+v (%v)", c, err)
	}
	adv, err := svc.Advise(ctx, "acme", "Weekly sales forecast\nsomething else entirely")
	if err != nil || adv.Decision != "match" || adv.Advisory != "" {
		t.Fatalf("advice: %+v (%v)", adv, err)
	}
	if now, _ := st.Cluster(ctx, "acme", c.ID); now.Version != c.Version || string(now.State) != string(c.State) {
		t.Errorf("Advise changed the warming cluster: version %d -> %d", c.Version, now.Version)
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

// racedCommits fails the next n commits with a version conflict, as when another process on
// the store (hippocam mcp beside serve) committed the session first.
type racedCommits struct {
	hippocam.Store
	n atomic.Int32
}

func (r *racedCommits) Commit(ctx context.Context, s *hippocam.Session, ch hippocam.Change) error {
	if r.n.Add(-1) >= 0 {
		return hippocam.Errorf(hippocam.ECONFLICT, "session %q moved on", s.ID)
	}
	return r.Store.Commit(ctx, s, ch)
}

// An outcome whose commit loses a race with another process reads the session again and lands;
// after the bound, the conflict is returned and nothing is recorded.
func TestEndTaskRetriesAVersionRace(t *testing.T) {
	ctx := context.Background()
	st := &racedCommits{Store: inmem.New()}
	svc := learningService(t, sessions.LearnRouted, st)
	if _, err := task(t, svc, "acme", "t1", salesTask, nil); err != nil {
		t.Fatal(err)
	}
	st.n.Store(2)
	if _, err := svc.EndTask(ctx, "acme", "t1", sessions.Outcome{Feedback: "feedback: status_filter = shipped right"}, true); err != nil {
		t.Fatalf("an outcome after two lost races: %v", err)
	}
	if _, err := task(t, svc, "acme", "t2", salesTask, nil); err != nil {
		t.Fatal(err)
	}
	st.n.Store(100)
	_, err := svc.EndTask(ctx, "acme", "t2", sessions.Outcome{Feedback: "feedback: status_filter = shipped right"}, true)
	st.n.Store(0)
	if hippocam.ErrorCode(err) != hippocam.ECONFLICT {
		t.Fatalf("an outcome that keeps losing: %v, want a conflict", err)
	}
	s, err := st.Session(ctx, "acme", "t2")
	if err != nil || (s.Transcript.Learning != nil && s.Transcript.Learning.Ended) {
		t.Errorf("the outcome that failed was recorded: %+v (%v)", s.Transcript.Learning, err)
	}
}
