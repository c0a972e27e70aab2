package sim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
)

var readFile = hippocam.Tool{Name: "read_file", Description: "Read a file.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}

// conversation is one exchange written in both formats: a chat request and a Responses body.
type conversation struct {
	name string
	role hippocam.CallRole
	chat *wire.ChatRequest
	// calls is how many tool calls the answer makes.
	calls int
	// responses is the Responses body without "stream".
	responses map[string]any
}

// responsesTools writes tools in the Responses shape.
func responsesTools(tools ...hippocam.Tool) []any {
	var out []any
	for _, t := range tools {
		out = append(out, map[string]any{"type": "function", "name": t.Name, "description": t.Description, "parameters": t.Parameters})
	}
	return out
}

func conversations() []conversation {
	first := "!say reading\n!call read_file {\"path\":\"a\"}"
	last := "!say finished: " + strings.Repeat("ünïcödé text ", 12) + "\n!call read_file {\"path\":\"" + strings.Repeat("deep/", 20) + "b\"}"
	asst := calling([3]string{"call_1", "read_file", `{"path":"a"}`})
	asst.Content = wire.StringContent("reading")
	return []conversation{
		{
			name:  "AgentWithTools",
			calls: 1,
			chat: withTools(chat(system("You are a helpful agent."), system("Be brief."), user(first), asst,
				toolResult("call_1", "contents of a"), user(last)), readFile),
			responses: map[string]any{
				"model":        "test-model",
				"instructions": "You are a helpful agent.",
				"tools":        responsesTools(readFile),
				"input": []any{
					map[string]any{"role": "developer", "content": "Be brief."},
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": first}}},
					map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "reading", "annotations": []any{}}}},
					map[string]any{"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": `{"path":"a"}`},
					map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "contents of a"},
					map[string]any{"role": "user", "content": last},
				},
			},
		},
		{
			name:      "TextOnly",
			chat:      chat(user("!say hello, world")),
			responses: map[string]any{"model": "test-model", "input": "!say hello, world"},
		},
		{
			name:  "Janus",
			role:  hippocam.CallJanus,
			calls: 1,
			chat:  componentChat(engine.JanusToolSpec, janusInstruction, user("#open A | a holds")),
			responses: map[string]any{
				"model":        "test-model",
				"instructions": "You are a component.",
				"tools":        responsesTools(engine.JanusToolSpec),
				"input": []any{
					map[string]any{"role": "user", "content": "#open A | a holds"},
					map[string]any{"role": "user", "content": janusInstruction},
				},
			},
		},
	}
}

// sameAnswer checks that a Responses answer says what a chat answer says: text, tool calls
// (name and arguments; ids derive from the request) and usage.
func sameAnswer(t *testing.T, resp *wire.Response, want *wire.ChatResponse) {
	t.Helper()
	wantText, _ := want.Choices[0].Message.Text()
	var text string
	var calls, wantCalls [][2]string
	for _, it := range resp.Output {
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				text += c.Text
			}
		case "function_call":
			calls = append(calls, [2]string{it.Name, it.Arguments})
		}
	}
	for _, c := range want.Choices[0].Message.ToolCalls {
		wantCalls = append(wantCalls, [2]string{c.Function.Name, c.Function.Arguments})
	}
	if text != wantText || !reflect.DeepEqual(calls, wantCalls) {
		t.Fatalf("responses answer %q %q\nchat answer %q %q", text, calls, wantText, wantCalls)
	}
	u := resp.Usage
	if u == nil || u.InputTokens != want.Usage.PromptTokens || u.OutputTokens != want.Usage.CompletionTokens ||
		u.InputTokensDetails.CachedTokens != want.Usage.PromptTokensDetails.CachedTokens || u.TotalTokens != want.Usage.TotalTokens {
		t.Fatalf("responses usage %s, chat usage %s", show(u), show(want.Usage))
	}
}

// TestHTTPResponses sends each conversation as a chat request and as a Responses request, plain
// and streamed, to fresh models, and expects the same answer every way.
func TestHTTPResponses(t *testing.T) {
	for name := range endpoints(t, mustModel(t)) {
		t.Run(name, func(t *testing.T) {
			for _, c := range conversations() {
				t.Run(c.name, func(t *testing.T) {
					fresh := func() endpoint { return endpoints(t, mustModel(t))[name] }
					status, body := fresh().post(t, "/chat/completions", c.role, mustJSON(t, c.chat))
					if status != http.StatusOK {
						t.Fatalf("chat status %d: %s", status, body)
					}
					var want wire.ChatResponse
					if err := json.Unmarshal(body, &want); err != nil {
						t.Fatal(err)
					}
					if n := len(want.Choices[0].Message.ToolCalls); n != c.calls {
						t.Fatalf("the chat answer makes %d calls, want %d: %s", n, c.calls, body)
					}

					status, plain := fresh().post(t, "/responses", c.role, mustJSON(t, c.responses))
					if status != http.StatusOK {
						t.Fatalf("responses status %d: %s", status, plain)
					}
					var resp wire.Response
					if err := json.Unmarshal(plain, &resp); err != nil {
						t.Fatal(err)
					}
					if resp.Object != "response" || resp.Status != "completed" || resp.Model != "test-model" || !strings.HasPrefix(resp.ID, "resp_") {
						t.Fatalf("response %s", plain)
					}
					if len(resp.Tools) != len(c.chat.Tools) || string(resp.ToolChoice) != `"auto"` {
						t.Fatalf("the response does not echo the request's tools: %s", plain)
					}
					sameAnswer(t, &resp, &want)

					streamed := map[string]any{"stream": true, "stream_options": map[string]any{"include_obfuscation": false}}
					for k, v := range c.responses {
						streamed[k] = v
					}
					e := fresh()
					status, stream := e.post(t, "/responses", c.role, mustJSON(t, streamed))
					if status != http.StatusOK {
						t.Fatalf("stream status %d: %s", status, stream)
					}
					final := completed(t, stream)
					if !bytes.Equal(final, bytes.TrimSpace(plain)) {
						t.Fatalf("streamed final response\n%s\nwant the plain one\n%s", final, plain)
					}
				})
			}
		})
	}
}

