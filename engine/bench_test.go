package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/tokenizer"
)

// instant answers every call at once: JANUS skips, the main model says "ok". Benchmarks use it
// to time the engine's own work, leaving out the model.
type instant struct{}

func (instant) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	msg := hippocam.Message{Role: hippocam.RoleAssistant, Content: "ok"}
	if req.Role == hippocam.CallJanus {
		msg = toolAnswer(engine.JanusTool, `{"close":[],"open":[],"guidance":""}`)
	}
	return &hippocam.Response{Message: msg, FinishReason: "stop"}, nil
}

// benchSession builds a session of about n context messages: rounds of a user message, an
// answer with a tool call and its result, under two open intents.
func benchSession(tb testing.TB, n int) *hippocam.Session {
	tb.Helper()
	tok := tokenizer.MustDefault()
	s := engine.NewSession("", "bench", time.Unix(0, 0))
	add := func(m hippocam.Message) {
		m.ID = s.NextID("m")
		m.Kind = hippocam.KindRaw
		m.Tokens = hippocam.MessageTokens(tok, &m)
		s.Context = append(s.Context, m)
	}
	add(hippocam.Message{Role: hippocam.RoleUser, Content: "#open Serve the benchmark | never"})
	s.Stack = hippocam.IntentStack{{Label: "Serve the benchmark", Done: "never", Start: s.Context[0].ID}}
	for i := 0; len(s.Context) < n; i++ {
		if i == 10 {
			add(hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindGuidance, Content: "(Intent guidance) I go deeper."})
			s.Stack = append(s.Stack, hippocam.Intent{Label: "Inner", Done: "never", Start: s.Context[len(s.Context)-1].ID})
		}
		add(hippocam.Message{Role: hippocam.RoleUser, Content: fmt.Sprintf("step %d: look at file %d", i, i)})
		call := hippocam.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d"}`, i)}
		add(hippocam.Message{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{call}})
		add(hippocam.Message{Role: hippocam.RoleTool, ToolCallID: call.ID, Content: filler(fmt.Sprint(i), 4)})
		s.AddRound(s.Context[len(s.Context)-1].Tokens + s.Context[len(s.Context)-2].Tokens)
	}
	return s
}

// BenchmarkStep times one step's own work (Alg. 1 with its pressure check and working tail,
// the request building and the bookkeeping; no consolidation fires) with the model call replaced
// by an instant answer. W is large so that nothing folds: this is the steady-state cost.
func BenchmarkStep(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			s := benchSession(b, n)
			e := mustEngine(b, engine.ForWindow(50_000_000), instant{})
			arch := hippocam.SessionArchive(inmem.New(), "", "bench")
			in := engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "one more question"}}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Step(ctx, s, arch, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
