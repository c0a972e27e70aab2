package sim

import (
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// request is one decoded chat request together with what every role needs to know about its
// messages: which are recall calls and recall results, and the parsed lines of each.
type request struct {
	msgs  []hippocam.Message
	tools []hippocam.Tool
	// noTools is set when the request forbids tool calls (tool_choice "none").
	noTools bool
	// recallCall marks assistant messages that call the recall tool. The engine treats such a
	// message as a step in a recall exchange, not as an answer, and so does the simulation.
	recallCall []bool
	// recallResult marks tool messages answering a recall call made in the same request.
	recallResult []bool
	// memory marks consolidated messages: user messages whose text begins with a [ref:…] tag
	// (engine/contract.go). A memory stands for past work that was answered, so, like an answer,
	// it ends the stretch of messages whose directives still wait for one.
	memory []bool
	parsed [][]line
	done   []bool
}

func newRequest(msgs []hippocam.Message, tools []hippocam.Tool) *request {
	r := &request{
		msgs:         msgs,
		tools:        tools,
		recallCall:   make([]bool, len(msgs)),
		recallResult: make([]bool, len(msgs)),
		memory:       make([]bool, len(msgs)),
		parsed:       make([][]line, len(msgs)),
		done:         make([]bool, len(msgs)),
	}
	recallIDs := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case hippocam.RoleAssistant:
			for _, c := range m.ToolCalls {
				if c.Name == engine.RecallTool {
					r.recallCall[i] = true
					recallIDs[c.ID] = true
				}
			}
		case hippocam.RoleTool:
			r.recallResult[i] = m.ToolCallID != "" && recallIDs[m.ToolCallID]
		case hippocam.RoleUser:
			r.memory[i] = strings.HasPrefix(m.Content, "[ref:")
		}
	}
	return r
}

// lines returns the parsed lines of message i, parsing them on first use.
func (r *request) lines(i int) []line {
	if !r.done[i] {
		r.parsed[i], r.done[i] = readLines(r.msgs[i].Content), true
	}
	return r.parsed[i]
}

// directives reports whether the directives of message i count: it is a user or tool message
// and not a recall result.
func (r *request) directives(i int) bool {
	role := r.msgs[i].Role
	return (role == hippocam.RoleUser || role == hippocam.RoleTool) && !r.recallResult[i]
}

// offers reports whether the request offers the named tool.
func (r *request) offers(name string) bool {
	for _, t := range r.tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// frame splits a JANUS, PRECIP or PALIM request into its material, messages [lo, hi), and the
// text of the final instruction. The leading system messages are the component's prompt. The
// engine's framing (engine/contract.go) ends every such request with one user message; anything
// else is EINVALID, so that a framing mistake in the engine surfaces at once.
func (r *request) frame(role hippocam.CallRole) (lo, hi int, instruction string, err error) {
	n := len(r.msgs)
	if n == 0 || r.msgs[n-1].Role != hippocam.RoleUser {
		return 0, 0, "", hippocam.Errorf(hippocam.EINVALID, "a %s request must end with the instruction as a user message", role)
	}
	for lo < n-1 && r.msgs[lo].Role == hippocam.RoleSystem {
		lo++
	}
	instruction = r.msgs[n-1].Content
	if span := spanLength(instruction); span > 0 && n-1-span > lo {
		lo = n - 1 - span // the material is the last messages of the shared prefix
	}
	return lo, n - 1, instruction, nil
}

// spanLength reads "Span: the last N messages above." from an instruction (engine.SpanLine), or 0.
func spanLength(instruction string) int {
	for _, s := range strings.Split(instruction, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s), engine.SpanPrefix); ok {
			var n int
			if _, err := fmt.Sscanf(rest, "%d", &n); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// answered reports whether message i closes the stretch of answered messages: an answer (an
// assistant message that is not a recall call) or a consolidated memory, which replaced answered
// work. Directives before it have been acted on.
func (r *request) answered(i int) bool {
	return (r.msgs[i].Role == hippocam.RoleAssistant && !r.recallCall[i]) || r.memory[i]
}
