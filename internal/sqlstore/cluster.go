package sqlstore

import (
	"encoding/json"
	"fmt"

	"github.com/hippocam/hippocam"
)

// ClusterColumns are the clusters columns a cluster is read from, in the order ScanCluster's
// callers scan them: tenant, id, system, description, trajectories, applied, state, version,
// created_at, updated_at.
const ClusterColumns = `tenant, id, system, description, trajectories, applied, state, version, created_at, updated_at`

// AppliedColumn is the clusters.applied value of c: its Applied ids as a JSON array.
func AppliedColumn(c *hippocam.Cluster) string {
	if len(c.Applied) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(c.Applied) // strings always encode
	return string(b)
}

// ParseApplied reads a clusters.applied value; an empty array reads back nil.
func ParseApplied(col string) ([]string, error) {
	var ids []string
	if err := json.Unmarshal([]byte(col), &ids); err != nil {
		return nil, fmt.Errorf("applied ids: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, nil
}

// StateColumn is the clusters.state value of c, in the driver's Text type: nil (SQL NULL) for an
// empty state.
func StateColumn[T Text](c *hippocam.Cluster) *T {
	if len(c.State) == 0 {
		return nil
	}
	v := T(c.State)
	return &v
}

// ParseState reads a clusters.state value (nil for SQL NULL).
func ParseState[T Text](col *T) json.RawMessage {
	if col == nil || len(*col) == 0 {
		return nil
	}
	return json.RawMessage(*col)
}

// ClusterNotFound returns the ENOTFOUND error for a cluster id that is not stored.
func ClusterNotFound(id string) error {
	return hippocam.Errorf(hippocam.ENOTFOUND, "no cluster %q", id)
}

// ClusterExists returns the ECONFLICT error for creating a cluster whose id is taken.
func ClusterExists(id string) error {
	return hippocam.Errorf(hippocam.ECONFLICT, "cluster %q exists", id)
}

// ClusterVersionConflict returns the ECONFLICT error for an update from version from of a
// cluster stored at version.
func ClusterVersionConflict(id string, version, from int64) error {
	return hippocam.Errorf(hippocam.ECONFLICT, "cluster %q is at version %d, not %d", id, version, from)
}
