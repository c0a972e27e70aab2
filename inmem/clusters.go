package inmem

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"github.com/hippocam/hippocam"
)

var _ hippocam.ClusterStore = (*Store)(nil)

// storedCluster is one stored cluster and the order in which it was created (Clusters sorts by
// it after the creation time).
type storedCluster struct {
	c     hippocam.Cluster
	order int64
}

// CreateCluster stores a copy of c as a new cluster at version 0 and sets c.Version,
// c.CreatedAt and c.UpdatedAt. EINVALID for a cluster without an id or a system, or whose state
// is not JSON; ECONFLICT if the tenant has a cluster with that id.
func (st *Store) CreateCluster(ctx context.Context, c *hippocam.Cluster) error {
	if err := hippocam.CheckCluster(c); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	k := key{c.Tenant, c.ID}
	if _, ok := st.clusters[k]; ok {
		return hippocam.Errorf(hippocam.ECONFLICT, "cluster %q exists", c.ID)
	}
	now := st.now()
	c.Version, c.CreatedAt, c.UpdatedAt = 0, now, now
	st.lastCluster++
	st.clusters[k] = &storedCluster{c: cloneCluster(*c), order: st.lastCluster}
	return nil
}

// Cluster returns a copy of one cluster. ENOTFOUND if none.
func (st *Store) Cluster(ctx context.Context, tenant, id string) (*hippocam.Cluster, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	sc, ok := st.clusters[key{tenant, id}]
	if !ok {
		return nil, clusterNotFound(id)
	}
	c := cloneCluster(sc.c)
	return &c, nil
}

// Clusters lists copies of the tenant's clusters, oldest first.
func (st *Store) Clusters(ctx context.Context, tenant string) ([]hippocam.Cluster, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	var list []*storedCluster
	for k, sc := range st.clusters {
		if k.tenant == tenant {
			list = append(list, sc)
		}
	}
	slices.SortFunc(list, func(a, b *storedCluster) int {
		return cmp.Or(a.c.CreatedAt.Compare(b.c.CreatedAt), cmp.Compare(a.order, b.order))
	})
	out := make([]hippocam.Cluster, len(list))
	for i, sc := range list {
		out[i] = cloneCluster(sc.c)
	}
	return out, nil
}

// UpdateCluster stores c's Trajectories, Applied and State if the stored cluster is at version
// from, and sets c.Version and c.UpdatedAt. EINVALID for a state that is not JSON; ECONFLICT if
// the version moved; ENOTFOUND if the cluster is gone.
func (st *Store) UpdateCluster(ctx context.Context, c *hippocam.Cluster, from int64) error {
	if err := hippocam.CheckCluster(c); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	sc, ok := st.clusters[key{c.Tenant, c.ID}]
	if !ok {
		return clusterNotFound(c.ID)
	}
	if sc.c.Version != from {
		return hippocam.Errorf(hippocam.ECONFLICT, "cluster %q is at version %d, not %d", c.ID, sc.c.Version, from)
	}
	next := cloneCluster(*c)
	sc.c.Trajectories, sc.c.Applied, sc.c.State = next.Trajectories, next.Applied, next.State
	sc.c.Version, sc.c.UpdatedAt = from+1, st.now()
	c.Version, c.UpdatedAt = sc.c.Version, sc.c.UpdatedAt
	return nil
}

// DeleteCluster removes one cluster. ENOTFOUND if none.
func (st *Store) DeleteCluster(ctx context.Context, tenant, id string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	k := key{tenant, id}
	if _, ok := st.clusters[k]; !ok {
		return clusterNotFound(id)
	}
	delete(st.clusters, k)
	return nil
}

func cloneCluster(c hippocam.Cluster) hippocam.Cluster {
	c.Applied = slices.Clone(c.Applied)
	c.State = json.RawMessage(slices.Clone([]byte(c.State)))
	return c
}

func clusterNotFound(id string) error {
	return hippocam.Errorf(hippocam.ENOTFOUND, "no cluster %q", id)
}
