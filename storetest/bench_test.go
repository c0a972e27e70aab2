package storetest_test

import (
	"math/rand/v2"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/storetest"
)

// TestBuildArchive checks the benchmarks' data set: every leaf is archived, in order, beneath
// three levels of memories whose nodes hold 10 to 50 children (a level's last node may hold
// fewer).
func TestBuildArchive(t *testing.T) {
	st := inmem.New()
	const leaves = 5000
	refs := storetest.BuildArchive(t, st, rand.New(rand.NewPCG(1, 2)), "acme", "s1", leaves)
	s, err := st.Session(t.Context(), "acme", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Context) > 50 {
		t.Errorf("the context holds %d messages after three folds", len(s.Context))
	}
	all, err := hippocam.Expand(t.Context(), hippocam.SessionArchive(st, "acme", "s1"), s.Context)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != leaves {
		t.Fatalf("%d leaves archived, want %d", len(all), leaves)
	}
	small := 0
	for _, ref := range refs {
		kids, err := st.Children(t.Context(), "acme", "s1", ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) > 50 {
			t.Errorf("node %s holds %d children", ref, len(kids))
		}
		if len(kids) < 10 {
			small++
		}
	}
	if small > leaves/1000+2 {
		t.Errorf("%d nodes hold fewer than 10 children", small)
	}
	if depth := depthOf(t, st, s.Context[0]); depth != 3 {
		t.Errorf("the archive is %d levels deep, want 3", depth)
	}
}

func depthOf(t *testing.T, st hippocam.Store, m hippocam.Message) int {
	if !m.Consolidated() {
		return 0
	}
	kids, err := st.Children(t.Context(), "acme", "s1", m.Ref)
	if err != nil {
		t.Fatal(err)
	}
	return 1 + depthOf(t, st, kids[0])
}

func TestBuildContext(t *testing.T) {
	st := inmem.New()
	s := storetest.BuildContext(t, st, "acme", "s1", 2500)
	got, err := st.Session(t.Context(), "acme", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Context) != 2500 || got.Version != 3 || s.Version != 3 {
		t.Errorf("context of %d at version %d (caller's %d), want 2500 at 3", len(got.Context), got.Version, s.Version)
	}
}
