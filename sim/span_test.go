package sim_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
)

// The span of a PRECIP or PALIM request is named by engine.SpanLine, which quotes the span's
// first and last messages instead of counting them; the simulated model finds it by those quotes.

// wireOf is the chat message a request carries for a context message.
func wireOf(m hippocam.Message) wire.ChatMessage {
	if len(m.ToolCalls) > 0 {
		calls := make([][3]string, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			calls[i] = [3]string{c.ID, c.Name, c.Arguments}
		}
		w := calling(calls...)
		w.Content = wire.StringContent(m.Content)
		return w
	}
	if m.Role == hippocam.RoleTool {
		return toolResult(m.ToolCallID, m.Content)
	}
	return text(m.Role, m.Content)
}

func wireAll(ctx []hippocam.Message) []wire.ChatMessage {
	var out []wire.ChatMessage
	for _, m := range ctx {
		if !m.Kind.Hidden() {
			out = append(out, wireOf(m))
		}
	}
	return out
}

func msg(role hippocam.Role, content string) hippocam.Message {
	return hippocam.Message{Role: role, Kind: hippocam.KindRaw, Content: content}
}

// palimFacts runs PALIM on ctx with the span ctx[lo:] and returns the facts it kept.
func palimFacts(t *testing.T, ctx []hippocam.Message, lo int) []string {
	t.Helper()
	inst := engine.SpanLine(ctx, lo, len(ctx)) + "\nConsolidate those messages into memory."
	out := palimOutput(t, inst, wireAll(ctx)...)
	var facts []string
	for _, k := range out.Knowledge {
		if strings.Contains(k.Fact, ":=") {
			facts = append(facts, k.Fact)
		}
	}
	return facts
}

func TestSpanByQuotes(t *testing.T) {
	long := func(tail string) string {
		return strings.Repeat("the same long opening words of a message ", 5) + "\n" + tail
	}
	call := hippocam.Message{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw,
		ToolCalls: []hippocam.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a"}`}}}
	result := hippocam.Message{Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: "c1", Content: "c := 3"}
	call2 := hippocam.Message{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw,
		ToolCalls: []hippocam.ToolCall{{ID: "c2", Name: "read_file", Arguments: `{"path": "b"}`}}}
	result2 := hippocam.Message{Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: "c2", Content: "d := 4"}
	tests := []struct {
		name string
		ctx  []hippocam.Message
		lo   int
		want []string
	}{
		{"Tail", []hippocam.Message{msg("user", "a := 1"), msg("assistant", "ok"), msg("user", "b := 2")}, 2, []string{"b := 2"}},
		{"Whole", []hippocam.Message{msg("user", "a := 1"), msg("user", "b := 2")}, 0, []string{"a := 1", "b := 2"}},
		{"RepeatedBeforeSpan", []hippocam.Message{msg("user", "go on"), msg("user", "a := 1"), msg("user", "go on"), msg("user", "b := 2")}, 2, []string{"b := 2"}},
		{"RepeatedInsideSpan", []hippocam.Message{msg("user", "a := 1"), msg("user", "go on"), msg("user", "b := 2"), msg("user", "go on"), msg("user", "c := 3")}, 1, []string{"b := 2", "c := 3"}},
		{"SameRoleMatters", []hippocam.Message{msg("user", "a := 1"), msg("assistant", "go on"), msg("user", "go on"), msg("user", "b := 2")}, 1, []string{"b := 2"}},
		{"LongSharedOpening", []hippocam.Message{msg("user", long("a := 1")), msg("user", long("b := 2")), msg("user", long("c := 3"))}, 1, []string{"b := 2", "c := 3"}},
		{"StartsWithToolCall", []hippocam.Message{msg("user", "a := 1"), call, result}, 1, []string{"c := 3"}},
		{"StartsWithRepeatedToolCall", []hippocam.Message{msg("user", "a := 1"), call, result, msg("user", "b := 2"), call2, result2}, 1, []string{"c := 3", "b := 2", "d := 4"}},
		{"RepeatedToolCallLater", []hippocam.Message{msg("user", "a := 1"), call, result, msg("user", "b := 2"), call2, result2}, 4, []string{"d := 4"}},
		{"RepeatedAnswerAfter", []hippocam.Message{msg("user", "a := 1"), msg("assistant", "Noted."), msg("user", "b := 2"), msg("assistant", "Noted."), msg("user", "c := 3")}, 3, []string{"c := 3"}},
		{"RepeatedAnswerBefore", []hippocam.Message{msg("assistant", "Noted."), msg("user", "a := 1"), msg("assistant", "Noted."), msg("user", "b := 2")}, 0, []string{"a := 1", "b := 2"}},
		{"HiddenSkipped", []hippocam.Message{msg("user", "a := 1"), {Role: hippocam.RoleUser, Kind: hippocam.KindBranch, Content: "branch"}, msg("user", "b := 2")}, 1, []string{"b := 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := palimFacts(t, tc.ctx, tc.lo)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("facts %q, want %q\nspan lines:\n%s", got, tc.want, engine.SpanLine(tc.ctx, tc.lo, len(tc.ctx)))
			}
		})
	}
}

