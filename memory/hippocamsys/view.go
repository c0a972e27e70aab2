package hippocamsys

import (
	"encoding/json"

	"github.com/hippocam/hippocam"
)

// StateView is a state as the REST API and the viewer show it: the cluster session's context
// (what a task's advisory is read from) with its size in tokens, its intent stack, the
// trajectories absorbed in order, and how many messages lie archived beneath the context. Its
// lists are never null.
type StateView struct {
	Context       []hippocam.Message   `json:"context"`
	ContextTokens int                  `json:"context_tokens"`
	Stack         hippocam.IntentStack `json:"stack"`
	Absorbed      []Absorbed           `json:"absorbed"`
	Archived      int                  `json:"archived"`
}

// View renders state for the REST API; an empty state is a fresh cluster session. EINVALID for a
// state that is not this system's.
func View(state json.RawMessage) (*StateView, error) {
	st, err := Decode(state)
	if err != nil {
		return nil, err
	}
	v := &StateView{
		Context:  append([]hippocam.Message{}, st.Session.Context...),
		Stack:    append(hippocam.IntentStack{}, st.Session.Stack...),
		Absorbed: append([]Absorbed{}, st.Absorbed...),
	}
	for _, m := range v.Context {
		v.ContextTokens += m.Tokens
	}
	for _, kids := range st.Archive {
		v.Archived += len(kids)
	}
	return v, nil
}

var _ hippocam.StateViewer = (*System)(nil)

// View renders state as View does and counts the messages of the cluster session's context.
func (s *System) View(state json.RawMessage) (any, int, error) {
	v, err := View(state)
	if err != nil {
		return nil, 0, err
	}
	return v, len(v.Context), nil
}
