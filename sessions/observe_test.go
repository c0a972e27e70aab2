package sessions_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/sessions"
)

// recorder keeps the changes an observer was told of.
type recorder struct {
	mu  sync.Mutex
	got []sessions.Change
}

func (r *recorder) observe(c sessions.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, c)
}

// take returns the changes told since the last take.
func (r *recorder) take() []sessions.Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// Every change the service commits is told to its observers once it is committed: a session's
// creation, each step, its outcome, the cluster update the outcome runs, its deletion; a failed
// request tells nothing; a stopped observer hears nothing more.
func TestObserveChanges(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	svc := learningService(t, sessions.LearnRouted, st)
	var rec, other recorder
	stop := svc.ObserveChanges(rec.observe)
	stopOther := svc.ObserveChanges(other.observe)

	res, err := task(t, svc, "acme", "t1", salesTask, nil)
	if err != nil {
		t.Fatal(err)
	}
	cluster := res.Learning.Cluster
	got := rec.take()
	want := []sessions.Change{
		{Kind: sessions.ClusterChanged, Tenant: "acme", Cluster: cluster},
		{Kind: sessions.SessionCreated, Tenant: "acme", Session: "t1"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("a task's start told %+v, want %+v", got, want)
	}
	if _, err := svc.EndTask(ctx, "acme", "t1", sessions.Outcome{Feedback: "feedback: status_filter = all wrong"}, true); err != nil {
		t.Fatal(err)
	}
	got = rec.take()
	want = []sessions.Change{
		{Kind: sessions.SessionUpdated, Tenant: "acme", Session: "t1"},
		{Kind: sessions.ClusterChanged, Tenant: "acme", Cluster: cluster},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("an outcome told %+v, want %+v", got, want)
	}
	// A refused outcome commits nothing and tells nothing.
	if _, err := svc.EndTask(ctx, "acme", "t1", sessions.Outcome{Feedback: "again"}, true); err == nil {
		t.Fatal("a second outcome was accepted")
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("a refused outcome told %+v", got)
	}

	// A plain session's steps.
	svc2, _ := newService(t, 8000)
	var plain recorder
	svc2.ObserveChanges(plain.observe)
	c := &client{}
	c.history = append(c.history, hippocam.Message{Role: hippocam.RoleUser, Content: "hello"})
	first, err := svc2.Continue(ctx, c.request("s", false))
	if err != nil {
		t.Fatal(err)
	}
	c.history = append(c.history, first.Answer, hippocam.Message{Role: hippocam.RoleUser, Content: "more"})
	if _, err := svc2.Continue(ctx, c.request("s", false)); err != nil {
		t.Fatal(err)
	}
	if err := svc2.Delete(ctx, "t", "s"); err != nil {
		t.Fatal(err)
	}
	got = plain.take()
	want = []sessions.Change{
		{Kind: sessions.SessionCreated, Tenant: "t", Session: "s"},
		{Kind: sessions.SessionUpdated, Tenant: "t", Session: "s"},
		{Kind: sessions.SessionDeleted, Tenant: "t", Session: "s"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("a session's life told %+v, want %+v", got, want)
	}
	if err := svc2.Delete(ctx, "t", "s"); err == nil {
		t.Fatal("deleting a deleted session succeeded")
	}
	if got := plain.take(); len(got) != 0 {
		t.Fatalf("a failed deletion told %+v", got)
	}

	// Stopped observers hear nothing more; the others still do.
	stop()
	if _, err := task(t, svc, "acme", "t2", salesTask, nil); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("a stopped observer was told %+v", got)
	}
	if got := other.take(); len(got) == 0 || got[len(got)-1] != (sessions.Change{Kind: sessions.SessionCreated, Tenant: "acme", Session: "t2"}) {
		t.Fatalf("the other observer was told %+v", got)
	}
	stopOther()
	stopOther() // stopping twice is harmless
}
