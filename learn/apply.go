package learn

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hippocam/hippocam"
)

// ApplyAttempts bounds how often Apply and Forget read a cluster again after an update lost
// the race for its version.
const ApplyAttempts = 100

// Apply learns trajs into the tenant's cluster id through sys (docs/learning.md): it reads
// the cluster, leaves out the trajectories the cluster has applied already (Cluster.Applied),
// lets sys update the state with the rest, in order, and stores the new state with the
// trajectories' ids, from the version it read. When another update landed first (ECONFLICT) it
// reads the cluster again and starts over, so that concurrent updates of one cluster all land,
// each on top of the others; a trajectory applied twice changes nothing the second time.
//
// Errors: EINVALID when sys is not the cluster's system or a trajectory has no id; ENOTFOUND when the cluster does not
// exist; sys's own error (the cluster is then left as it was: nothing is half-applied); an
// ECONFLICT when the cluster kept moving through ApplyAttempts tries.
func Apply(ctx context.Context, cs hippocam.ClusterStore, sys hippocam.MemorySystem, tenant, id string, trajs []hippocam.Trajectory) error {
	for i := range trajs {
		if trajs[i].ID == "" {
			return hippocam.Errorf(hippocam.EINVALID, "trajectory %d has no id", i)
		}
	}
	_, err := Change(ctx, cs, tenant, id, func(c *hippocam.Cluster) (bool, error) {
		if c.System != sys.Name() {
			return false, hippocam.Errorf(hippocam.EINVALID, "cluster %q keeps %s, not %s", id, c.System, sys.Name())
		}
		fresh := unapplied(c, trajs)
		if len(fresh) == 0 {
			return false, nil
		}
		state, err := sys.Update(ctx, c.State, fresh)
		if err != nil {
			return false, fmt.Errorf("update cluster %s: %w", id, err)
		}
		c.State = state
		for _, t := range fresh {
			c.Applied = append(c.Applied, t.ID)
		}
		c.Trajectories += len(fresh)
		return true, nil
	})
	return err
}

// Change is the read, change, commit cycle every update of a cluster goes through: it reads the
// tenant's cluster id, lets change edit it (a fresh copy each time; change reports whether it
// changed anything: nothing changed, nothing is written), and commits it at the version it read.
// When another update landed first (ECONFLICT) it reads the cluster again and starts over, at
// most ApplyAttempts times, waiting a little longer after each lost race. It returns the
// cluster as it now is. Errors: the store's (ENOTFOUND when the cluster does not exist),
// change's own (nothing is written), and ECONFLICT when the cluster kept moving.
func Change(ctx context.Context, cs hippocam.ClusterStore, tenant, id string, change func(c *hippocam.Cluster) (bool, error)) (*hippocam.Cluster, error) {
	for attempt := 0; ; attempt++ {
		c, err := cs.Cluster(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		changed, err := change(c)
		if err != nil || !changed {
			return c, err
		}
		err = cs.UpdateCluster(ctx, c, c.Version)
		if hippocam.ErrorCode(err) != hippocam.ECONFLICT {
			return c, err
		}
		if attempt+1 >= ApplyAttempts {
			return nil, fmt.Errorf("update cluster %s: %w", id, err)
		}
		if err := backoff(ctx, attempt); err != nil {
			return nil, err
		}
	}
}

// unapplied returns the trajectories of trajs that c has not applied, each id once, in order.
func unapplied(c *hippocam.Cluster, trajs []hippocam.Trajectory) []hippocam.Trajectory {
	var out []hippocam.Trajectory
	seen := map[string]bool{}
	for _, t := range trajs {
		if c.HasApplied(t.ID) || seen[t.ID] {
			continue
		}
		seen[t.ID] = true
		out = append(out, t)
	}
	return out
}

// backoff waits a little longer after each lost race, so that updaters that keep colliding
// spread out: 0, 1, 2 … up to 20 ms.
func backoff(ctx context.Context, attempt int) error {
	if attempt == 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(min(attempt, 20)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Forgetter is a memory system that can take trajectories back out of a state: what deleting a
// session needs, since a deleted session must leave every cluster state it fed
// (docs/learning.md). Forget returns the state without what the trajectories with the given
// ids contributed, without changing state in place; ids the state does not hold are ignored.
type Forgetter interface {
	Forget(state json.RawMessage, ids []string) (json.RawMessage, error)
}

// Relearner is a memory system whose forgetting takes model calls, because what a trajectory
// taught is merged with the rest: Relearn rebuilds the state from the trajectories it holds,
// leaving out those with the given ids, as Forget does otherwise.
type Relearner interface {
	Relearn(ctx context.Context, state json.RawMessage, without []string) (json.RawMessage, error)
}

// forgetFunc is how a system forgets, whichever of the two it offers; nil if neither.
func forgetFunc(sys hippocam.MemorySystem) func(ctx context.Context, state json.RawMessage, ids []string) (json.RawMessage, error) {
	switch f := sys.(type) {
	case Forgetter:
		return func(_ context.Context, state json.RawMessage, ids []string) (json.RawMessage, error) {
			return f.Forget(state, ids)
		}
	case Relearner:
		return f.Relearn
	}
	return nil
}

// Forget removes the trajectories with the given ids (a trajectory's id is the id of the session
// it came from) from every cluster of the tenant that applied them: the state through the
// cluster's system, which must be a Forgetter or a Relearner, and the ids from Applied and the count. A cluster
// whose system is not among systems or cannot forget is left as it was, and its id is returned
// in kept, for the caller to act on (log it, or delete the cluster). Concurrent updates are
// retried as in Apply.
func Forget(ctx context.Context, cs hippocam.ClusterStore, systems []hippocam.MemorySystem, tenant string, ids []string) (kept []string, err error) {
	clusters, err := cs.Clusters(ctx, tenant)
	if err != nil {
		return nil, err
	}
	for _, c := range clusters {
		if !appliedAny(&c, ids) {
			continue
		}
		var f func(context.Context, json.RawMessage, []string) (json.RawMessage, error)
		for _, sys := range systems {
			if sys.Name() == c.System {
				f = forgetFunc(sys)
			}
		}
		if f == nil {
			kept = append(kept, c.ID)
			continue
		}
		if err := forgetIn(ctx, cs, f, tenant, c.ID, ids); err != nil {
			return kept, err
		}
	}
	return kept, nil
}

// forgetIn removes ids from one cluster, retrying when another update lands first.
func forgetIn(ctx context.Context, cs hippocam.ClusterStore, forget func(context.Context, json.RawMessage, []string) (json.RawMessage, error), tenant, id string, ids []string) error {
	_, err := Change(ctx, cs, tenant, id, func(c *hippocam.Cluster) (bool, error) {
		if !appliedAny(c, ids) {
			return false, nil
		}
		state, err := forget(ctx, c.State, ids)
		if err != nil {
			return false, fmt.Errorf("forget in cluster %s: %w", id, err)
		}
		n := len(c.Applied)
		c.Applied = slices.DeleteFunc(slices.Clone(c.Applied), func(a string) bool { return slices.Contains(ids, a) })
		c.Trajectories = max(0, c.Trajectories-(n-len(c.Applied)))
		c.State = state
		return true, nil
	})
	if hippocam.ErrorCode(err) == hippocam.ENOTFOUND {
		return nil // deleted meanwhile: nothing left to forget
	}
	return err
}

func appliedAny(c *hippocam.Cluster, ids []string) bool {
	for _, id := range ids {
		if c.HasApplied(id) {
			return true
		}
	}
	return false
}
