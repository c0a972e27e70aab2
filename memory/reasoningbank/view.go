package reasoningbank

import (
	"encoding/json"

	"github.com/hippocam/hippocam"
)

// StateView is a state as the REST API and the viewer show it: one record per trajectory learned
// from, in the order learned, each with its request, the judge's verdict and the notes (items)
// drawn from it. Its lists are never null.
type StateView struct {
	Records []Record `json:"records"`
}

// View renders state for the REST API. EINVALID for a state that is not this system's.
func View(state json.RawMessage) (*StateView, error) {
	st, err := decodeState(state)
	if err != nil {
		return nil, err
	}
	v := &StateView{Records: make([]Record, len(st.Records))}
	for i, r := range st.Records {
		r.Items = append([]Item{}, r.Items...)
		v.Records[i] = r
	}
	return v, nil
}

var _ hippocam.StateViewer = (*System)(nil)

// View renders state as View does and counts the items (notes) of its records.
func (s *System) View(state json.RawMessage) (any, int, error) {
	v, err := View(state)
	if err != nil {
		return nil, 0, err
	}
	n := 0
	for _, r := range v.Records {
		n += len(r.Items)
	}
	return v, n, nil
}
