package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// errGaveUp marks a component whose answers kept breaking its contract.
type errGaveUp struct {
	role hippocam.CallRole
	last string
}

func (e *errGaveUp) Error() string {
	return fmt.Sprintf("%s: output broke the contract after every correction: %s", e.role, e.last)
}

// contractCall asks a component for one structured answer. The request is the component's system
// prompt, the material, and one final instruction message. The answer must be a call of tool;
// accept decodes and validates its arguments. When accept fails, the call is repeated with the
// instruction extended by the validation error and the rejected answer, at most Corrections
// times; after that, errGaveUp. Errors of the model itself are returned as they are.
func (st *step) contractCall(ctx context.Context, role hippocam.CallRole, system string, material []hippocam.Message, instruction string, tool hippocam.Tool, accept func(args string) error) error {
	msgs := make([]hippocam.Message, 0, len(material)+2)
	msgs = append(msgs, hippocam.Message{Role: hippocam.RoleSystem, Content: system})
	msgs = append(msgs, material...)
	text := instruction
	var problem string
	for attempt := 0; attempt <= st.e.cfg.Corrections; attempt++ {
		req := &hippocam.Request{
			Role:       role,
			Messages:   append(msgs, hippocam.Message{Role: hippocam.RoleUser, Content: text}),
			Tools:      []hippocam.Tool{tool},
			ToolChoice: tool.Name,
		}
		w := st.e.cfg.Window
		if n := hippocam.RequestTokens(st.e.tok, req.Messages, req.Tools); n+componentAnswerRoom(w) > w {
			return fmt.Errorf("%s: the request would need %d tokens and room to answer, more than the window of %d", role, n, w)
		}
		resp, err := st.call(ctx, req)
		if err != nil {
			return err
		}
		args, found := "", false
		for _, c := range resp.Message.ToolCalls {
			if c.Name == tool.Name {
				args, found = c.Arguments, true
				break
			}
		}
		answer := args
		if !found {
			problem = fmt.Sprintf("the answer did not call %s", tool.Name)
			answer = resp.Message.Content
		} else if err := accept(args); err != nil {
			problem = err.Error()
		} else {
			return nil
		}
		st.e.log.Warn("component output rejected", "role", role, "attempt", attempt+1, "problem", problem)
		text = instruction + "\n\nYour previous answer was rejected: " + clip(problem, 1000) +
			"\nIt was: " + clip(answer, 1000) +
			"\nCall " + tool.Name + " again with a corrected answer."
	}
	return &errGaveUp{role: role, last: problem}
}

// componentAnswerRoom is the room a JANUS, PRECIP or PALIM request keeps for the answer: an
// eighth of the window, at most 4,096 tokens.
func componentAnswerRoom(window int) int { return min(window/8, 4096) }

// componentFrame is what a component request adds to its material: the prompt, the tool and an
// instruction of typical length.
func (e *Engine) componentFrame(prompt string, tool hippocam.Tool) int {
	const instructionRoom = 200
	sys := []hippocam.Message{{Role: hippocam.RoleSystem, Content: prompt}}
	return hippocam.RequestTokens(e.tok, sys, []hippocam.Tool{tool}) + instructionRoom
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// decodeArgs reads a tool call's JSON arguments strictly: malformed or truncated JSON, or a
// value of the wrong shape, is a validation error quoted back to the model.
func decodeArgs(args string, v any) error {
	dec := json.NewDecoder(strings.NewReader(args))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments are not valid JSON for the schema: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("arguments hold more than one JSON value")
	}
	return nil
}
