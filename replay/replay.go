// Package replay runs a docs/sim.md scenario (scenario.Line values) through the engine, one step per
// user message or per complete set of tool results, and reports what happened: the answers to
// `!ask` questions, the largest request, usage, consolidations and the full expansion of the
// final context.
package replay

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/scenario"
)

// Report is the outcome of a replay. Its JSON is `hippocam replay --json`'s output.
type Report struct {
	Session       string `json:"session"`
	ContextWindow int    `json:"context_window"`
	// Answers are the agent's final texts after each user message containing "!ask", in order.
	Answers []string `json:"answers"`
	// AnswerRecalls holds, for each of those answers in order, the recall and search calls the
	// step made to reach it (0: it was answered from what was in view).
	AnswerRecalls []int `json:"answer_recalls"`
	// Reinforced counts the memories of recalled evidence written after answers.
	Reinforced int `json:"reinforced"`
	// MaxRequestTokens is the largest main-model request sent.
	MaxRequestTokens int `json:"max_request_tokens"`
	// Expanded is the full recursive expansion of the final context.
	Expanded []ExpandedMessage `json:"expanded"`
	// LLMCalls counts model calls by role.
	LLMCalls       map[hippocam.CallRole]int       `json:"llm_calls"`
	Usage          map[hippocam.CallRole]RoleUsage `json:"usage"`
	Consolidations hippocam.Consolidations         `json:"consolidations"`
	Steps          int                             `json:"steps"`
	RecallCalls    int                             `json:"recall_calls"`
	// FinalContext describes the context the model would see next.
	FinalContextMessages int      `json:"final_context_messages"`
	FinalContextTokens   int      `json:"final_context_tokens"`
	Stack                []string `json:"stack"`
	// EngineMillis is the engine's own time (wall time less the time spent in model calls).
	EngineMillis float64 `json:"engine_ms"`
	ModelMillis  float64 `json:"model_ms"`
}

// RoleUsage is one role's usage in a Report.
type RoleUsage struct {
	Calls       int     `json:"calls"`
	Input       int64   `json:"input"`
	CachedInput int64   `json:"cached_input"`
	Output      int64   `json:"output"`
	CostUSD     float64 `json:"cost_usd"`
}

// ExpandedMessage is one original message of the expansion.
type ExpandedMessage struct {
	ID         string              `json:"id"`
	Role       hippocam.Role       `json:"role"`
	Kind       hippocam.Kind       `json:"kind"`
	Content    string              `json:"content"`
	ToolCallID string              `json:"tool_call_id,omitempty"`
	ToolCalls  []hippocam.ToolCall `json:"tool_calls,omitempty"`
}

// Run replays lines into the session tenant/id of st (created if absent). A line that does not
// fit the conversation (a tool result with no pending call, a user message while calls wait for
// results) is an EINVALID error naming the line; an engine error stops the run, naming the line
// whose step failed.
func Run(ctx context.Context, e *engine.Engine, st hippocam.Store, tenant, id string, lines []scenario.Line) (*Report, error) {
	rep := &Report{Session: id, ContextWindow: e.Config().Window, Answers: []string{}, AnswerRecalls: []int{}, LLMCalls: map[hippocam.CallRole]int{}, Usage: map[hippocam.CallRole]RoleUsage{}}
	var pending []string // tool-call ids of the last answer still waiting for results
	var batch []hippocam.Message
	var engineTime, modelTime time.Duration
	step := func(line scenario.Line, msgs []hippocam.Message) error {
		res, err := e.Advance(ctx, st, tenant, id, engine.Input{Messages: msgs})
		if err != nil {
			return fmt.Errorf("line %d: %w", line.Number, err)
		}
		rep.Steps++
		rep.RecallCalls += res.RecallCalls
		rep.MaxRequestTokens = max(rep.MaxRequestTokens, res.MaxRequestTokens)
		engineTime += res.Elapsed - res.ModelTime
		modelTime += res.ModelTime
		pending = res.Answer.CallIDs()
		rep.Reinforced += res.Reinforced
		if line.Role == hippocam.RoleUser && asks(line.Content) {
			rep.Answers = append(rep.Answers, res.Answer.Content)
			rep.AnswerRecalls = append(rep.AnswerRecalls, res.RecallCalls)
		}
		return nil
	}
	for _, line := range lines {
		m := hippocam.Message{Role: line.Role, Kind: hippocam.KindRaw, Content: line.Content}
		switch line.Role {
		case hippocam.RoleTool:
			if len(pending) == 0 {
				return nil, hippocam.Errorf(hippocam.EINVALID, "line %d: a tool result, but the last answer has no tool call waiting for one", line.Number)
			}
			m.ToolCallID = pending[0]
			pending = pending[1:]
			batch = append(batch, m)
			if len(pending) == 0 {
				msgs := batch
				batch = nil
				if err := step(line, msgs); err != nil {
					return nil, err
				}
			}
		default:
			if len(pending) > 0 {
				return nil, hippocam.Errorf(hippocam.EINVALID, "line %d: a %s message, but %d tool call(s) of the last answer still wait for results", line.Number, line.Role, len(pending))
			}
			if err := step(line, []hippocam.Message{m}); err != nil {
				return nil, err
			}
		}
	}
	s, err := st.Session(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	expanded, err := hippocam.Expand(ctx, hippocam.SessionArchive(st, tenant, id), s.Context)
	if err != nil {
		return nil, fmt.Errorf("expand: %w", err)
	}
	rep.Expanded = make([]ExpandedMessage, len(expanded))
	for i, m := range expanded {
		rep.Expanded[i] = ExpandedMessage{ID: m.ID, Role: m.Role, Kind: m.Kind, Content: m.Content, ToolCallID: m.ToolCallID, ToolCalls: m.ToolCalls}
	}
	for _, role := range []hippocam.CallRole{hippocam.CallAgent, hippocam.CallJanus, hippocam.CallPrecip, hippocam.CallPalim} {
		rep.LLMCalls[role], rep.Usage[role] = 0, RoleUsage{} // every role is reported, called or not
	}
	for role, u := range s.Usage {
		rep.LLMCalls[role] = u.Calls
		rep.Usage[role] = RoleUsage(u)
	}
	rep.Consolidations = s.Consolidations
	rep.FinalContextMessages = len(s.Context)
	for _, m := range s.Context {
		rep.FinalContextTokens += m.Tokens
	}
	rep.Stack = s.Stack.Labels()
	rep.EngineMillis = float64(engineTime.Microseconds()) / 1000
	rep.ModelMillis = float64(modelTime.Microseconds()) / 1000
	return rep, nil
}

// asks reports whether a user message holds an `!ask` directive line.
func asks(content string) bool {
	for _, l := range strings.Split(content, "\n") {
		l = strings.TrimLeft(strings.TrimSpace(l), "-*• ")
		if strings.HasPrefix(l, "!ask ") {
			return true
		}
	}
	return false
}
