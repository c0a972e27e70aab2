package learn

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hippocam/hippocam"
)

// Configurer is a memory system that configures a cluster when a task starts, before the
// cluster is read: the numeric systems bind a cluster's fields to their roles on its first
// reuse (the Routed Continual Learning paper B.1). Configure returns the new state and what happened ("configured",
// "failed"), or nil and "" when there was nothing to do. It must not change state in place.
type Configurer interface {
	Configure(ctx context.Context, state json.RawMessage, task *hippocam.Task) (json.RawMessage, string, error)
}

// Prepare readies cluster c (as the caller just read it) for task through sys before it is
// read. When sys is a Configurer, Configure runs on c's state; only when it changed something is
// the new state committed, from c's version. When another update landed first, Configure runs
// again inside Change on the cluster as it now is, so that of two tasks starting at once one
// configures and the other finds the cluster configured. It returns the cluster as it now is
// (c itself when nothing changed: no further read), and the configuration's result ("" when
// nothing was done).
func Prepare(ctx context.Context, cs hippocam.ClusterStore, sys hippocam.MemorySystem, c *hippocam.Cluster, task *hippocam.Task) (*hippocam.Cluster, string, error) {
	cf, ok := sys.(Configurer)
	if !ok {
		return c, "", nil
	}
	state, result, err := cf.Configure(ctx, c.State, task)
	if err != nil {
		return nil, "", fmt.Errorf("configure cluster %s: %w", c.ID, err)
	}
	if state == nil {
		return c, "", nil
	}
	next := *c
	next.State = state
	err = cs.UpdateCluster(ctx, &next, c.Version)
	if err == nil {
		return &next, result, nil
	}
	if hippocam.ErrorCode(err) != hippocam.ECONFLICT {
		return nil, "", err
	}
	result = ""
	now, err := Change(ctx, cs, c.Tenant, c.ID, func(cur *hippocam.Cluster) (bool, error) {
		state, res, err := cf.Configure(ctx, cur.State, task)
		if err != nil {
			return false, fmt.Errorf("configure cluster %s: %w", c.ID, err)
		}
		result = res
		if state == nil {
			return false, nil
		}
		cur.State = state
		return true, nil
	})
	return now, result, err
}