func TestSpanPrecip(t *testing.T) {
	ctx := []hippocam.Message{
		msg("user", "early := 1"),
		msg("user", "(Intent guidance) I now work on \"Read\"; it is done when read."),
		msg("user", "late := 2\ndetail owner := Dana"),
		msg("assistant", "read"),
	}
	inst := engine.SpanLine(ctx, 1, len(ctx)) + "\n" + precipInstruction("Read", "Read")
	got := strings.Join(precipMemory(t, inst, wireAll(ctx)...), "\n")
	if strings.Contains(got, "early := 1") || !strings.Contains(got, "late := 2") || !strings.Contains(got, "owner") {
		t.Fatalf("memory %q: want late and owner, not early", got)
	}
}

// A span line that does not match the request is the engine's mistake: the simulated model
// refuses it rather than guessing.
func TestSpanMismatch(t *testing.T) {
	ctx := []hippocam.Message{msg("user", "a := 1"), msg("user", "b := 2")}
	lines := engine.SpanLine(ctx, 1, 2)
	for name, inst := range map[string]string{
		"EndIsNotLast":  lines + "\nConsolidate.",
		"StartNotFound": strings.Replace(lines, `reads "b := 2"`, `reads "zzz"`, 1),
		"StartWithout":  strings.SplitN(lines, "\n", 3)[2],
	} {
		t.Run(name, func(t *testing.T) {
			material := wireAll(ctx)
			if name == "EndIsNotLast" {
				material = append(material, user("c := 3"))
			}
			_, err := mustModel(t).Complete(hippocam.CallPalim, componentChat(engine.PalimToolSpec, inst, material...))
			if hippocam.ErrorCode(err) != hippocam.EINVALID {
				t.Fatalf("Complete: %v, want EINVALID\n%s", err, inst)
			}
		})
	}
}

// The role prompts never contain a line the simulated model would read as a span line.
func TestPromptsHaveNoSpanLines(t *testing.T) {
	ctx := []hippocam.Message{msg("user", "a := 1"), msg("user", "b := 2")}
	out := palimOutput(t, engine.PalimPrompt()+"\n\n---\n\n"+engine.SpanLine(ctx, 1, 2)+"\nConsolidate.", wireAll(ctx)...)
	if len(out.Knowledge) != 1 || out.Knowledge[0].Fact != "b := 2" {
		t.Fatalf("knowledge %v, want only b := 2", out.Knowledge)
	}
}

// Through Anthropic's Messages API, where tool arguments travel as JSON objects and come back
// re-encoded, a span that starts with a tool call is still found by its quoted calls.
func TestSpanThroughAnthropic(t *testing.T) {
	base := anthropicServer(t, mustModel(t))
	c, err := anthropic.New(anthropic.Config{BaseURL: base, Model: "claude-sim"})
	if err != nil {
		t.Fatal(err)
	}
	read := func(id, args string) hippocam.Message {
		return hippocam.Message{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, ToolCalls: []hippocam.ToolCall{{ID: id, Name: "read_file", Arguments: args}}}
	}
	ctx := []hippocam.Message{
		msg("user", "a := 1"),
		read("toolu_1", `{"path": "a", "at": 1}`),
		{Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: "toolu_1", Content: "b := 2"},
		read("toolu_2", `{ "path": "b", "at": 2 }`),
		{Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: "toolu_2", Content: "c := 3"},
		msg("assistant", "done"),
	}
	inst := engine.SpanLine(ctx, 3, len(ctx))
	if !strings.Contains(inst, engine.SpanCallArgs) {
		t.Fatalf("span lines do not quote the calls:\n%s", inst)
	}
	msgs := append([]hippocam.Message{{Role: hippocam.RoleSystem, Content: "prompt"}}, ctx...)
	msgs = append(msgs, hippocam.Message{Role: hippocam.RoleUser, Content: inst + "\nConsolidate those messages into memory."})
	resp, err := c.Complete(context.Background(), &hippocam.Request{Role: hippocam.CallPalim, Messages: msgs,
		Tools: []hippocam.Tool{engine.PalimToolSpec, {Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	args := resp.Message.Content
	for _, call := range resp.Message.ToolCalls {
		if call.Name == engine.PalimTool {
			args = call.Arguments
		}
	}
	var out engine.PalimOutput
	if err := json.Unmarshal([]byte(args), &out); err != nil {
		t.Fatalf("answer %q: %v", args, err)
	}
	if len(out.Knowledge) != 1 || out.Knowledge[0].Fact != "c := 3" {
		t.Fatalf("knowledge %v, want only c := 3\n%s", out.Knowledge, inst)
	}
}
