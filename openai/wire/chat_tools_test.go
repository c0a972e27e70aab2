package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
)

// TestReadChatCustomTools reads a chat request with a custom tool, a custom tool call in its
// history and a choice of that tool, and writes the call back in the chat form.
func TestReadChatCustomTools(t *testing.T) {
	custom := `{"type":"custom","custom":{"name":"apply_patch","description":"Edit files.","format":{"type":"grammar","grammar":{"syntax":"lark","definition":"start: x"}}}}`
	call := `{"id":"c1","type":"custom","custom":{"name":"apply_patch","input":"*** Begin Patch"}}`
	body := `{"model":"m","messages":[{"role":"user","content":"edit"},{"role":"assistant","content":null,"tool_calls":[` + call + `]},` +
		`{"role":"tool","tool_call_id":"c1","content":"done"},{"role":"user","content":"thanks"}],` +
		`"tools":[{"type":"function","function":{"name":"f"}},` + custom + `],"tool_choice":{"type":"custom","custom":{"name":"apply_patch"}}}`
	conv, _, err := wire.ReadChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.Tools) != 2 {
		t.Fatalf("tools %+v", conv.Tools)
	}
	tool := conv.Tools[1]
	if tool.Name != "apply_patch" || tool.Kind != hippocam.ToolCustom || string(tool.Raw) != custom ||
		string(tool.Parameters) != `{"type":"grammar","grammar":{"syntax":"lark","definition":"start: x"}}` {
		t.Errorf("custom tool read as %+v (raw %s)", tool, tool.Raw)
	}
	if conv.ToolChoice != "apply_patch" {
		t.Errorf("tool choice %q", conv.ToolChoice)
	}
	got := conv.Messages[1].ToolCalls
	if len(got) != 1 || got[0] != (hippocam.ToolCall{ID: "c1", Name: "apply_patch", Kind: hippocam.ToolCustom, Arguments: "*** Begin Patch"}) {
		t.Fatalf("custom call read as %+v", got)
	}
	b, _ := json.Marshal(wire.FromMessage(&conv.Messages[1]).ToolCalls)
	if string(b) != "["+call+"]" {
		t.Errorf("custom call written as %s, want [%s]", b, call)
	}
	other, _, err := wire.ReadChatRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search","user_location":{"type":"approximate"}}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if other.Tools[0].Kind != hippocam.ToolProvider || other.Tools[0].Name != "web_search" || other.ToolChoice != "required" {
		t.Errorf("tool %+v, choice %q", other.Tools[0], other.ToolChoice)
	}
}
