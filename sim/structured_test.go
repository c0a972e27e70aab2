package sim_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
)

// janusStructured is a JANUS request that asks for its answer by response_format json_schema,
// with the contract's schema (made strict when strict is set and the schema is not already).
func janusStructured(t *testing.T, material string, schema json.RawMessage, strict bool) *wire.ChatRequest {
	t.Helper()
	req := chat(system("You are a component."), user(material), user("Evaluate the intent stack."))
	rf, err := wire.ResponseFormat(&hippocam.Structured{Name: engine.JanusTool, Schema: schema, Strict: strict})
	if err != nil {
		t.Fatal(err)
	}
	req.Extra = wire.Extra{"response_format": rf}
	return req
}

// With response_format json_schema the answer is the JSON object as text, even when the request
// offers the contract's tool; under a strict schema every property left out is there as null, in
// the schema's order. A schema that is not strict while strict is asked is refused, naming it.
func TestStructuredResponseFormat(t *testing.T) {
	m := mustModel(t)
	req := janusStructured(t, "hello", engine.JanusToolSpec.Parameters, true)
	req.Tools = withTools(chat(), engine.JanusToolSpec).Tools
	resp := complete(t, m, hippocam.CallJanus, req)
	if got := answerText(t, resp); got != `{"close":null,"open":null,"guidance":null}` {
		t.Errorf("skip answer %q", got)
	}
	if len(resp.Choices[0].Message.ToolCalls) != 0 {
		t.Errorf("a structured answer called a tool")
	}
	resp = complete(t, m, hippocam.CallJanus, janusStructured(t, "#open Read the exports | both are read\n!say go", engine.JanusToolSpec.Parameters, true))
	want := `{"close":null,"open":[{"label":"Read the exports","reason":null,"done":"both are read"}],"guidance":"`
	if got := answerText(t, resp); !strings.HasPrefix(got, want) {
		t.Errorf("opening answer %q, want it to begin %q", got, want)
	}
	// Numbers keep their text when nulls are filled in.
	rf, err := wire.ResponseFormat(&hippocam.Structured{Name: "n", Strict: true, Schema: json.RawMessage(`{"type":"object","properties":{"memory":{"type":"string"},"x":{"type":"number"}},"required":["memory"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(rf, &shape); err != nil {
		t.Fatal(err)
	}
	if got, err := sim.WithNulls(`{"memory":"I kept 0.20","x":0.20}`, shape.JSONSchema.Schema); err != nil || got != `{"memory":"I kept 0.20","x":0.20}` {
		t.Errorf("WithNulls: %s %v", got, err)
	}
	// Not strict: as the model writes it.
	resp = complete(t, m, hippocam.CallJanus, janusStructured(t, "hello", engine.JanusToolSpec.Parameters, false))
	if got := answerText(t, resp); got != `{}` {
		t.Errorf("non-strict skip %q", got)
	}
	// strict:true over a schema that is not strict.
	bad := janusStructured(t, "hello", engine.JanusToolSpec.Parameters, false)
	bad.Extra["response_format"] = json.RawMessage(`{"type":"json_schema","json_schema":{"name":"update_intents","strict":true,"schema":` + string(engine.JanusToolSpec.Parameters) + `}}`)
	if _, err := m.Complete(hippocam.CallJanus, bad); hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(err.Error(), "response_format") {
		t.Errorf("a non-strict schema under strict: %v", err)
	}
}

// SetRefuseStructured refuses response_format json_schema (chat) and a forced tool (Messages)
// with a 400 naming it, counts the refusals, and answers everything else.
func TestRefuseStructured(t *testing.T) {
	m := mustModel(t)
	m.SetRefuseStructured(true)
	e := endpoints(t, m)["Server"]
	status, body := e.post(t, "/chat/completions", hippocam.CallJanus, mustJSON(t, janusStructured(t, "hello", engine.JanusToolSpec.Parameters, true)))
	if status != http.StatusBadRequest || !strings.Contains(string(body), "response_format") {
		t.Fatalf("chat: %d %s", status, body)
	}
	forced := `{"model":"m","max_tokens":100,"system":"You are a component.","tools":[{"name":"update_intents","input_schema":` + string(engine.JanusToolSpec.Parameters) +
		`}],"tool_choice":{"type":"tool","name":"update_intents"},"messages":[{"role":"user","content":"hello\n\nEvaluate the intent stack."}]}`
	status, body = e.post(t, "/messages", hippocam.CallJanus, []byte(forced))
	if status != http.StatusBadRequest || !strings.Contains(string(body), "tool_choice") {
		t.Fatalf("messages: %d %s", status, body)
	}
	if n := m.StructuredRefusals(); n != 2 {
		t.Fatalf("%d refusals counted, want 2", n)
	}
	status, body = e.post(t, "/chat/completions", hippocam.CallJanus, mustJSON(t, chat(system("You are a component."), user("hello"), user("Evaluate the intent stack."))))
	if status != http.StatusOK {
		t.Fatalf("prose request: %d %s", status, body)
	}
	// Without the switch, the forced tool is answered by a call of it.
	m.SetRefuseStructured(false)
	status, body = e.post(t, "/messages", hippocam.CallJanus, []byte(forced))
	if status != http.StatusOK || !strings.Contains(string(body), `"type":"tool_use"`) || !strings.Contains(string(body), `"name":"update_intents"`) {
		t.Fatalf("forced tool: %d %s", status, body)
	}
}

// A component's Messages request whose last user turn holds the material's last user message and
// the instruction, one text block each (how the client sends consecutive user messages), is read
// as those two messages: JANUS sees the directive of the first.
func TestMessagesComponentTurnSplit(t *testing.T) {
	e := endpoints(t, mustModel(t))["Server"]
	body := `{"model":"m","max_tokens":100,"system":"You are a component.","messages":[{"role":"user","content":[` +
		`{"type":"text","text":"#open Read the exports | both are read\n!say go"},{"type":"text","text":"Evaluate the intent stack."}]}]}`
	status, out := e.post(t, "/messages", hippocam.CallJanus, []byte(body))
	if status != http.StatusOK || !strings.Contains(string(out), `Read the exports`) {
		t.Fatalf("%d %s", status, out)
	}
}
