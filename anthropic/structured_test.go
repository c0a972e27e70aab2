package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
)

var contract = &hippocam.Structured{Name: "write_memory", Description: "Write the memory.", Strict: true,
	Schema: json.RawMessage(`{"type":"object","properties":{"memory":{"type":"string"}},"required":["memory"]}`)}

// A structured request offers one tool, the contract, with its schema as input_schema, and forces
// it; the agent's tools it might carry are not sent. The answer's tool_use block comes back as a
// call of the contract with the input's bytes.
func TestStructuredForcedTool(t *testing.T) {
	const answer = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"tu_1","name":"write_memory","input":{"memory":"I read the file."}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`
	u := newUpstream(t, reply(200, answer))
	c := newClient(t, u.srv.URL, func(cfg *anthropic.Config) { cfg.NoPromptCache = true })
	req := userRequest("write it")
	req.Structured = contract
	req.Tools = []hippocam.Tool{{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}}
	req.ToolChoice = "none"
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Tools      []map[string]json.RawMessage `json:"tools"`
		ToolChoice json.RawMessage              `json:"tool_choice"`
	}
	if err := json.Unmarshal(u.bodies[0], &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Tools) != 1 || string(body.Tools[0]["name"]) != `"write_memory"` || string(body.Tools[0]["input_schema"]) != string(contract.Schema) ||
		string(body.Tools[0]["description"]) != `"Write the memory."` {
		t.Errorf("tools: %s", u.bodies[0])
	}
	if string(body.ToolChoice) != `{"type":"tool","name":"write_memory"}` {
		t.Errorf("tool_choice: %s", body.ToolChoice)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 1 || calls[0].Name != "write_memory" || calls[0].Arguments != `{"memory":"I read the file."}` {
		t.Errorf("answer: %+v", resp.Message)
	}
}

// A 400 naming tool_choice refuses the mode: a StructuredRefusal, remembered for the upstream
// and model, so the next structured request is not sent.
func TestStructuredRefusalRemembered(t *testing.T) {
	u := newUpstream(t, reply(400, `{"type":"error","error":{"type":"invalid_request_error","message":"tool_choice.type: forcing a tool is not supported by this model"}}`), reply(200, okAnswer))
	c := newClient(t, u.srv.URL)
	req := userRequest("x")
	req.Structured = contract
	var r *hippocam.StructuredRefusal
	if _, err := c.Complete(context.Background(), req); !errors.As(err, &r) || r.Remembered {
		t.Fatalf("first: %v", err)
	}
	if _, err := c.CompleteStream(context.Background(), req, nil); !errors.As(err, &r) || !r.Remembered {
		t.Fatalf("second: %v", err)
	}
	if _, err := c.Complete(context.Background(), userRequest("plain")); err != nil {
		t.Fatal(err)
	}
	if u.calls() != 2 {
		t.Fatalf("%d requests sent, want 2", u.calls())
	}
}

// A request without tools whose history calls tools (a role request in prose) declares the tools
// it names, with tool_choice none, since the API refuses tool blocks in a request without tools.
func TestHistoryToolsDeclared(t *testing.T) {
	u := newUpstream(t, reply(200, okAnswer), reply(200, okAnswer))
	c := newClient(t, u.srv.URL, func(cfg *anthropic.Config) { cfg.NoPromptCache = true })
	req := &hippocam.Request{Role: hippocam.CallPrecip, Messages: []hippocam.Message{
		{Role: hippocam.RoleUser, Content: "read a"},
		{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a"}`}}},
		{Role: hippocam.RoleTool, ToolCallID: "c1", Content: "A"},
		{Role: hippocam.RoleUser, Content: "Request for PRECIP"},
	}}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Tools      []map[string]json.RawMessage `json:"tools"`
		ToolChoice json.RawMessage              `json:"tool_choice"`
	}
	if err := json.Unmarshal(u.bodies[0], &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Tools) != 1 || string(body.Tools[0]["name"]) != `"read_file"` || string(body.ToolChoice) != `{"type":"none"}` {
		t.Errorf("tools %v, tool_choice %s", body.Tools, body.ToolChoice)
	}
	// Without tool blocks, no tools.
	if _, err := c.Complete(context.Background(), userRequest("hi")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(u.bodies[1]), `"tools"`) {
		t.Errorf("tools declared without tool blocks: %s", u.bodies[1])
	}
}
