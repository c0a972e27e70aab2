package wire

import (
	"encoding/json"
	"testing"
)

// The assistant message of a completion carries content, refusal and annotations as the API
// sends them, keeping any it has already; the message given is not changed.
func TestAnswerMessage(t *testing.T) {
	for _, c := range []struct {
		name string
		in   ChatMessage
		want string
	}{
		{"Text", ChatMessage{Role: "assistant", Content: StringContent("hi")},
			`{"role":"assistant","content":"hi","annotations":[],"refusal":null}`},
		{"CallsOnly", ChatMessage{Role: "assistant", ToolCalls: []ToolCall{{ID: "c", Type: "function", Function: FunctionCall{Name: "f", Arguments: "{}"}}}},
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}],"annotations":[],"refusal":null}`},
		{"OwnMembers", ChatMessage{Role: "assistant", Content: StringContent(""), Extra: Extra{"refusal": json.RawMessage(`"no"`), "annotations": json.RawMessage(`[{"type":"url_citation"}]`)}},
			`{"role":"assistant","content":"","annotations":[{"type":"url_citation"}],"refusal":"no"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			extra := len(c.in.Extra)
			b, err := json.Marshal(AnswerMessage(c.in))
			if err != nil || string(b) != c.want {
				t.Errorf("got %s (%v)\nwant %s", b, err, c.want)
			}
			if len(c.in.Extra) != extra {
				t.Errorf("the message given was changed: %v", c.in.Extra)
			}
		})
	}
}
