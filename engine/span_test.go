package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

func readCall(args string) hippocam.Message {
	return hippocam.Message{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{{ID: args, Name: "read_file", Arguments: args}}}
}

func spanMsg(role hippocam.Role, content string) hippocam.Message {
	return hippocam.Message{Role: role, Kind: hippocam.KindRaw, Content: content}
}

// SpanLine names a span by quoting its first and last messages, and says how many it holds. A
// first message that repeats another is named by a neighbour that reads like no other message;
// only when none serves does it count among word-for-word repeats.
func TestSpanLine(t *testing.T) {
	long := strings.Repeat("word ", 40) // 200 characters
	call := hippocam.Message{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{{ID: "1", Name: "read_file"}, {ID: "2", Name: "grep"}}}
	tests := []struct {
		name       string
		ctx        []hippocam.Message
		lo         int
		start, end string
	}{
		{"Short", []hippocam.Message{spanMsg("user", "a"), spanMsg("user", "b\n  c"), spanMsg("assistant", "done")}, 1,
			`Span start: the latest user message above that reads "b c"`,
			`Span end: the last message above, an assistant message that reads "done"`},
		{"Long", []hippocam.Message{spanMsg("user", long+"x"), spanMsg("tool", strings.Repeat("z ", 100))}, 0,
			`Span start: the latest user message above that begins "` + strings.TrimSpace(strings.Repeat("word ", 16)) + `…"`,
			`Span end: the last message above, a tool result that begins "` + strings.TrimSpace(strings.Repeat("z ", 40)) + `…"`},
		{"LongSharedOpening", []hippocam.Message{spanMsg("user", long+"x"), spanMsg("user", long+"y")}, 1,
			`Span start: the latest user message above that reads "` + long + `y"`, ""},
		{"RepeatBeforeOnly", []hippocam.Message{spanMsg("user", "ok"), spanMsg("user", "ok"), spanMsg("user", "b")}, 1,
			`Span start: the latest user message above that reads "ok"`, ""},
		{"RepeatInside", []hippocam.Message{spanMsg("user", "ok"), spanMsg("user", "b"), spanMsg("user", "ok"), spanMsg("user", "ok")}, 0,
			`Span start: the 3rd latest user message above that reads "ok"`, ""},
		{"RepeatedAnswerNamedByNeighbour", []hippocam.Message{spanMsg("user", "log 1"), spanMsg("assistant", "Noted."), spanMsg("user", "log 2"), spanMsg("assistant", "Noted."), spanMsg("user", "log 3"), spanMsg("assistant", "Noted.")}, 3,
			`Span start: the assistant message right after the latest user message above that reads "log 2"`, ""},
		{"RepeatedFirstNamedByNext", []hippocam.Message{spanMsg("assistant", "Noted."), spanMsg("user", "log 1"), spanMsg("assistant", "Noted.")}, 0,
			`Span start: the assistant message right before the latest user message above that reads "log 1"`, ""},
		{"ToolCalls", []hippocam.Message{spanMsg("user", "a"), call}, 1,
			`Span start: the latest assistant message above that only calls tools: read_file, grep`, ""},
		{"ToolCallsRepeated", []hippocam.Message{spanMsg("user", "a"), readCall(`{"path":"a"}`), spanMsg("tool", "x"), readCall(`{ "path": "b", "at": 1 }`), spanMsg("tool", "y")}, 3,
			`Span start: the latest assistant message above that only calls tools, with these arguments: read_file {"at":1,"path":"b"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines := strings.Split(engine.SpanLine(tc.ctx, tc.lo, len(tc.ctx)), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "Span: ") {
				t.Fatalf("span lines %q", lines)
			}
			if n := len(tc.ctx) - tc.lo; !strings.HasPrefix(lines[0], fmt.Sprintf("%s%d %s", engine.SpanCountPrefix, n, map[bool]string{true: "message above", false: "messages above"}[n == 1])) {
				t.Errorf("lead line %q does not count the %d messages", lines[0], n)
			}
			if lines[1] != tc.start {
				t.Errorf("start line\n%s\nwant\n%s", lines[1], tc.start)
			}
			if tc.end != "" && lines[2] != tc.end {
				t.Errorf("end line\n%s\nwant\n%s", lines[2], tc.end)
			}
		})
	}
}

// No role prompt has a line that could be taken for one of the instruction's own lines.
func TestPromptsHoldNoInstructionLines(t *testing.T) {
	files, err := filepath.Glob("prompts/*.txt")
	if err != nil || len(files) != 4 {
		t.Fatalf("prompts: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			for _, marker := range []string{engine.SpanStartPrefix, engine.SpanEndPrefix, engine.ClosingPrefix, engine.ChainPrefix, engine.ConciseMarker, engine.SpanCountPrefix, engine.SizeMarker, engine.FitMarker} {
				if strings.HasPrefix(l, marker) {
					t.Errorf("%s: line %q starts with %q", f, l, marker)
				}
			}
		}
	}
}

// TestSpanCallsAsTheModelSawThem names a call of a namespaced custom tool as the upstream model
// knows it, by its flat name with its input as the "input" argument: the model (and the
// simulated one) matches span lines against the calls it was shown.
func TestSpanCallsAsTheModelSawThem(t *testing.T) {
	m := &hippocam.Message{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{
		{ID: "c1", Name: "exec", Namespace: "functions", Kind: hippocam.ToolCustom, Arguments: `text("hi")`},
		{ID: "c2", Name: "sleep", Namespace: "clock", Arguments: `{"ms":1}`},
		{ID: "c3", Name: "shell", Arguments: `{"cmd":"ls"}`},
	}}
	if got, want := engine.SpanCallNames(m), "functions__exec, clock__sleep, shell"; got != want {
		t.Errorf("SpanCallNames = %q, want %q", got, want)
	}
	if got, want := engine.SpanCallText(m), `functions__exec {"input":"text(\"hi\")"}; clock__sleep {"ms":1}; shell {"cmd":"ls"}`; got != want {
		t.Errorf("SpanCallText = %q, want %q", got, want)
	}
}
