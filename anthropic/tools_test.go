package anthropic_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
)

// Claude Code's WebSearch tool and a bash tool, as a Messages client declares them.
const (
	webSearchTool = `{"type":"web_search_20250305","name":"web_search","max_uses":8,"allowed_domains":["go.dev"]}`
	bashTool      = `{"type":"bash_20250124","name":"bash"}`
)

// TestReadProviderTools reads Anthropic's own tools as provider tools that keep their bytes.
func TestReadProviderTools(t *testing.T) {
	body := `{"max_tokens":10,"tools":[{"name":"Read","input_schema":{"type":"object"}},` + webSearchTool + `,` + bashTool + `],` +
		`"tool_choice":{"type":"tool","name":"web_search"},"messages":[{"role":"user","content":"x"}]}`
	conv, err := anthropic.ReadRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.Tools) != 3 || conv.ToolChoice != "web_search" {
		t.Fatalf("tools %+v, choice %q", conv.Tools, conv.ToolChoice)
	}
	for i, want := range []struct {
		name string
		kind hippocam.ToolKind
		raw  string
	}{{"Read", hippocam.ToolFunction, ""}, {"web_search", hippocam.ToolProvider, webSearchTool}, {"bash", hippocam.ToolProvider, bashTool}} {
		got := conv.Tools[i]
		if got.Name != want.name || got.Kind != want.kind || string(got.Raw) != want.raw {
			t.Errorf("tools[%d] = %+v, want %+v", i, got, want)
		}
	}
}