// completed checks a Responses event stream (event names, sequence numbers, text and arguments
// rebuilt from the deltas) and returns the raw response of its response.completed event.
func completed(t *testing.T, stream []byte) []byte {
	t.Helper()
	events, err := wire.ReadResponseEvents(bytes.NewReader(stream))
	if err != nil {
		t.Fatalf("%v\n%s", err, stream)
	}
	text, args := map[string]string{}, map[string]string{}
	for i, ev := range events {
		if ev.SequenceNumber != i {
			t.Fatalf("event %d has sequence number %d", i, ev.SequenceNumber)
		}
		switch ev.Type {
		case "response.output_text.delta":
			text[ev.ItemID] += *ev.Delta
		case "response.output_text.done":
			if text[ev.ItemID] != *ev.Text {
				t.Fatalf("text %q, deltas gave %q", *ev.Text, text[ev.ItemID])
			}
		case "response.function_call_arguments.delta":
			args[ev.ItemID] += *ev.Delta
		case "response.function_call_arguments.done":
			if args[ev.ItemID] != *ev.Arguments {
				t.Fatalf("arguments %q, deltas gave %q", *ev.Arguments, args[ev.ItemID])
			}
		}
	}
	if len(events) == 0 || events[0].Type != "response.created" || events[len(events)-1].Type != "response.completed" {
		t.Fatalf("stream %s", stream)
	}
	i := bytes.LastIndex(stream, []byte("event: response.completed\ndata: "))
	var ev struct {
		Response json.RawMessage `json:"response"`
	}
	if i < 0 || json.Unmarshal(bytes.TrimSpace(stream[i+len("event: response.completed\ndata: "):]), &ev) != nil {
		t.Fatalf("no readable response.completed event in %s", stream)
	}
	return ev.Response
}

// TestHTTPResponsesDigest checks that "stream" does not change the answer's ids, and that the
// content does.
func TestHTTPResponsesDigest(t *testing.T) {
	e := endpoints(t, mustModel(t))["Transport"]
	id := func(body string) string {
		t.Helper()
		status, b := e.post(t, "/responses", "", []byte(body))
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, b)
		}
		if strings.HasPrefix(string(b), "event: ") {
			b = completed(t, b)
		}
		var r wire.Response
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	a := id(`{"input":"!say hi","model":"m"}`)
	if b := id(`{"model":"m", "stream": true, "input":"!say hi"}`); b != a {
		t.Fatalf("streamed id %s, plain %s", b, a)
	}
	if b := id(`{"model":"m","input":"!say hi","stream":false}`); b != a {
		t.Fatalf("stream:false id %s, plain %s", b, a)
	}
	if b := id(`{"model":"m","input":"!say ho"}`); b == a {
		t.Fatal("different content, same id")
	}
}

func TestHTTPResponsesErrors(t *testing.T) {
	tests := []struct {
		name   string
		method string
		role   hippocam.CallRole
		body   string
		status int
		want   string
	}{
		{"Previous", http.MethodPost, "", `{"input":"hi","previous_response_id":"resp_1"}`, http.StatusBadRequest,
			"the simulated model keeps no responses; send the whole input"},
		{"Conversation", http.MethodPost, "", `{"input":"hi","conversation":"conv_1"}`, http.StatusBadRequest, "keeps no responses"},
		{"MalformedJSON", http.MethodPost, "", `{"input": [`, http.StatusBadRequest, "not a valid Responses request"},
		{"UnknownPart", http.MethodPost, "", `{"input":[{"role":"user","content":[{"type":"nonsense"}]}]}`, http.StatusBadRequest,
			`input[0].content[0]: unknown content part type "nonsense"`},
		{"ToolWithoutType", http.MethodPost, "", `{"input":"hi","tools":[{"name":"f"}]}`, http.StatusBadRequest, "a tool needs a type"},
		{"EmptyInput", http.MethodPost, "", `{"input":[]}`, http.StatusBadRequest, "input: at least one item is required"},
		{"UnknownCallRole", http.MethodPost, "oracle", `{"input":"hi"}`, http.StatusBadRequest, "unknown call role"},
		{"ComponentWithoutInstruction", http.MethodPost, hippocam.CallPrecip, `{"input":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]}`,
			http.StatusBadRequest, "must end with the instruction"},
		{"WrongMethod", http.MethodGet, "", "", http.StatusMethodNotAllowed, "use POST"},
	}
	for name, e := range endpoints(t, mustModel(t)) {
		t.Run(name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					req, _ := http.NewRequest(tt.method, e.base+"/responses", strings.NewReader(tt.body))
					if tt.role != "" {
						req.Header.Set(hippocam.RoleHeader, string(tt.role))
					}
					status, body := e.do(t, req)
					var er wire.ErrorResponse
					if status != tt.status || json.Unmarshal(body, &er) != nil || er.Error.Type == "" || !strings.Contains(er.Error.Message, tt.want) {
						t.Fatalf("status %d (want %d), body %s (want a message with %q)", status, tt.status, body, tt.want)
					}
				})
			}
		})
	}
}
