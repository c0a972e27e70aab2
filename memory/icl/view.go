package icl

import (
	"encoding/json"

	"github.com/hippocam/hippocam"
)

// StateView is a state as the REST API and the viewer show it: the trajectories the cluster
// keeps, oldest first, each as its request, the answer and the feedback. The list is never null.
type StateView struct {
	Trajectories []Entry `json:"trajectories"`
}

// View renders state for the REST API. EINVALID for a state that is not this system's.
func View(state json.RawMessage) (*StateView, error) {
	st, err := Decode(state)
	if err != nil {
		return nil, err
	}
	return &StateView{Trajectories: append([]Entry{}, st.Trajectories...)}, nil
}

var _ hippocam.StateViewer = (*System)(nil)

// View renders state as View does and counts the trajectories it keeps.
func (s *System) View(state json.RawMessage) (any, int, error) {
	v, err := View(state)
	if err != nil {
		return nil, 0, err
	}
	return v, len(v.Trajectories), nil
}
