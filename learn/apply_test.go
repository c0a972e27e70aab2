package learn_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/internal/learntest"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/hippocamsys"
	"github.com/hippocam/hippocam/memory/icl"
	"github.com/hippocam/hippocam/memory/memorytest"
)

// failing is a memory system whose updates fail, and which cannot forget.
type failing struct{ name string }

func (f failing) Name() string        { return f.name }
func (f failing) Description() string { return "fails" }
func (f failing) Read(context.Context, json.RawMessage, *hippocam.Task, int) (hippocam.Advisory, error) {
	return hippocam.Advisory{}, nil
}
func (f failing) Update(context.Context, json.RawMessage, []hippocam.Trajectory) (json.RawMessage, error) {
	return nil, errors.New("the model is down")
}
func (f failing) Entries(json.RawMessage) int { return 0 }

func TestApply_ErrorKeepsCluster(t *testing.T) {
	cs := inmem.New()
	c := &hippocam.Cluster{Tenant: "acme", ID: "c1", System: "broken", State: json.RawMessage(`{"kept":true}`)}
	if err := cs.CreateCluster(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if err := learn.Apply(t.Context(), cs, failing{"broken"}, "acme", "c1", []hippocam.Trajectory{memorytest.Trajectory(0)}); err == nil {
		t.Fatal("a failed update was not reported")
	}
	got, _ := cs.Cluster(t.Context(), "acme", "c1")
	if got.Version != 0 || got.Trajectories != 0 || got.Applied != nil || string(got.State) != `{"kept":true}` {
		t.Errorf("a failed update changed the cluster: %+v", got)
	}
	err := learn.Apply(t.Context(), cs, failing{"broken"}, "acme", "c1", []hippocam.Trajectory{{}})
	if hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Errorf("a trajectory without an id: err = %v, want %s", err, hippocam.EINVALID)
	}
	err = learn.Apply(t.Context(), cs, failing{"broken"}, "acme", "c9", []hippocam.Trajectory{memorytest.Trajectory(0)})
	if hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Errorf("an unknown cluster: err = %v, want %s", err, hippocam.ENOTFOUND)
	}
}

// TestForget deletes a session that fed two clusters: the one whose system can forget loses its
// trajectory, the other is reported and left as it was, and clusters it never fed are untouched.
func TestForget(t *testing.T) {
	cs := inmem.New()
	sys := icl.New(learntest.Env(t))
	for _, c := range []*hippocam.Cluster{
		{Tenant: "acme", ID: "a", System: icl.Name},
		{Tenant: "acme", ID: "b", System: icl.Name},
		{Tenant: "acme", ID: "x", System: "broken", Trajectories: 1, Applied: []string{"t001"}},
	} {
		if err := cs.CreateCluster(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	trajs := []hippocam.Trajectory{memorytest.Trajectory(0), memorytest.Trajectory(1), memorytest.Trajectory(2)}
	for _, id := range []string{"a", "b"} {
		if err := learn.Apply(t.Context(), cs, sys, "acme", id, trajs[:2]); err != nil {
			t.Fatal(err)
		}
	}
	if err := learn.Apply(t.Context(), cs, sys, "acme", "b", trajs[2:]); err != nil {
		t.Fatal(err)
	}
	kept, err := learn.Forget(t.Context(), cs, []hippocam.MemorySystem{sys, failing{"broken"}}, "acme", []string{"t001"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept, []string{"x"}) {
		t.Errorf("kept = %v, want [x]", kept)
	}
	for _, want := range []struct {
		id      string
		applied []string
		version int64
	}{
		{"a", []string{"t000"}, 2},
		{"b", []string{"t000", "t002"}, 3},
	} {
		c, _ := cs.Cluster(t.Context(), "acme", want.id)
		if !slices.Equal(c.Applied, want.applied) || c.Trajectories != len(want.applied) || sys.Entries(c.State) != len(want.applied) || c.Version != want.version {
			t.Errorf("cluster %s after forgetting t001: %d trajectories, applied %v, %d entries, version %d", want.id, c.Trajectories, c.Applied, sys.Entries(c.State), c.Version)
		}
	}
	if x, _ := cs.Cluster(t.Context(), "acme", "x"); !x.HasApplied("t001") || x.Version != 0 {
		t.Errorf("the cluster that cannot forget changed: %+v", x)
	}
}

// TestForget_Relearner forgets through a system that rebuilds its state.
func TestForget_Relearner(t *testing.T) {
	cs := inmem.New()
	sys := hippocamsys.New(learntest.Env(t))
	if err := cs.CreateCluster(t.Context(), &hippocam.Cluster{Tenant: "acme", ID: "h", System: hippocamsys.Name}); err != nil {
		t.Fatal(err)
	}
	trajs := []hippocam.Trajectory{memorytest.Trajectory(0), memorytest.Trajectory(1), memorytest.Trajectory(2)}
	if err := learn.Apply(t.Context(), cs, sys, "acme", "h", trajs); err != nil {
		t.Fatal(err)
	}
	kept, err := learn.Forget(t.Context(), cs, []hippocam.MemorySystem{sys}, "acme", []string{"t001"})
	if err != nil || len(kept) != 0 {
		t.Fatalf("kept %v, err %v", kept, err)
	}
	c, _ := cs.Cluster(t.Context(), "acme", "h")
	st, err := hippocamsys.Decode(c.State)
	if err != nil {
		t.Fatal(err)
	}
	var absorbed []string
	for _, a := range st.Absorbed {
		absorbed = append(absorbed, a.ID)
	}
	if !slices.Equal(c.Applied, []string{"t000", "t002"}) || !slices.Equal(absorbed, c.Applied) || c.Trajectories != 2 {
		t.Errorf("after forgetting t001: applied %v, absorbed %v, %d trajectories", c.Applied, absorbed, c.Trajectories)
	}
}
