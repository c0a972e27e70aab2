package wire

import (
	"errors"
	"testing"
)

func TestChunkAssembler(t *testing.T) {
	s := func(v string) *string { return &v }
	i := func(v int) *int { return &v }
	var a ChunkAssembler
	for _, ch := range []ChatChunk{
		{Choices: []ChunkChoice{{Delta: Delta{Role: "assistant", Content: s("")}}}},
		{Choices: []ChunkChoice{{Delta: Delta{Content: s("hel")}}, {Index: 1, Delta: Delta{Content: s("other")}}}},
		{Choices: []ChunkChoice{{Delta: Delta{Content: s("lo")}}}},
		{Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCall{{Index: i(1), ID: "b", Type: "function", Function: FunctionCall{Name: "g"}}}}}}},
		{Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCall{{Index: i(0), ID: "a", Type: "function", Function: FunctionCall{Name: "f", Arguments: "{"}}}}}}},
		{Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCall{{Index: i(0), Function: FunctionCall{Arguments: "}"}}}}}}},
		{Choices: []ChunkChoice{{Delta: Delta{}, FinishReason: s("tool_calls")}}},
		{Choices: []ChunkChoice{}, Usage: &Usage{TotalTokens: 9}},
	} {
		if err := a.Add(ch); err != nil {
			t.Fatal(err)
		}
	}
	m := a.Message()
	if text, _ := m.Text(); text != "hello" || a.Role() != "assistant" || a.Finish() != "tool_calls" || a.Usage().TotalTokens != 9 {
		t.Fatalf("%q %q %q %+v", text, a.Role(), a.Finish(), a.Usage())
	}
	if len(m.ToolCalls) != 2 || m.ToolCalls[0].ID != "a" || m.ToolCalls[0].Function.Arguments != "{}" || m.ToolCalls[1].Function.Name != "g" || m.ToolCalls[0].Index != nil {
		t.Fatalf("calls %+v", m.ToolCalls)
	}

	// Without indices: a new id starts a call, a delta without one continues the last.
	var b ChunkAssembler
	b.Add(ChatChunk{Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCall{{ID: "x", Function: FunctionCall{Name: "f", Arguments: "{"}}}}}}})
	b.Add(ChatChunk{Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCall{{Function: FunctionCall{Arguments: "}"}}}}}}})
	b.Add(ChatChunk{Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCall{{ID: "y", Function: FunctionCall{Name: "g"}}}}}}})
	if m := b.Message(); string(m.Content) != "null" || len(m.ToolCalls) != 2 || m.ToolCalls[0].Function.Arguments != "{}" || m.ToolCalls[1].ID != "y" {
		t.Fatalf("%s %+v", m.Content, m.ToolCalls)
	}
	strict := ChunkAssembler{RequireIndex: true}
	if err := strict.Add(ChatChunk{Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCall{{ID: "x"}}}}}}); !errors.Is(err, ErrNoIndex) {
		t.Fatalf("strict: %v", err)
	}
}