// TestClientToolKinds sends tools of every kind to a Messages upstream: Anthropic's own tools
// byte for byte (the last one given the cache mark), a namespaced function under its flat name,
// a custom tool as a function with one string parameter, an OpenAI web_search left out; the
// history's calls under their upstream names and the answer's calls given back as declared.
func TestClientToolKinds(t *testing.T) {
	answer := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` +
		`{"type":"tool_use","id":"u1","name":"mcp__docs__search","input":{"query":"go"}},` +
		`{"type":"tool_use","id":"u2","name":"apply_patch","input":{"input":"*** Begin Patch"}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`
	up := newUpstream(t, reply(200, answer))
	c := newClient(t, up.srv.URL, func(cfg *anthropic.Config) { cfg.NoPromptCache = true })
	anth := hippocam.FormatAnthropic
	tools := []hippocam.Tool{
		{Name: "web_search", Kind: hippocam.ToolProvider, Type: "web_search_20250305", Format: anth, Raw: json.RawMessage(webSearchTool)},
		{Name: "search", Namespace: "mcp__docs__", Parameters: json.RawMessage(`{"type":"object"}`), Format: hippocam.FormatResponses, Raw: json.RawMessage(`{"type":"namespace"}`)},
		{Name: "apply_patch", Kind: hippocam.ToolCustom, Type: "custom", Format: hippocam.FormatResponses, Raw: json.RawMessage(`{"type":"custom","name":"apply_patch"}`)},
		{Name: "web_search_preview", Kind: hippocam.ToolProvider, Type: "web_search_preview", Format: hippocam.FormatResponses, Raw: json.RawMessage(`{"type":"web_search_preview"}`)},
		{Name: "bash", Kind: hippocam.ToolProvider, Type: "bash_20250124", Format: anth, Raw: json.RawMessage(bashTool)},
	}
	req := &hippocam.Request{Tools: tools, ToolChoice: "search", Messages: []hippocam.Message{
		{Role: hippocam.RoleUser, Content: "go"},
		{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{
			{ID: "c1", Name: "search", Namespace: "mcp__docs__", Arguments: `{"query":"x"}`},
			{ID: "c2", Name: "apply_patch", Kind: hippocam.ToolCustom, Arguments: "*** Begin Patch\n"}}},
		{Role: hippocam.RoleTool, ToolCallID: "c1", Content: "found"},
		{Role: hippocam.RoleTool, ToolCallID: "c2", Content: "done"},
	}}
	resp, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	body := string(up.bodies[0])
	for _, want := range []string{
		`"tools":[` + webSearchTool + `,{"name":"mcp__docs__search"`,
		`{"name":"apply_patch","description":"Pass the tool's input as free text in the \"input\" parameter.","input_schema":{"type":"object","properties":{"input"`,
		`,` + bashTool + `]`,
		`"tool_choice":{"type":"tool","name":"mcp__docs__search"}`,
		`{"type":"tool_use","id":"c1","name":"mcp__docs__search","input":{"query":"x"}}`,
		`{"type":"tool_use","id":"c2","name":"apply_patch","input":{"input":"*** Begin Patch\n"}}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("request body lacks %s\n%s", want, body)
		}
	}
	if strings.Contains(body, "web_search_preview") {
		t.Errorf("an OpenAI tool reached the Messages upstream:\n%s", body)
	}
	wantCalls := []hippocam.ToolCall{
		{ID: "u1", Name: "search", Namespace: "mcp__docs__", Arguments: `{"query":"go"}`},
		{ID: "u2", Name: "apply_patch", Kind: hippocam.ToolCustom, Arguments: "*** Begin Patch"},
	}
	for i, w := range wantCalls {
		if i >= len(resp.Message.ToolCalls) || resp.Message.ToolCalls[i] != w {
			t.Errorf("answer's calls %+v, want %+v", resp.Message.ToolCalls, wantCalls)
			break
		}
	}

	// With prompt caching, the last tool (bash) gets the mark, still with its own members.
	up2 := newUpstream(t, reply(200, okAnswer))
	c2 := newClient(t, up2.srv.URL)
	if _, err := c2.Complete(t.Context(), &hippocam.Request{Tools: tools, Messages: req.Messages[:1]}); err != nil {
		t.Fatal(err)
	}
	if body := string(up2.bodies[0]); !strings.Contains(body, `{"type":"bash_20250124","name":"bash","cache_control":{"type":"ephemeral"}}]`) {
		t.Errorf("last tool not marked for the cache:\n%s", body)
	}
}

// TestClientServerToolTurn sends an assistant turn that used a server tool in its own block
// order: the text that cites the search results after them.
func TestClientServerToolTurn(t *testing.T) {
	history := `{"model":"m","max_tokens":100,"tools":[` + webSearchTool + `],"messages":[{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":[{"type":"text","text":"Searching."},` +
		`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"weather"}},` +
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://w.example","title":"W","encrypted_content":"e"}]},` +
		`{"type":"text","text":"Sunny.","citations":[{"type":"web_search_result_location","url":"https://w.example","title":"W","encrypted_index":"i","cited_text":"sun"}]}]},` +
		`{"role":"user","content":"thanks"}]}`
	conv, err := anthropic.ReadRequest([]byte(history))
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t, reply(200, okAnswer))
	c := newClient(t, up.srv.URL, func(cfg *anthropic.Config) { cfg.NoPromptCache = true })
	if _, err := c.Complete(t.Context(), &hippocam.Request{Tools: conv.Tools, Messages: conv.Messages}); err != nil {
		t.Fatal(err)
	}
	body := string(up.bodies[0])
	order := []string{`"text":"Searching."`, `"type":"server_tool_use"`, `"type":"web_search_tool_result"`, `"text":"Sunny."`, `"cited_text":"sun"`}
	at := 0
	for _, w := range order {
		i := strings.Index(body[at:], w)
		if i < 0 {
			t.Fatalf("the assistant turn lacks %s after byte %d, or has it out of order:\n%s", w, at, body)
		}
		at += i
	}
}

// TestStreamedServerToolAnswer assembles a streamed answer that used a server tool: its blocks
// are kept, in order, as its origin, text and tool input assembled from their deltas.
func TestStreamedServerToolAnswer(t *testing.T) {
	events := strings.Join([]string{
		`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":0}}}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"w\"}"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":1}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Sunny."}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":2}`,
		`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`,
		`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
	}, "\n\n") + "\n\n"
	up := newUpstream(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, events)
	})
	c := newClient(t, up.srv.URL)
	resp, err := c.CompleteStream(t.Context(), userRequest("weather?"), nil)
	if err != nil {
		t.Fatal(err)
	}
	o := resp.Message.Origin
	if o == nil || !json.Valid([]byte(o.Raw)) {
		t.Fatalf("origin %+v", o)
	}
	for _, want := range []string{`"type":"server_tool_use"`, `"query":"w"`, `"type":"web_search_tool_result"`, `"text":"Sunny."`} {
		if !strings.Contains(o.Raw, want) {
			t.Errorf("origin lacks %s: %s", want, o.Raw)
		}
	}
}
