package engine

import (
	"context"

	"github.com/hippocam/hippocam"
)

// Preview is the main-model request a step would send first, found without running the step.
type Preview struct {
	// Request is the request: Hippocam's system message, the agent's framing, the session's
	// context with the step's inputs appended, the agent's tools with recall and search.
	Request *hippocam.Request
	// Tokens is Request counted as the engine and the simulated model count it
	// (hippocam.RequestTokens with the engine's tokenizer, or the model client's own count when
	// it is a hippocam.RequestCounter).
	Tokens int
}

// Preview returns the first main-model request the step for in would send over s, changing
// nothing and calling no model: the inputs are appended (or the last answer set aside, for a
// regeneration) on a private copy of s. It leaves out what only the running step can decide:
// the folds that pressure control would run for room, and consolidation left pending by an
// earlier step, which can only shrink the request; and JANUS's own requests. A history whose last
// message is the assistant's is counted as it stands (nothing to answer yet). EINVALID for
// inputs that break the conversation's rules, as Step.
func (e *Engine) Preview(s *hippocam.Session, in Input) (*Preview, error) {
	st := e.newStep(s, nil, in)
	st.preview = true
	if in.Regenerate != "" {
		if err := st.branchAnswer(in.Regenerate); err != nil {
			return nil, err
		}
	} else if err := st.appendInputs(context.Background()); err != nil {
		return nil, err
	}
	req := st.agentRequest(st.recallOffered())
	n := hippocam.RequestTokens(e.tok, req.Messages, req.Tools)
	if rc, ok := e.model.(hippocam.RequestCounter); ok {
		n = rc.RequestTokens(e.tok, req) // as the upstream's format frames it
	}
	return &Preview{Request: req, Tokens: n}, nil
}
