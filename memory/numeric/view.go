package numeric

import (
	"encoding/json"
	"strings"

	"github.com/hippocam/hippocam"
)

// View is a numeric cluster's state as the REST API and the viewer show it: where its
// configuration stands and why, the frozen bindings, what it learned from and refused, and the
// runtime's data as stored.
type View struct {
	Status   string          `json:"status"`
	Problem  string          `json:"problem,omitempty"`
	Warmup   string          `json:"warmup,omitempty"` // the warm-up trajectory's id, while warming
	Bindings json.RawMessage `json:"bindings,omitempty"`
	Events   int             `json:"events"`
	Sources  []string        `json:"sources"`
	Refused  []Refusal       `json:"refused"`
	Data     json.RawMessage `json:"data,omitempty"`
}

// ViewState renders any numeric system's state (a new cluster's is "new"). EINVALID for a
// state that is not a numeric system's.
func ViewState(raw json.RawMessage) (*View, error) {
	var st State[json.RawMessage, json.RawMessage]
	if len(raw) > 0 && string(raw) != "null" {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		if err := dec.Decode(&st); err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "numeric state: %v", err)
		}
	}
	v := &View{Status: st.Status, Problem: st.Problem, Events: st.Events, Sources: append([]string{}, st.Sources...),
		Refused: append([]Refusal{}, st.Refused...), Data: st.Data}
	if v.Status == "" {
		v.Status = "new"
	}
	if st.Warmup != nil {
		v.Warmup = st.Warmup.Source
	}
	if st.Bindings != nil {
		v.Bindings = *st.Bindings
	}
	return v, nil
}

// View renders state as ViewState does and counts its entries as Entries does.
func (s *System[B, X, D]) View(state json.RawMessage) (any, int, error) {
	v, err := ViewState(state)
	if err != nil {
		return nil, 0, err
	}
	return v, s.Entries(state), nil
}
