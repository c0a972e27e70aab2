package sim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// Helpers shared by the tests of this package.

func mustModel(tb testing.TB) *sim.Model {
	tb.Helper()
	return sim.New(tokenizer.MustDefault())
}

func text(role hippocam.Role, content string) wire.ChatMessage {
	return wire.ChatMessage{Role: string(role), Content: wire.StringContent(content)}
}

func user(content string) wire.ChatMessage      { return text(hippocam.RoleUser, content) }
func assistant(content string) wire.ChatMessage { return text(hippocam.RoleAssistant, content) }
func system(content string) wire.ChatMessage    { return text(hippocam.RoleSystem, content) }

func toolResult(id, content string) wire.ChatMessage {
	m := text(hippocam.RoleTool, content)
	m.ToolCallID = id
	return m
}

// calling is an assistant message calling tools; each call is given as id, name, arguments.
func calling(calls ...[3]string) wire.ChatMessage {
	m := wire.ChatMessage{Role: string(hippocam.RoleAssistant)}
	for _, c := range calls {
		m.ToolCalls = append(m.ToolCalls, wire.ToolCall{ID: c[0], Type: "function", Function: wire.FunctionCall{Name: c[1], Arguments: c[2]}})
	}
	return m
}

// recalling is an assistant message calling recall on ref, with call id id.
func recalling(id, ref string) wire.ChatMessage {
	return calling([3]string{id, engine.RecallTool, `{"ref":"` + ref + `"}`})
}

func chat(msgs ...wire.ChatMessage) *wire.ChatRequest {
	return &wire.ChatRequest{Model: "test-model", Messages: msgs}
}

// withTools offers the given tools in req.
func withTools(req *wire.ChatRequest, tools ...hippocam.Tool) *wire.ChatRequest {
	for i := range tools {
		req.Tools = append(req.Tools, wire.FromTool(&tools[i]))
	}
	return req
}

// agentChat is a main-model request with the engine's memory system prompt and the recall tool.
func agentChat(msgs ...wire.ChatMessage) *wire.ChatRequest {
	all := append([]wire.ChatMessage{system("You are a helpful agent.")}, msgs...)
	return withTools(chat(all...), engine.RecallToolSpec)
}

// componentChat frames material as the engine frames a JANUS, PRECIP or PALIM request.
func componentChat(tool hippocam.Tool, instruction string, material ...wire.ChatMessage) *wire.ChatRequest {
	all := append([]wire.ChatMessage{system("You are a component.")}, material...)
	all = append(all, user(instruction))
	return withTools(chat(all...), tool)
}

func complete(tb testing.TB, m *sim.Model, role hippocam.CallRole, req *wire.ChatRequest) *wire.ChatResponse {
	tb.Helper()
	resp, err := m.Complete(role, req)
	if err != nil {
		tb.Fatalf("Complete(%s): %v", role, err)
	}
	if len(resp.Choices) != 1 {
		tb.Fatalf("Complete(%s): %d choices, want 1", role, len(resp.Choices))
	}
	return resp
}

// answerText returns the text of the answer.
func answerText(tb testing.TB, resp *wire.ChatResponse) string {
	tb.Helper()
	s, err := resp.Choices[0].Message.Text()
	if err != nil {
		tb.Fatalf("answer content: %v", err)
	}
	return s
}

// onlyCall returns the arguments of the answer's one tool call, which must call tool.
func onlyCall(tb testing.TB, resp *wire.ChatResponse, tool string) string {
	tb.Helper()
	msg := resp.Choices[0].Message
	if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != tool {
		tb.Fatalf("answer %s, want exactly one call of %s", show(msg), tool)
	}
	if got := resp.Choices[0].FinishReason; got != "tool_calls" {
		tb.Fatalf("finish reason %q, want tool_calls", got)
	}
	return msg.ToolCalls[0].Function.Arguments
}

// decodeCall decodes the arguments of the answer's one call of tool into v, strictly.
func decodeCall(tb testing.TB, resp *wire.ChatResponse, tool string, v any) {
	tb.Helper()
	dec := json.NewDecoder(strings.NewReader(onlyCall(tb, resp, tool)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		tb.Fatalf("arguments of %s: %v", tool, err)
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
