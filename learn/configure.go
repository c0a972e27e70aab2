package learn

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hippocam/hippocam"
)

// Configurer is a memory system that configures a cluster when a task starts, before the
// cluster is read: the numeric systems bind a cluster's fields to their roles on its first
// reuse (seed 003 B.1). Configure returns the new state and what happened ("configured",
// "failed"), or nil and "" when there was nothing to do. It must not change state in place.
type Configurer interface {
	Configure(ctx context.Context, state json.RawMessage, task *hippocam.Task) (json.RawMessage, string, error)
}

// Prepare readies the tenant's cluster id for task through sys before it is read: when sys is
// a Configurer, its Configure runs inside Change, so that of two tasks starting at once one
// configures and the other finds the cluster configured. It returns the cluster as it now is,
// and the configuration's result ("" when nothing was done).
func Prepare(ctx context.Context, cs hippocam.ClusterStore, sys hippocam.MemorySystem, tenant, id string, task *hippocam.Task) (*hippocam.Cluster, string, error) {
	cf, ok := sys.(Configurer)
	if !ok {
		c, err := cs.Cluster(ctx, tenant, id)
		return c, "", err
	}
	var result string
	c, err := Change(ctx, cs, tenant, id, func(c *hippocam.Cluster) (bool, error) {
		state, res, err := cf.Configure(ctx, c.State, task)
		if err != nil {
			return false, fmt.Errorf("configure cluster %s: %w", id, err)
		}
		result = res
		if state == nil {
			return false, nil
		}
		c.State = state
		return true, nil
	})
	return c, result, err
}
