package sim

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/hippocam/hippocam"
)

// How the simulated JANUS, PRECIP and PALIM answer. Each reads the material of its request
// (engine/contract.go: system prompt, material, one final instruction) and calls its contract's
// tool. The words they write are chosen so that the simulation never mistakes them for a
// directive, a fact, a detail or an impression: every such line starts with "I ".

// Lines that name an undertaking. PRECIP opens every memory with an undertakingDone line and PALIM
// writes undertakingRun lines for work that no intent memory covers; PALIM carries both forward
// into later prefix memories.
const (
	undertakingDone = "I finished "
	undertakingRun  = "I worked through "
)

// answer is what the simulated model says: text, tool calls, or both. Complete gives the calls
// their ids.
type answer struct {
	content string
	calls   []hippocam.ToolCall
}

// callAnswer is an answer made of one call of tool with args encoded as JSON.
func callAnswer(tool string, args any) (answer, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		return answer{}, hippocam.Errorf(hippocam.EINTERNAL, "encode %s arguments: %v", tool, err)
	}
	return answer{calls: []hippocam.ToolCall{{Name: tool, Arguments: strings.TrimSpace(b.String())}}}, nil
}

// contractAnswer answers in the form the request asks for: with a response_format json_schema,
// the JSON object as the text (under a strict schema with null for every property it leaves
// out, as a strict model writes it); with a forced tool, a call of that tool; else a call of the
// contract's tool when the request offers it (and does not forbid tool calls), else the same
// JSON object as the text.
func contractAnswer(r *request, tool string, args any) (answer, error) {
	a, err := callAnswer(tool, args)
	if err != nil {
		return a, err
	}
	switch {
	case r.format != nil:
		text := a.calls[0].Arguments
		if r.format.Strict {
			if text, err = withNulls(text, r.format.Schema); err != nil {
				return answer{}, err
			}
		}
		return answer{content: text}, nil
	case r.forced != "" && r.offers(r.forced):
		a.calls[0].Name = r.forced
		return a, nil
	case r.offers(tool) && !r.noTools:
		return a, nil
	}
	return answer{content: a.calls[0].Arguments}, nil
}
