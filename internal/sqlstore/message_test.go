package sqlstore_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sqlstore"
)

// TestMessageArgs checks that nil fields become NULL and empty ones stay empty, for both Text
// types: pgx stores a nil []byte as NULL, so an empty Content or Extra must not become nil.
func TestMessageArgs(t *testing.T) {
	const content, extra = 3, 10
	empty := &hippocam.Message{ID: "m1", ToolCalls: []hippocam.ToolCall{}, Extra: json.RawMessage{}}
	t.Run("Bytes", func(t *testing.T) {
		args, err := sqlstore.MessageArgs[[]byte](empty)
		if err != nil {
			t.Fatal(err)
		}
		if b, ok := args[content].([]byte); !ok || b == nil {
			t.Errorf("content = %#v, want a non-nil []byte", args[content])
		}
		if b, ok := args[extra].([]byte); !ok || b == nil {
			t.Errorf("extra = %#v, want a non-nil []byte", args[extra])
		}
		if args[8] != nil || args[9] != nil {
			t.Errorf("knowledge, trace = %#v, %#v, want nil (NULL)", args[8], args[9])
		}
		if got := string(args[4].([]byte)); got != "[]" {
			t.Errorf("tool calls = %q, want []", got)
		}
	})
	t.Run("String", func(t *testing.T) {
		args, err := sqlstore.MessageArgs[string](empty)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := args[content].(string); !ok || s != "" {
			t.Errorf("content = %#v, want \"\"", args[content])
		}
		if s, ok := args[extra].(string); !ok || s != "" {
			t.Errorf("extra = %#v, want \"\"", args[extra])
		}
	})
}

// TestTrace checks that a trace reads back identical, keeping nil and empty slices apart and
// Extra byte for byte, in nested traces too.
func TestTrace(t *testing.T) {
	trace := []hippocam.Message{
		{ID: "a", Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, Content: "<&>", ToolCalls: []hippocam.ToolCall{},
			Extra: json.RawMessage(`{ "b" : "<" }`)},
		{ID: "b", Role: hippocam.RoleTool, Kind: hippocam.KindRaw, Knowledge: []hippocam.KnowledgeItem{}, Extra: json.RawMessage{},
			Trace: []hippocam.Message{{ID: "c", ToolCallID: "call", Tokens: 7}}},
	}
	b, err := sqlstore.EncodeTrace(trace)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sqlstore.DecodeTrace(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, trace) {
		t.Errorf("read back\n%#v\nwant\n%#v", got, trace)
	}
}
