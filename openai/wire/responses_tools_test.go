package wire_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
)

// TestReadResponsesToolKinds reads a tool list of every kind, as Codex sends it: functions, a
// custom tool with a grammar, a namespace of functions, a web_search and other tools the
// provider runs. None is refused; each keeps what an upstream needs and its bytes.
func TestReadResponsesToolKinds(t *testing.T) {
	ns := `{"type":"namespace","name":"mcp__docs__","description":"Docs.","tools":[{"type":"function","name":"search","parameters":{"type":"object"}},{"type":"custom","name":"note"}]}`
	custom := `{"type":"custom","name":"apply_patch","description":"Edit files.","format":{"type":"grammar","syntax":"lark","definition":"start: x"}}`
	web := `{"type":"web_search","external_web_access":false}`
	mcp := `{"type":"mcp","server_label":"deepwiki","server_url":"https://mcp.example/sse","require_approval":"never"}`
	body := `{"input":"hi","tools":[{"type":"function","name":"shell","parameters":{"type":"object"}},` + custom + `,` + ns + `,` + web + `,` + mcp + `,{"type":"local_shell"},{"type":"image_generation"}],"tool_choice":{"type":"custom","name":"apply_patch"}}`
	conv := mustRead(t, body)
	type want struct {
		name, ns string
		kind     hippocam.ToolKind
		raw      string
	}
	wants := []want{
		{"shell", "", hippocam.ToolFunction, ""},
		{"apply_patch", "", hippocam.ToolCustom, custom},
		{"search", "mcp__docs__", hippocam.ToolFunction, ns},
		{"note", "mcp__docs__", hippocam.ToolCustom, ns},
		{"web_search", "", hippocam.ToolProvider, web},
		{"mcp", "", hippocam.ToolProvider, mcp},
		{"local_shell", "", hippocam.ToolProvider, `{"type":"local_shell"}`},
		{"image_generation", "", hippocam.ToolProvider, `{"type":"image_generation"}`},
	}
	if len(conv.Tools) != len(wants) {
		t.Fatalf("got %d tools, want %d: %s", len(conv.Tools), len(wants), show(conv.Tools))
	}
	for i, w := range wants {
		got := conv.Tools[i]
		if got.Name != w.name || got.Namespace != w.ns || got.Kind != w.kind || string(got.Raw) != w.raw {
			t.Errorf("tools[%d] = %s, want %+v", i, show(got), w)
		}
	}
	if string(conv.Tools[1].Parameters) != `{"type":"grammar","syntax":"lark","definition":"start: x"}` {
		t.Errorf("custom tool parameters = %s, want its format", conv.Tools[1].Parameters)
	}
	if conv.ToolChoice != "apply_patch" {
		t.Errorf("tool choice %q, want apply_patch", conv.ToolChoice)
	}

	// The response echoes the tools as sent, a namespace once.
	resp := wire.NewResponse("r", "m", 0, nil, hippocam.CallUsage{}, "")
	resp.EchoRequest(conv)
	b, _ := json.Marshal(resp.Tools)
	// A function tool is echoed with strict (null: the conversation does not keep it), as the SDK types require.
	wantTools := `[{"type":"function","name":"shell","parameters":{"type":"object"},"strict":null},` + custom + `,` + ns + `,` + web + `,` + mcp + `,{"type":"local_shell"},{"type":"image_generation"}]`
	if string(b) != wantTools {
		t.Errorf("echoed tools\n%s\nwant\n%s", b, wantTools)
	}
	if string(resp.ToolChoice) != `{"name":"apply_patch","type":"custom"}` {
		t.Errorf("echoed tool_choice %s", resp.ToolChoice)
	}
}

// TestReadResponsesToolChoices reads every form of tool_choice the API accepts.
func TestReadResponsesToolChoices(t *testing.T) {
	for choice, want := range map[string]string{
		`"required"`:                                            "required",
		`{"type":"function","name":"f"}`:                        "f",
		`{"type":"custom","name":"apply_patch"}`:                "apply_patch",
		`{"type":"allowed_tools","mode":"required","tools":[]}`: "required",
		`{"type":"allowed_tools","mode":"auto","tools":[]}`:     "auto",
		`{"type":"web_search_preview"}`:                         "auto",
		`{"type":"file_search"}`:                                "auto",
		`{"type":"mcp","server_label":"x"}`:                     "auto",
	} {
		conv := mustRead(t, `{"input":"x","tool_choice":`+choice+`}`)
		if conv.ToolChoice != want {
			t.Errorf("tool_choice %s read as %q, want %q", choice, conv.ToolChoice, want)
		}
	}
}

