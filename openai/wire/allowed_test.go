package wire_test

import (
	"strings"

	"github.com/hippocam/hippocam"
	"testing"

	"github.com/hippocam/hippocam/openai/wire"
)

// An allowed_tools choice leaves the tools it does not list out of the conversation, in both
// OpenAI formats, and keeps its mode as the choice.
func TestAllowedTools(t *testing.T) {
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[` +
		`{"type":"function","function":{"name":"read","parameters":{"type":"object"}}},` +
		`{"type":"function","function":{"name":"write","parameters":{"type":"object"}}},` +
		`{"type":"custom","custom":{"name":"patch"}}],` +
		`"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[` +
		`{"type":"function","function":{"name":"read"}},{"type":"custom","custom":{"name":"patch"}}]}}}`
	conv, _, err := wire.ReadChatRequest([]byte(chat))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(conv.Tools); got != "read patch" || conv.ToolChoice != "required" {
		t.Errorf("chat: tools %q choice %q, want read patch, required", got, conv.ToolChoice)
	}
	resp := `{"model":"m","input":"hi","tools":[{"type":"function","name":"read","parameters":{"type":"object"}},` +
		`{"type":"function","name":"write","parameters":{"type":"object"}},{"type":"web_search"}],` +
		`"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"write"},{"type":"web_search"}]}}`
	rconv, err := wire.ReadResponsesRequest([]byte(resp))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(rconv.Tools); got != "write web_search" || rconv.ToolChoice != "auto" {
		t.Errorf("responses: tools %q choice %q, want write web_search, auto", got, rconv.ToolChoice)
	}
}

// toolNames lists the tools' names, space separated.
func toolNames(tools []hippocam.Tool) string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return strings.Join(names, " ")
}
