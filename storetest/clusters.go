package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
)

// testClusters checks the ClusterStore half of a Store: the learning layer's clusters.
func testClusters(t *testing.T, open func(t *testing.T) hippocam.Store) {
	t.Run("Create", func(t *testing.T) {
		st := open(t)
		before := time.Now().Add(-time.Second)
		c := &hippocam.Cluster{Tenant: "acme", ID: "c1", System: "icl", Description: "weekly sales reports",
			Trajectories: 2, Applied: []string{"t1", "t2"}, State: json.RawMessage(`{"kept": [ "t1", "t2" ],  "n":2}`), Version: 7}
		if err := st.CreateCluster(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		if c.Version != 0 || c.CreatedAt.Before(before) || !c.UpdatedAt.Equal(c.CreatedAt) {
			t.Errorf("after create: version %d, created %v, updated %v", c.Version, c.CreatedAt, c.UpdatedAt)
		}
		got := mustCluster(t, st, "acme", "c1")
		if d := diffCluster(c, got); d != "" {
			t.Error(d)
		}
	})
	t.Run("EmptyState", func(t *testing.T) {
		st := open(t)
		mustCreateCluster(t, st, "acme", "c1")
		got := mustCluster(t, st, "acme", "c1")
		if got.State != nil || got.Applied != nil || got.Trajectories != 0 {
			t.Errorf("new cluster = state %q, applied %v, trajectories %d; want all empty", got.State, got.Applied, got.Trajectories)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		st := open(t)
		mustCreateCluster(t, st, "acme", "c1")
		again := &hippocam.Cluster{Tenant: "acme", ID: "c1", System: "lessons", Description: "other"}
		wantCode(t, st.CreateCluster(t.Context(), again), hippocam.ECONFLICT)
		if got := mustCluster(t, st, "acme", "c1"); got.System != "icl" {
			t.Errorf("the existing cluster changed: %+v", got)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		st := open(t)
		for _, c := range []*hippocam.Cluster{
			nil,
			{Tenant: "acme", System: "icl"},
			{Tenant: "acme", ID: "c1"},
			{Tenant: "acme", ID: "c1", System: "icl", State: json.RawMessage(`{"cut`)},
		} {
			wantCode(t, st.CreateCluster(t.Context(), c), hippocam.EINVALID)
		}
		_, err := st.Cluster(t.Context(), "acme", "c1")
		wantCode(t, err, hippocam.ENOTFOUND)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		st := open(t)
		mustCreateCluster(t, st, "acme", "c1")
		for _, k := range [][2]string{{"acme", "c2"}, {"other", "c1"}, {"acme", ""}} {
			_, err := st.Cluster(t.Context(), k[0], k[1])
			wantCode(t, err, hippocam.ENOTFOUND)
		}
		lost := &hippocam.Cluster{Tenant: "acme", ID: "c2", System: "icl"}
		wantCode(t, st.UpdateCluster(t.Context(), lost, 0), hippocam.ENOTFOUND)
		wantCode(t, st.DeleteCluster(t.Context(), "acme", "c2"), hippocam.ENOTFOUND)
	})
	t.Run("ListOldestFirst", func(t *testing.T) {
		st := open(t)
		order := []string{"zeta", "alpha", "mid", "beta"}
		for _, id := range order {
			mustCreateCluster(t, st, "acme", id)
		}
		mustCreateCluster(t, st, "other", "gamma")
		// Updating a cluster does not move it in the listing.
		c := mustCluster(t, st, "acme", "zeta")
		c.Trajectories = 1
		mustUpdateCluster(t, st, c)
		list, err := st.Clusters(t.Context(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range list {
			ids = append(ids, c.ID)
			if c.Tenant != "acme" {
				t.Errorf("cluster %s of tenant %q listed for acme", c.ID, c.Tenant)
			}
		}
		if !slices.Equal(ids, order) {
			t.Errorf("clusters = %v, want %v (oldest first)", ids, order)
		}
		if list[0].Trajectories != 1 || list[0].Version != 1 {
			t.Errorf("listed %s = %d trajectories at version %d; want 1 at 1", list[0].ID, list[0].Trajectories, list[0].Version)
		}
		if none, err := st.Clusters(t.Context(), "nobody"); err != nil || len(none) != 0 {
			t.Errorf("clusters of an unknown tenant = %v, %v", none, err)
		}
	})
	t.Run("Update", func(t *testing.T) {
		st := open(t)
		c := mustCreateCluster(t, st, "acme", "c1")
		created := c.CreatedAt
		c.Trajectories, c.Applied, c.State = 1, []string{"t1"}, json.RawMessage(`["one"]`)
		c.System, c.Description = "lessons", "changed" // immutable: an update ignores them
		if err := st.UpdateCluster(t.Context(), c, 0); err != nil {
			t.Fatal(err)
		}
		if c.Version != 1 || c.UpdatedAt.Before(created) {
			t.Errorf("after update: version %d, updated %v (created %v)", c.Version, c.UpdatedAt, created)
		}
		got := mustCluster(t, st, "acme", "c1")
		if got.System != "icl" || got.Description != "scope of c1" {
			t.Errorf("update changed the immutable fields: system %q, description %q", got.System, got.Description)
		}
		if got.Version != 1 || got.Trajectories != 1 || !slices.Equal(got.Applied, []string{"t1"}) || string(got.State) != `["one"]` {
			t.Errorf("stored = version %d, %d trajectories, applied %v, state %s", got.Version, got.Trajectories, got.Applied, got.State)
		}
		if !got.CreatedAt.Equal(created) || !got.UpdatedAt.Equal(c.UpdatedAt) {
			t.Errorf("stored times = %v, %v; want %v, %v", got.CreatedAt, got.UpdatedAt, created, c.UpdatedAt)
		}
		// Clearing the state stores no state.
		got.State, got.Applied = nil, nil
		mustUpdateCluster(t, st, got)
		if again := mustCluster(t, st, "acme", "c1"); again.State != nil || again.Applied != nil || again.Version != 2 {
			t.Errorf("after clearing: state %q, applied %v, version %d", again.State, again.Applied, again.Version)
		}
	})
	t.Run("ErrConflictOnUpdate", func(t *testing.T) {
		st := open(t)
		c := mustCreateCluster(t, st, "acme", "c1")
		stale := *c
		c.State = json.RawMessage(`"first"`)
		mustUpdateCluster(t, st, c)
		stale.State = json.RawMessage(`"stale"`)
		wantCode(t, st.UpdateCluster(t.Context(), &stale, 0), hippocam.ECONFLICT)
		wantCode(t, st.UpdateCluster(t.Context(), &stale, 5), hippocam.ECONFLICT)
		if stale.Version != 0 {
			t.Errorf("a failed update set the version to %d", stale.Version)
		}
		if got := mustCluster(t, st, "acme", "c1"); string(got.State) != `"first"` || got.Version != 1 {
			t.Errorf("stored = state %s at version %d; want \"first\" at 1", got.State, got.Version)
		}
		bad := *c
		bad.State = json.RawMessage(`{`)
		wantCode(t, st.UpdateCluster(t.Context(), &bad, 1), hippocam.EINVALID)
	})
	t.Run("Delete", func(t *testing.T) {
		st := open(t)
		mustCreateCluster(t, st, "acme", "c1")
		mustCreateCluster(t, st, "acme", "c2")
		if err := st.DeleteCluster(t.Context(), "acme", "c1"); err != nil {
			t.Fatal(err)
		}
		_, err := st.Cluster(t.Context(), "acme", "c1")
		wantCode(t, err, hippocam.ENOTFOUND)
		wantCode(t, st.DeleteCluster(t.Context(), "acme", "c1"), hippocam.ENOTFOUND)
		mustCluster(t, st, "acme", "c2")
		// The id is free again, for a new cluster at version 0.
		if c := mustCreateCluster(t, st, "acme", "c1"); c.Version != 0 {
			t.Errorf("recreated at version %d", c.Version)
		}
	})
	t.Run("TenantIsolation", func(t *testing.T) {
		st := open(t)
		a := mustCreateCluster(t, st, "acme", "c1")
		b := mustCreateCluster(t, st, "umbrella", "c1")
		a.State = json.RawMessage(`"acme's"`)
		mustUpdateCluster(t, st, a)
		if got := mustCluster(t, st, "umbrella", "c1"); got.State != nil || got.Version != 0 {
			t.Errorf("umbrella's cluster changed with acme's: %+v", got)
		}
		wantCode(t, st.DeleteCluster(t.Context(), "other", "c1"), hippocam.ENOTFOUND)
		if err := st.DeleteCluster(t.Context(), "umbrella", "c1"); err != nil {
			t.Fatal(err)
		}
		if got := mustCluster(t, st, "acme", "c1"); string(got.State) != `"acme's"` {
			t.Errorf("acme's cluster = %+v after umbrella's was deleted", got)
		}
		wantCode(t, st.UpdateCluster(t.Context(), b, 0), hippocam.ENOTFOUND)
	})
	t.Run("Copies", func(t *testing.T) {
		st := open(t)
		c := &hippocam.Cluster{Tenant: "acme", ID: "c1", System: "icl", Applied: []string{"t1"}, State: json.RawMessage(`[1]`)}
		if err := st.CreateCluster(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		c.Applied[0], c.State[1] = "changed", '9'
		got := mustCluster(t, st, "acme", "c1")
		got.Applied[0], got.State[1] = "changed", '9'
		if again := mustCluster(t, st, "acme", "c1"); again.Applied[0] != "t1" || string(again.State) != `[1]` {
			t.Errorf("stored cluster changed through a value passed or returned: %+v", again)
		}
	})
	t.Run("ConcurrentUpdates", func(t *testing.T) { testConcurrentClusterUpdates(t, open) })
}

// testConcurrentClusterUpdates runs 32 updaters on one cluster at once, each adding its own
// trajectory id by reading, updating and retrying on ECONFLICT: every one lands.
func testConcurrentClusterUpdates(t *testing.T, open func(t *testing.T) hippocam.Store) {
	const updaters = 32
	st := open(t)
	mustCreateCluster(t, st, "acme", "c1")
	errs := make(chan error, updaters)
	var wg sync.WaitGroup
	for w := range updaters {
		wg.Go(func() {
			id := fmt.Sprintf("t%02d", w)
			for attempt := 0; attempt < 10*updaters; attempt++ {
				c, err := st.Cluster(t.Context(), "acme", "c1")
				if err != nil {
					errs <- err
					return
				}
				from := c.Version
				var ids []string
				if len(c.State) > 0 {
					if err := json.Unmarshal(c.State, &ids); err != nil {
						errs <- err
						return
					}
				}
				ids = append(ids, id)
				c.State, _ = json.Marshal(ids)
				c.Applied = append(c.Applied, id)
				c.Trajectories++
				err = st.UpdateCluster(t.Context(), c, from)
				if hippocam.ErrorCode(err) == hippocam.ECONFLICT {
					continue
				}
				errs <- err
				return
			}
			errs <- fmt.Errorf("%s: still in conflict after every retry", id)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := mustCluster(t, st, "acme", "c1")
	var ids []string
	if err := json.Unmarshal(got.State, &ids); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	applied := slices.Sorted(slices.Values(got.Applied))
	if got.Trajectories != updaters || got.Version != updaters || len(slices.Compact(ids)) != updaters || !slices.Equal(applied, ids) {
		t.Errorf("after %d updaters: %d trajectories, version %d, state ids %v, applied %v", updaters, got.Trajectories, got.Version, ids, applied)
	}
}

func mustCreateCluster(tb testing.TB, st hippocam.Store, tenant, id string) *hippocam.Cluster {
	tb.Helper()
	c := &hippocam.Cluster{Tenant: tenant, ID: id, System: "icl", Description: "scope of " + id}
	if err := st.CreateCluster(tb.Context(), c); err != nil {
		tb.Fatalf("create cluster %s/%s: %v", tenant, id, err)
	}
	return c
}

func mustCluster(tb testing.TB, st hippocam.Store, tenant, id string) *hippocam.Cluster {
	tb.Helper()
	c, err := st.Cluster(tb.Context(), tenant, id)
	if err != nil {
		tb.Fatalf("cluster %s/%s: %v", tenant, id, err)
	}
	return c
}

// mustUpdateCluster updates c from the version it holds.
func mustUpdateCluster(tb testing.TB, st hippocam.Store, c *hippocam.Cluster) {
	tb.Helper()
	if err := st.UpdateCluster(tb.Context(), c, c.Version); err != nil {
		tb.Fatalf("update cluster %s: %v", c.ID, err)
	}
}

// diffCluster describes how got differs from want, field by field; "" when they agree.
func diffCluster(want, got *hippocam.Cluster) string {
	var d []string
	if got.Tenant != want.Tenant || got.ID != want.ID || got.System != want.System || got.Description != want.Description {
		d = append(d, fmt.Sprintf("names: got %s/%s %s %q, want %s/%s %s %q", got.Tenant, got.ID, got.System, got.Description,
			want.Tenant, want.ID, want.System, want.Description))
	}
	if got.Trajectories != want.Trajectories || !slices.Equal(got.Applied, want.Applied) {
		d = append(d, fmt.Sprintf("trajectories: got %d %v, want %d %v", got.Trajectories, got.Applied, want.Trajectories, want.Applied))
	}
	if string(got.State) != string(want.State) {
		d = append(d, fmt.Sprintf("state: got %s, want %s (byte for byte)", got.State, want.State))
	}
	if got.Version != want.Version || !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		d = append(d, fmt.Sprintf("version and times: got %d %v %v, want %d %v %v", got.Version, got.CreatedAt, got.UpdatedAt,
			want.Version, want.CreatedAt, want.UpdatedAt))
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprint(d)
}