// TestReadResponsesToolItems reads the history items of tools of every kind: a namespaced
// function call, a custom tool call and its output, a web search, a compaction, MCP and shell
// items. Calls become tool calls (custom ones with their input as it is), outputs tool
// messages, and the rest ride, byte for byte, on the assistant turn they belong to.
func TestReadResponsesToolItems(t *testing.T) {
	reasoning := `{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}`
	nsCall := `{"type":"function_call","name":"search","namespace":"mcp__docs__","arguments":"{\"query\":\"x\"}","call_id":"c1"}`
	nsOut := `{"type":"function_call_output","call_id":"c1","output":"found"}`
	patch := `{"type":"custom_tool_call","status":"completed","call_id":"c2","name":"apply_patch","input":"*** Begin Patch\n*** End Patch\n"}`
	patchOut := `{"type":"custom_tool_call_output","call_id":"c2","output":"Done!"}`
	web := `{"type":"web_search_call","status":"completed","action":{"type":"search","query":"weather"}}`
	mcp := `{"type":"mcp_call","id":"mcp_1","server_label":"deepwiki","name":"ask","arguments":"{}","output":"42"}`
	answer := `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}`
	compaction := `{"type":"compaction","encrypted_content":"zzz"}`
	conv := mustRead(t, items("", `{"role":"user","content":"go"}`, reasoning, nsCall, nsOut, patch, patchOut, web, mcp, answer, `{"role":"user","content":"more"}`, compaction, `{"role":"user","content":"again"}`))
	m := conv.Messages
	if len(m) != 9 {
		t.Fatalf("got %d messages, want 9: %s", len(m), show(m))
	}
	if c := m[1].ToolCalls; len(c) != 1 || c[0] != (hippocam.ToolCall{ID: "c1", Name: "search", Namespace: "mcp__docs__", Arguments: `{"query":"x"}`}) {
		t.Errorf("namespaced call read as %s", show(c))
	}
	if len(m[1].Parts) != 1 || m[1].Parts[0].Raw != reasoning || m[1].Origin.Raw != "["+reasoning+","+nsCall+"]" {
		t.Errorf("first turn %s", show(m[1]))
	}
	if m[2].Role != hippocam.RoleTool || m[2].ToolCallID != "c1" || m[2].Origin.Raw != nsOut {
		t.Errorf("function output read as %s", show(m[2]))
	}
	if c := m[3].ToolCalls; len(c) != 1 || c[0] != (hippocam.ToolCall{ID: "c2", Name: "apply_patch", Kind: hippocam.ToolCustom, Arguments: "*** Begin Patch\n*** End Patch\n"}) {
		t.Errorf("custom call read as %s", show(c))
	}
	if m[4].Role != hippocam.RoleTool || m[4].ToolCallID != "c2" || m[4].Content != "Done!" || m[4].Origin.Raw != patchOut {
		t.Errorf("custom output read as %s", show(m[4]))
	}
	if m[5].Content != "ok" || len(m[5].Parts) != 2 || m[5].Parts[0].Type != "web_search_call" || m[5].Parts[1].Raw != mcp ||
		m[5].Origin.Raw != "["+web+","+mcp+","+answer+"]" {
		t.Errorf("answer with provider items read as %s", show(m[5]))
	}
	if m[7].Role != hippocam.RoleAssistant || len(m[7].Parts) != 1 || m[7].Parts[0].Type != "compaction" || m[7].Origin.Raw != compaction {
		t.Errorf("compaction read as %s", show(m[7]))
	}
	if !strings.Contains(show(m[8]), "again") {
		t.Errorf("last message %s", show(m[8]))
	}
}

// TestResponseToolCallItems writes a namespaced function call and a custom tool call, whole and
// streamed: the items carry the namespace, a custom call its input, and the stream the events
// of each item type.
func TestResponseToolCallItems(t *testing.T) {
	answer := &hippocam.Message{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{
		{ID: "c1", Name: "search", Namespace: "mcp__docs__", Arguments: `{"query":"x"}`},
		{ID: "c2", Name: "apply_patch", Kind: hippocam.ToolCustom, Arguments: "*** Begin Patch\n"},
	}}
	resp := wire.NewResponse("r1", "m", 0, answer, hippocam.CallUsage{}, "")
	b, _ := json.Marshal(resp.Output)
	want := `[{"id":"fc_r1_0","type":"function_call","status":"completed","arguments":"{\"query\":\"x\"}","call_id":"c1","name":"search","namespace":"mcp__docs__"},` +
		`{"id":"fc_r1_1","type":"custom_tool_call","status":"completed","call_id":"c2","input":"*** Begin Patch\n","name":"apply_patch"}]`
	if string(b) != want {
		t.Fatalf("output\n%s\nwant\n%s", b, want)
	}
	var buf bytes.Buffer
	if err := wire.WriteResponseStream(&buf, &resp); err != nil {
		t.Fatal(err)
	}
	events, err := wire.ReadResponseEvents(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range events {
		types = append(types, ev.Type)
		if ev.Type == "response.custom_tool_call_input.done" && (ev.Input == nil || *ev.Input != "*** Begin Patch\n") {
			t.Errorf("custom_tool_call_input.done carries %v", ev.Input)
		}
		if ev.Type == "response.output_item.done" && ev.Item.Type == "function_call" && ev.Item.Namespace != "mcp__docs__" {
			t.Errorf("function call item done without its namespace: %+v", ev.Item)
		}
	}
	got := strings.Join(types, " ")
	for _, w := range []string{
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done",
		"response.output_item.added response.custom_tool_call_input.delta response.custom_tool_call_input.done response.output_item.done response.completed",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("events %q lack %q", got, w)
		}
	}
}
