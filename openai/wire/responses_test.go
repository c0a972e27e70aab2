package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
)

// mustRead reads a Responses request body and fails the test on an error.
func mustRead(t *testing.T, body string) *hippocam.Conversation {
	t.Helper()
	conv, err := wire.ReadResponsesRequest([]byte(body))
	if err != nil {
		t.Fatalf("ReadResponsesRequest: %v\n%s", err, body)
	}
	return conv
}

// items builds a request body around the given items, with odd whitespace between them.
func items(fields string, its ...string) string {
	return "{ \"model\" :\"m\",\n\t\"input\" : [\n  " + strings.Join(its, " ,\n\t ") + "  ]" + fields + " }"
}

func origin(raw string) *hippocam.Origin {
	return &hippocam.Origin{Format: hippocam.FormatResponses, Raw: raw}
}

func show(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestReadResponsesItems reads every item and part type, in a request spelled with odd
// whitespace, and checks each message and that its Origin holds the exact bytes sent.
func TestReadResponsesItems(t *testing.T) {
	dev := `{"role" : "developer",  "content": "Be terse."}`
	sys := `{ "type":"message","role":"system","content":[{"type":"input_text","text":"Tools first."}]}`
	userParts := `{"type": "message", "role": "user", "content": [
		{"type":"input_text", "text":"look at these"},
		{ "type" : "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low" },
		{"type":"input_image","file_id":"file-img","detail":"auto"},
		{"type":"input_image","image_url":"https://example.com/a.png"},
		{"type":"input_text","text":"and these"},
		{"type":"input_file","file_data":"data:application/pdf;base64,JVBERi0=","filename":"a.pdf"},
		{"type":"input_file","file_id":"file-pdf"},
		{"type":"input_file","file_url":"https://example.com/b.pdf"},
		{"type":"input_file","file_data":"JVBERi0=","filename":"c.pdf"},
		{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},
		{"type":"input_audio","input_audio":{"data":"SUQz","format":"mp3"}}]}`
	reasoning := `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"gAAA=="}`
	asst := `{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Reading.","annotations":[]},{"type":"refusal","refusal":"Not that."}]}`
	call1 := `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a\"}","status":"completed"}`
	call2 := `{"type":"function_call","call_id":"call_2","name":"read_file","arguments":"{\"path\":\"b\"}"}`
	out1 := `{"type":"function_call_output","call_id":"call_1","output":"contents of a"}`
	out2 := `{"type":"function_call_output","call_id":"call_2","id":"fco_2","status":"completed","output":[{"type":"input_text","text":"page 1"},{"type":"input_text","text":"page 2"},{"type":"input_image","image_url":"https://example.com/p.png"}]}`
	midDev := `{"role":"developer","content":"Now summarise."}`
	bare := `{"role":"user","content":"thanks"}`
	lone := `{"type":"function_call","call_id":"call_3","name":"done","arguments":"{}"}`
	body := items(`, "instructions" : "Be kind.\u00e9"`, dev, sys, userParts, reasoning, asst, call1, call2, out1, out2, midDev, bare, lone)
	conv := mustRead(t, body)

	wantFraming := []hippocam.Message{
		{Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: "Be kind.é", Origin: origin(`"Be kind.\u00e9"`)},
		{Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: "Be terse.", Origin: origin(dev)},
		{Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: "Tools first.", Origin: origin(sys)},
	}
	part := func(p hippocam.Part, raw string) hippocam.Part {
		p.Format, p.Raw = hippocam.FormatResponses, raw
		return p
	}
	// The parts' own bytes, as sliced out of their items.
	var userItem struct {
		Content []json.RawMessage `json:"content"`
	}
	var out2Item struct {
		Output []json.RawMessage `json:"output"`
	}
	if json.Unmarshal([]byte(userParts), &userItem) != nil || json.Unmarshal([]byte(out2), &out2Item) != nil {
		t.Fatal("test items are not JSON")
	}
	userRaw := userItem.Content
	wantMessages := []hippocam.Message{
		{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "look at these\nand these", Origin: origin(userParts), Parts: []hippocam.Part{
			part(hippocam.Part{Type: hippocam.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo=", Detail: "low"}, string(userRaw[1])),
			part(hippocam.Part{Type: hippocam.PartImage, FileID: "file-img", Detail: "auto"}, string(userRaw[2])),
			part(hippocam.Part{Type: hippocam.PartImage, URL: "https://example.com/a.png"}, string(userRaw[3])),
			part(hippocam.Part{Type: hippocam.PartFile, MediaType: "application/pdf", Data: "JVBERi0=", Name: "a.pdf"}, string(userRaw[5])),
			part(hippocam.Part{Type: hippocam.PartFile, FileID: "file-pdf"}, string(userRaw[6])),
			part(hippocam.Part{Type: hippocam.PartFile, URL: "https://example.com/b.pdf"}, string(userRaw[7])),
			part(hippocam.Part{Type: hippocam.PartFile, Data: "JVBERi0=", Name: "c.pdf"}, string(userRaw[8])),
			part(hippocam.Part{Type: hippocam.PartAudio, MediaType: "audio/wav", Data: "UklGRg=="}, string(userRaw[9])),
			part(hippocam.Part{Type: hippocam.PartAudio, MediaType: "audio/mpeg", Data: "SUQz"}, string(userRaw[10])),
		}},
		{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, Content: "Reading.\nNot that.",
			ToolCalls: []hippocam.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a"}`}, {ID: "call_2", Name: "read_file", Arguments: `{"path":"b"}`}},
			Parts:     []hippocam.Part{{Type: wire.PartReasoning, Format: hippocam.FormatResponses, Raw: reasoning}},
			Origin:    origin("[" + strings.Join([]string{reasoning, asst, call1, call2}, ",") + "]")},
		{Role: hippocam.RoleTool, Kind: hippocam.KindRaw, Content: "contents of a", ToolCallID: "call_1", Origin: origin(out1)},
		{Role: hippocam.RoleTool, Kind: hippocam.KindRaw, Content: "page 1\npage 2", ToolCallID: "call_2", Origin: origin(out2),
			Parts: []hippocam.Part{part(hippocam.Part{Type: hippocam.PartImage, URL: "https://example.com/p.png"}, string(out2Item.Output[2]))}},
		{Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: "Now summarise.", Origin: origin(midDev)},
		{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "thanks", Origin: origin(bare)},
		{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, ToolCalls: []hippocam.ToolCall{{ID: "call_3", Name: "done", Arguments: "{}"}}, Origin: origin(lone)},
	}
	if !reflect.DeepEqual(conv.Framing, wantFraming) {
		t.Errorf("framing %s\nwant %s", show(conv.Framing), show(wantFraming))
	}
	if len(conv.Messages) != len(wantMessages) {
		t.Fatalf("messages %s\nwant %s", show(conv.Messages), show(wantMessages))
	}
	for i := range wantMessages {
		if !reflect.DeepEqual(conv.Messages[i], wantMessages[i]) {
			t.Errorf("message %d: %s\nwant %s", i, show(conv.Messages[i]), show(wantMessages[i]))
		}
	}
	// Every raw text is a slice of the body, byte for byte (the assistant turn's array aside).
	for _, m := range append(append([]hippocam.Message{}, conv.Framing...), conv.Messages...) {
		if m.Role != hippocam.RoleAssistant && !strings.Contains(body, m.Origin.Raw) {
			t.Errorf("origin %q is not in the body", m.Origin.Raw)
		}
		for _, p := range m.Parts {
			if !strings.Contains(body, p.Raw) {
				t.Errorf("part %q is not in the body", p.Raw)
			}
		}
	}
	if conv.Format != hippocam.FormatResponses {
		t.Errorf("format %q", conv.Format)
	}
}

// TestReadResponsesTurns checks how assistant items group into messages, reasoning included.
func TestReadResponsesTurns(t *testing.T) {
	u := `{"role":"user","content":"u"}`
	a := `{"role":"assistant","content":"a"}`
	r := `{"type":"reasoning","id":"rs","summary":[]}`
	c := `{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`
	o := `{"type":"function_call_output","call_id":"c","output":"o"}`
	arr := func(s ...string) string { return "[" + strings.Join(s, ",") + "]" }
	tests := []struct {
		name  string
		input []string
		// want is each message's role and Origin.Raw.
		want [][2]string
	}{
		{"MessageThenCalls", []string{u, a, c, c, o}, [][2]string{{"user", u}, {"assistant", arr(a, c, c)}, {"tool", o}}},
		{"CallsAlone", []string{u, c, c}, [][2]string{{"user", u}, {"assistant", arr(c, c)}}},
		{"TwoMessages", []string{u, a, a}, [][2]string{{"user", u}, {"assistant", a}, {"assistant", a}}},
		{"MessageAfterCalls", []string{u, c, a}, [][2]string{{"user", u}, {"assistant", c}, {"assistant", a}}},
		{"ReasoningBeforeMessage", []string{u, r, a, c}, [][2]string{{"user", u}, {"assistant", arr(r, a, c)}}},
		{"ReasoningBetweenCalls", []string{u, c, r, c}, [][2]string{{"user", u}, {"assistant", arr(c, r, c)}}},
		{"ReasoningStartsNextTurn", []string{u, a, r, a}, [][2]string{{"user", u}, {"assistant", a}, {"assistant", arr(r, a)}}},
		{"TrailingReasoningJoinsTurn", []string{u, c, r, o}, [][2]string{{"user", u}, {"assistant", arr(c, r)}, {"tool", o}}},
		{"ReasoningAlone", []string{u, r, u}, [][2]string{{"user", u}, {"assistant", r}, {"user", u}}},
		{"ReasoningFirst", []string{r, u}, [][2]string{{"assistant", r}, {"user", u}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv := mustRead(t, items("", tt.input...))
			var got [][2]string
			for _, m := range conv.Messages {
				got = append(got, [2]string{string(m.Role), m.Origin.Raw})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q\nwant %q", got, tt.want)
			}
			for _, m := range conv.Messages {
				if m.Role == hippocam.RoleAssistant && json.Valid([]byte(m.Origin.Raw)) == false {
					t.Fatalf("origin %q is not JSON", m.Origin.Raw)
				}
			}
		})
	}
	// A reasoning item first is transcript: a system message after it is not framing.
	conv := mustRead(t, items("", r, `{"role":"system","content":"s"}`, u))
	if len(conv.Framing) != 0 || conv.Messages[1].Role != hippocam.RoleSystem {
		t.Fatalf("framing %s, messages %s", show(conv.Framing), show(conv.Messages))
	}
}

// TestReadResponsesFields checks the request fields: model, tools, tool choice, limits, store,
// previous response, and what is passed on verbatim.
func TestReadResponsesFields(t *testing.T) {
	body := `{"model":"gpt-x","input":"  hello ","stream":true,"store":false,"previous_response_id":"resp_9",
		"max_output_tokens":300,"temperature":0.70,"top_p":1,"user":"u-1","metadata":{"k":"<v>"},
		"parallel_tool_calls":false,"text":{"format":{"type":"text"}},"reasoning":{"effort":"low"},
		"truncation":"auto","include":["reasoning.encrypted_content"],"service_tier":"flex",
		"stream_options":{"include_obfuscation":false},
		"tools":[{"type":"function","name":"read_file","description":"reads","parameters":{"type":"object"},"strict":true},
		         {"type":"function","name":"noop","parameters":null}],
		"tool_choice":{"type":"function","name":"read_file"}}`
	conv := mustRead(t, body)
	want := &hippocam.Conversation{
		Format:   hippocam.FormatResponses,
		Messages: []hippocam.Message{{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "  hello ", Origin: origin(`"  hello "`)}},
		Tools: []hippocam.Tool{
			{Name: "read_file", Description: "reads", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "noop"},
		},
		ToolChoice: "read_file", Model: "gpt-x", MaxTokens: 300, Stream: true, Store: false, Previous: "resp_9",
		Extra: json.RawMessage(`{"include":["reasoning.encrypted_content"],"metadata":{"k":"<v>"},"parallel_tool_calls":false,` +
			`"reasoning":{"effort":"low"},"service_tier":"flex","temperature":0.70,"text":{"format":{"type":"text"}},` +
			`"top_p":1,"truncation":"auto","user":"u-1"}`),
	}
	if !reflect.DeepEqual(conv, want) {
		t.Fatalf("conversation %s\nwant %s", show(conv), show(want))
	}

	for choice, wantChoice := range map[string]string{`"auto"`: "auto", `"none"`: "none", `"required"`: "required", `null`: ""} {
		conv := mustRead(t, `{"input":"x","tool_choice":`+choice+`}`)
		if conv.ToolChoice != wantChoice || !conv.Store || conv.Extra != nil || conv.Stream {
			t.Errorf("tool_choice %s: %s", choice, show(conv))
		}
	}
	if conv := mustRead(t, `{"input":"x","store":null,"instructions":""}`); !conv.Store || len(conv.Framing) != 0 {
		t.Errorf("store null or empty instructions: %s", show(conv))
	}

	// The request type keeps what it does not know and writes it back.
	var req wire.ResponsesRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if hippocam.CanonicalJSON(string(out)) != hippocam.CanonicalJSON(body) {
		t.Fatalf("round trip\n%s\nwant\n%s", out, body)
	}
}

// TestReadResponsesInvalid checks that every malformed request is EINVALID, with a message that
// says where.
func TestReadResponsesInvalid(t *testing.T) {
	msg := func(content string) string { return items("", `{"role":"user","content":`+content+`}`) }
	tests := []struct {
		name, body, want string
	}{
		{"NotJSON", `{"input": [`, "not a valid Responses request"},
		{"NotObject", `["hi"]`, "not a valid Responses request"},
		{"BadUTF8", "{\"input\":\"\xff\"}", "not valid UTF-8"},
		{"LoneSurrogate", `{"input":"\ud800"}`, "surrogate"},
		{"NoInput", `{"model":"m"}`, "input: at least one item is required"},
		{"NullInput", `{"input":null}`, "input: at least one item is required"},
		{"EmptyString", `{"input":""}`, "input: at least one item is required"},
		{"EmptyArray", `{"input":[]}`, "input: at least one item is required"},
		{"InputNumber", `{"input":3}`, "input: must be a string or an array"},
		{"ItemNotObject", items("", `"hi"`), "input[0]: an item must be an object"},
		{"NoTypeNoRole", items("", `{"content":"x"}`), "input[0]: an item needs a type or a role"},
		{"ItemReference", items("", `{"type":"item_reference","id":"msg_1"}`), "input[0]: item_reference is not supported; send the items"},
		{"BareReference", items("", `{"id":"msg_1"}`), "input[0]: item_reference is not supported"},
		{"UnknownRole", items("", `{"role":"robot","content":"x"}`), `input[0]: unknown role "robot"`},
		{"MessageWithoutRole", items("", `{"type":"message","content":"x"}`), "input[0]: a message needs a role"},
		{"MessageWithoutContent", items("", `{"role":"user"}`), "input[0]: a message needs content"},
		{"ContentNumber", msg(`7`), "input[0].content: must be a string or an array of parts"},
		{"UnknownPart", items("", `{"role":"user","content":"x"}`, `{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"nonsense"}]}`), `input[1].content[1]: unknown content part type "nonsense"`},
		{"PartWithoutType", msg(`[{"text":"a"}]`), "input[0].content[0]: a content part needs a type"},
		{"PartNotObject", msg(`["a"]`), "input[0].content[0]: a content part must be an object"},
		{"ImageWithoutSource", msg(`[{"type":"input_image","detail":"low"}]`), "input[0].content[0]: an input_image needs an image_url or a file_id"},
		{"FileWithoutSource", msg(`[{"type":"input_file","filename":"a"}]`), "input[0].content[0]: an input_file needs"},
		{"AudioWithoutData", msg(`[{"type":"input_audio"}]`), "input[0].content[0]: an input_audio needs input_audio.data"},
		{"CallWithoutCallID", items("", `{"type":"function_call","name":"f","arguments":"{}"}`), "input[0]: a function_call needs a call_id"},
		{"CallWithoutName", items("", `{"type":"function_call","call_id":"c","arguments":"{}"}`), "input[0]: a function_call needs a name"},
		{"OutputWithoutCallID", items("", `{"type":"function_call_output","output":"x"}`), "input[0]: a function_call_output needs a call_id"},
		{"OutputWithoutOutput", items("", `{"type":"function_call_output","call_id":"c"}`), "input[0]: a function_call_output needs an output"},
		{"OutputBadPart", items("", `{"type":"function_call_output","call_id":"c","output":[{"type":"nonsense"}]}`), `input[0].output[0]: unknown content part type "nonsense"`},
		{"ArgumentsNotString", items("", `{"type":"function_call","call_id":"c","name":"f","arguments":{}}`), "input[0]:"},
		{"ToolWithoutType", `{"input":"x","tools":[{"name":"f"}]}`, "tools[0]: a tool needs a type"},
		{"CustomToolWithoutName", `{"input":"x","tools":[{"type":"custom"}]}`, "tools[0]: a custom tool needs a name"},
		{"NamespaceWithoutName", `{"input":"x","tools":[{"type":"namespace","tools":[]}]}`, "tools[0]: a namespace needs a name"},
		{"NamespaceOfHosted", `{"input":"x","tools":[{"type":"namespace","name":"n","tools":[{"type":"web_search"}]}]}`, `tools[0].tools[0]: a namespace holds function and custom tools, not "web_search"`},
		{"CustomCallWithoutCallID", items("", `{"type":"custom_tool_call","name":"apply_patch","input":"x"}`), "input[0]: a custom_tool_call needs a call_id"},
		{"CustomOutputWithoutOutput", items("", `{"type":"custom_tool_call_output","call_id":"c"}`), "input[0]: a custom_tool_call_output needs an output"},
		{"ToolWithoutName", `{"input":"x","tools":[{"type":"function","parameters":{}}]}`, "tools[0]: a function tool needs a name"},
		{"ToolChoiceUnknown", `{"input":"x","tool_choice":"sometimes"}`, `tool_choice: unknown value "sometimes"`},
		{"ToolChoiceNoName", `{"input":"x","tool_choice":{"type":"function"}}`, "tool_choice: a function choice needs a name"},
		{"ToolChoiceNumber", `{"input":"x","tool_choice":1}`, "tool_choice: must be a string or an object"},
		{"InstructionsNotString", `{"input":"x","instructions":["a"]}`, "instructions: must be a string"},
		{"NegativeMaxTokens", `{"input":"x","max_output_tokens":-1}`, "max_output_tokens"},
		{"WrongFieldType", `{"input":"x","model":5}`, "not a valid Responses request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv, err := wire.ReadResponsesRequest([]byte(tt.body))
			if err == nil {
				t.Fatalf("no error; conversation %s", show(conv))
			}
			if code := hippocam.ErrorCode(err); code != hippocam.EINVALID {
				t.Fatalf("code %q, want %q (%v)", code, hippocam.EINVALID, err)
			}
			if msg := hippocam.ErrorMessage(err); !strings.Contains(msg, tt.want) {
				t.Fatalf("message %q does not contain %q", msg, tt.want)
			}
		})
	}
}

// answer is an assistant answer with text and two calls, one of them with arguments longer
// than a stream piece and multi-byte characters.
func answer() *hippocam.Message {
	return &hippocam.Message{Role: hippocam.RoleAssistant, Content: strings.Repeat("Grüße, 世界! ", 12),
		ToolCalls: []hippocam.ToolCall{
			{ID: "call_a", Name: "read_file", Arguments: `{"path":"` + strings.Repeat("dé/", 40) + `x"}`},
			{ID: "call_b", Name: "noop", Arguments: ""},
		}}
}

func TestNewResponse(t *testing.T) {
	resp := wire.NewResponse("abc", "m", 1700000000, answer(), hippocam.CallUsage{Input: 100, CachedInput: 64, Output: 20}, "resp_prev")
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	a := answer()
	want := map[string]any{
		"id": "resp_abc", "object": "response", "created_at": 1700000000.0, "status": "completed", "model": "m",
		"error": nil, "incomplete_details": nil, "instructions": nil, "max_output_tokens": nil, "reasoning": nil,
		"parallel_tool_calls": true, "previous_response_id": "resp_prev", "store": true, "temperature": 1.0, "top_p": 1.0,
		"text": map[string]any{"format": map[string]any{"type": "text"}}, "tool_choice": "auto", "tools": []any{},
		"truncation": "disabled", "metadata": map[string]any{},
		"usage": map[string]any{"input_tokens": 100.0, "input_tokens_details": map[string]any{"cached_tokens": 64.0, "cache_write_tokens": 0.0},
			"output_tokens": 20.0, "output_tokens_details": map[string]any{"reasoning_tokens": 0.0}, "total_tokens": 120.0},
		"output": []any{
			map[string]any{"id": "msg_abc", "type": "message", "status": "completed", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": a.Content, "annotations": []any{}, "logprobs": []any{}}}},
			map[string]any{"id": "fc_abc_0", "type": "function_call", "status": "completed", "call_id": "call_a", "name": "read_file", "arguments": a.ToolCalls[0].Arguments},
			map[string]any{"id": "fc_abc_1", "type": "function_call", "status": "completed", "call_id": "call_b", "name": "noop", "arguments": ""},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("response %s\nwant %s", show(got), show(want))
	}
	var back wire.Response
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if b2, _ := json.Marshal(back); !bytes.Equal(b, b2) {
		t.Fatalf("read back and written again:\n%s\nwant\n%s", b2, b)
	}
	if u := back.Usage.CallUsage(); u != (hippocam.CallUsage{Input: 100, CachedInput: 64, Output: 20}) {
		t.Fatalf("usage %+v", u)
	}

	calls := wire.NewResponse("resp_x", "m", 0, &hippocam.Message{ToolCalls: a.ToolCalls}, hippocam.CallUsage{}, "")
	if len(calls.Output) != 2 || calls.Output[0].Type != "function_call" || calls.PreviousResponseID != nil {
		t.Fatalf("calls only: %s", show(calls))
	}
	empty := wire.NewResponse("resp_x", "m", 0, nil, hippocam.CallUsage{}, "")
	if len(empty.Output) != 1 || empty.Output[0].Type != "message" || empty.Output[0].Content[0].Text != "" {
		t.Fatalf("empty answer: %s", show(empty))
	}
}

func TestEchoRequest(t *testing.T) {
	conv := mustRead(t, `{"input":[{"role":"developer","content":"d"},{"role":"user","content":"u"}],"instructions":"Be <kind>.",
		"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":"required","max_output_tokens":50,
		"store":false,"temperature":0.2,"top_p":null,"parallel_tool_calls":false,"metadata":{"a":"b"},"truncation":"auto","user":"me"}`)
	resp := wire.NewResponse("resp_1", "m", 0, &hippocam.Message{Content: "hi"}, hippocam.CallUsage{}, "")
	resp.EchoRequest(conv)
	if string(resp.Instructions) != `"Be <kind>."` || len(resp.Tools) != 1 || resp.Tools[0].Name != "f" || string(resp.ToolChoice) != `"required"` ||
		resp.MaxOutputTokens == nil || *resp.MaxOutputTokens != 50 || resp.Store || string(resp.Temperature) != "0.2" || string(resp.TopP) != "1" ||
		resp.ParallelToolCalls || string(resp.Metadata) != `{"a":"b"}` || resp.Truncation != "auto" || string(resp.User) != `"me"` {
		t.Fatalf("echoed %s", show(resp))
	}
	// A function tool is echoed with parameters and strict, null when the request gave none.
	b, err := json.Marshal(resp.Tools[0])
	if err != nil || string(b) != `{"type":"function","name":"f","parameters":{"type":"object"},"strict":null}` {
		t.Fatalf("echoed tool %s (%v)", b, err)
	}
	conv.ToolChoice = "f"
	resp.EchoRequest(conv)
	if string(resp.ToolChoice) != `{"name":"f","type":"function"}` {
		t.Fatalf("tool_choice %s", resp.ToolChoice)
	}
}

// checkEvents checks the sequence numbers and that every delta is a whole-character piece of
// at most 64 bytes, and returns the events' types and the final response.
func checkEvents(t *testing.T, stream []byte) ([]wire.ResponseEvent, *wire.Response) {
	t.Helper()
	events, err := wire.ReadResponseEvents(bytes.NewReader(stream))
	if err != nil {
		t.Fatalf("ReadResponseEvents: %v\n%s", err, stream)
	}
	for i, ev := range events {
		if ev.SequenceNumber != i {
			t.Fatalf("event %d (%s) has sequence number %d", i, ev.Type, ev.SequenceNumber)
		}
		if ev.Delta != nil && (len(*ev.Delta) == 0 || len(*ev.Delta) > 64 || !utf8.ValidString(*ev.Delta)) {
			t.Fatalf("event %d: delta %q", i, *ev.Delta)
		}
	}
	if len(events) < 3 || events[0].Type != "response.created" || events[1].Type != "response.in_progress" {
		t.Fatalf("the stream does not begin with created, in_progress: %s", show(events))
	}
	if events[0].Response.Status != "in_progress" || len(events[0].Response.Output) != 0 || events[0].Response.Usage != nil {
		t.Fatalf("created announces %s", show(events[0].Response))
	}
	// The SDKs' types declare usage an object when present: a response in progress leaves it
	// out rather than sending null.
	if bytes.Contains(stream[:bytes.Index(stream, []byte("\n\n"))], []byte(`"usage"`)) {
		t.Fatalf("created carries a usage: %s", stream[:bytes.Index(stream, []byte("\n\n"))])
	}
	last := events[len(events)-1]
	if last.Type != "response.completed" || last.Response == nil {
		t.Fatalf("the stream does not end with response.completed: %s", show(last))
	}
	return events, last.Response
}

// replay rebuilds the output items from the events alone, as an SDK accumulates them.
func replay(t *testing.T, events []wire.ResponseEvent) []wire.OutputItem {
	t.Helper()
	var out []wire.OutputItem
	for _, ev := range events {
		switch ev.Type {
		case "response.output_item.added":
			if *ev.OutputIndex != len(out) {
				t.Fatalf("item added at %d, want %d", *ev.OutputIndex, len(out))
			}
			out = append(out, *ev.Item)
		case "response.content_part.added":
			it := &out[*ev.OutputIndex]
			if it.ID != ev.ItemID || *ev.ContentIndex != len(it.Content) {
				t.Fatalf("part added %s to %s", show(ev), show(it))
			}
			it.Content = append(it.Content, *ev.Part)
		case "response.output_text.delta":
			out[*ev.OutputIndex].Content[*ev.ContentIndex].Text += *ev.Delta
			if string(ev.Logprobs) != "[]" {
				t.Fatalf("delta without logprobs: %s", show(ev))
			}
		case "response.output_text.done":
			if got := out[*ev.OutputIndex].Content[*ev.ContentIndex].Text; got != *ev.Text {
				t.Fatalf("text done %q, deltas gave %q", *ev.Text, got)
			}
		case "response.function_call_arguments.delta":
			out[*ev.OutputIndex].Arguments += *ev.Delta
		case "response.function_call_arguments.done":
			if got := out[*ev.OutputIndex].Arguments; got != *ev.Arguments || out[*ev.OutputIndex].ID != ev.ItemID {
				t.Fatalf("arguments done %q, deltas gave %q", *ev.Arguments, got)
			}
			if ev.Name != out[*ev.OutputIndex].Name {
				t.Fatalf("arguments done names %q, the item %q", ev.Name, out[*ev.OutputIndex].Name)
			}
		case "response.output_item.done":
			acc := out[*ev.OutputIndex]
			acc.Status = ev.Item.Status
			if a, b := show(acc), show(ev.Item); a != b {
				t.Fatalf("item done %s, events gave %s", b, a)
			}
			out[*ev.OutputIndex] = *ev.Item
		}
	}
	return out
}

func TestWriteResponseStream(t *testing.T) {
	resp := wire.NewResponse("resp_s", "m", 5, answer(), hippocam.CallUsage{Input: 9, Output: 3}, "")
	var buf bytes.Buffer
	if err := wire.WriteResponseStream(&buf, &resp); err != nil {
		t.Fatal(err)
	}
	events, final := checkEvents(t, buf.Bytes())
	want, _ := json.Marshal(resp)
	if got, _ := json.Marshal(final); !bytes.Equal(got, want) {
		t.Fatalf("final response\n%s\nwant\n%s", got, want)
	}
	if got := replay(t, events); show(got) != show(resp.Output) {
		t.Fatalf("replayed output %s\nwant %s", show(got), show(resp.Output))
	}
	var types []string
	for _, ev := range events {
		if len(types) == 0 || types[len(types)-1] != ev.Type {
			types = append(types, ev.Type)
		}
	}
	wantTypes := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done",
		"response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	if !reflect.DeepEqual(types, wantTypes) {
		t.Fatalf("event types %q\nwant %q", types, wantTypes)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("event: response.created\ndata: {")) || !bytes.HasSuffix(buf.Bytes(), []byte("}\n\n")) {
		t.Fatalf("not server-sent events: %.60q … %.20q", buf.String(), buf.String()[buf.Len()-20:])
	}
}

// TestResponseStreamIncremental drives a stream as a proxy would, text arriving in odd pieces,
// and expects the same final response as the non-streamed one.
func TestResponseStreamIncremental(t *testing.T) {
	a := answer()
	u := hippocam.CallUsage{Input: 9, CachedInput: 0, Output: 3}
	resp := wire.NewResponse("resp_i", "m", 5, a, u, "")
	var buf bytes.Buffer
	s := wire.NewResponseStream(&buf)
	if err := s.Text("early"); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("Text before Start: %v", err)
	}
	start := resp
	if err := s.Start(&start); err != nil {
		t.Fatal(err)
	}
	for rest := a.Content; rest != ""; {
		n := min(len(rest), 100)
		for n < len(rest) && !utf8.RuneStart(rest[n]) {
			n++
		}
		if err := s.Text(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	for _, c := range a.ToolCalls {
		if err := s.ToolCall(c); err != nil {
			t.Fatal(err)
		}
	}
	final := resp
	final.Output = nil // the stream supplies what it sent
	if err := s.Finish(&final); err != nil {
		t.Fatal(err)
	}
	if err := s.Text("late"); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("Text after Finish: %v", err)
	}
	events, got := checkEvents(t, buf.Bytes())
	want, _ := json.Marshal(resp)
	if b, _ := json.Marshal(got); !bytes.Equal(b, want) {
		t.Fatalf("final response\n%s\nwant\n%s", b, want)
	}
	if out := replay(t, events); show(out) != show(resp.Output) {
		t.Fatalf("replayed output %s", show(out))
	}

	// An answer with no output at all still gets an (empty) message, as NewResponse gives it.
	buf.Reset()
	s = wire.NewResponseStream(&buf)
	empty := wire.NewResponse("resp_e", "m", 0, nil, u, "")
	s.Start(&empty)
	if err := s.Finish(&empty); err != nil {
		t.Fatal(err)
	}
	_, got = checkEvents(t, buf.Bytes())
	if show(got) != show(empty) {
		t.Fatalf("empty answer %s\nwant %s", show(got), show(empty))
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("gone") }

func TestResponseStreamWriteError(t *testing.T) {
	resp := wire.NewResponse("resp_f", "m", 0, answer(), hippocam.CallUsage{}, "")
	if err := wire.WriteResponseStream(failingWriter{}, &resp); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("error %v", err)
	}
}

func TestReadResponseEventsInvalid(t *testing.T) {
	for _, s := range []string{
		"event: response.created\ndata: {\"type\":\"response.completed\",\"sequence_number\":0}\n\n",
		"data: {nope}\n\n",
		"retry: 5\n\n",
	} {
		if _, err := wire.ReadResponseEvents(strings.NewReader(s)); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("%q: %v", s, err)
		}
	}
}

func TestWriteResponsesError(t *testing.T) {
	rec := httptest.NewRecorder()
	wire.WriteResponsesError(rec, 400, "invalid_request_error", "bad_thing", "it is <bad>")
	var body map[string]map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"message": "it is <bad>", "type": "invalid_request_error", "param": nil, "code": "bad_thing"}
	if rec.Code != 400 || rec.Header().Get("Content-Type") != "application/json" || !reflect.DeepEqual(body["error"], want) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	wire.WriteResponsesError(rec, 500, "server_error", "", "oops")
	if !strings.Contains(rec.Body.String(), `"code":null`) {
		t.Fatalf("empty code: %s", rec.Body)
	}
}

// A stream that breaks off ends with response.failed: the response as it stood, status
// "failed", its error's code and message, the output sent so far; no response.completed.
func TestResponseStreamFail(t *testing.T) {
	var buf bytes.Buffer
	s := wire.NewResponseStream(&buf)
	start := wire.NewResponse("resp_x", "m", 5, nil, hippocam.CallUsage{}, "")
	if err := s.Start(&start); err != nil {
		t.Fatal(err)
	}
	if err := s.Text("half an ans"); err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(&start, "context_length_exceeded", "too long"); err != nil {
		t.Fatal(err)
	}
	if err := s.Text("more"); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("Text after Fail: %v", err)
	}
	events, err := wire.ReadResponseEvents(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Type != "response.failed" || last.Response == nil {
		t.Fatalf("last event %+v, want response.failed with the response", last)
	}
	r := last.Response
	var e struct{ Code, Message string }
	if err := json.Unmarshal(r.Error, &e); err != nil || r.Status != "failed" || r.ID != "resp_x" || e.Code != "context_length_exceeded" || e.Message != "too long" {
		t.Fatalf("response %s %s, error %s", r.ID, r.Status, r.Error)
	}
	if len(r.Output) != 1 || r.Output[0].Status != "incomplete" || len(r.Output[0].Content) != 1 || r.Output[0].Content[0].Text != "half an ans" {
		t.Fatalf("output %s", show(r.Output))
	}
	for _, ev := range events {
		if ev.Type == "response.completed" || ev.Type == "error" {
			t.Fatalf("event %s in a failed stream", ev.Type)
		}
	}
}
