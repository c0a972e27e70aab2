package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"pgregory.net/rapid"
)

// flaky breaks a random share of the consolidators' and JANUS's answers.
type flaky struct {
	inner hippocam.Model
	mu    sync.Mutex
	rng   *rand.Rand
	share float64
}

func (f *flaky) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role != hippocam.CallAgent {
		f.mu.Lock()
		broken := f.rng.Float64() < f.share
		f.mu.Unlock()
		if broken {
			return &hippocam.Response{Message: toolAnswer(req.ToolChoice, `{"broken`)}, nil
		}
	}
	return f.inner.Complete(ctx, req)
}

// Random sessions of appends, intent opens and closes (valid or not), parallel tool calls,
// facts, details, questions and failing consolidations never lose or reorder a message, never
// split a tool exchange, and never send a request over the window.
func TestPropertyLossless(t *testing.T) {
	base := mustSim(t)
	rapid.Check(t, func(rt *rapid.T) {
		window := rapid.SampledFrom([]int{2500, 4000, 8000}).Draw(rt, "window")
		model := &flaky{inner: base, rng: rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1)), share: rapid.Float64Range(0, 0.5).Draw(rt, "failShare")}
		e := mustEngine(rt, engine.ForWindow(window), model)
		c := newConversation(rt, e)
		var open []string
		n := rapid.IntRange(5, 40).Draw(rt, "steps")
		for i := 0; i < n; i++ {
			var lines []string
			switch rapid.IntRange(0, 4).Draw(rt, "op") {
			case 0:
				label := fmt.Sprintf("Intent %d", i)
				lines = append(lines, fmt.Sprintf("#open %s | it is done", label))
				open = append(open, label)
			case 1:
				if len(open) > 0 {
					k := rapid.IntRange(1, len(open)).Draw(rt, "closeCount")
					for j := 0; j < k; j++ {
						lines = append(lines, "#close "+open[len(open)-1])
						open = open[:len(open)-1]
					}
				} else {
					lines = append(lines, "#close Nothing open") // invalid: rejected, stack unchanged
				}
			case 2:
				lines = append(lines, fmt.Sprintf("key_%d := v%d", rapid.IntRange(0, 6).Draw(rt, "key"), i))
			case 3:
				lines = append(lines, fmt.Sprintf("!ask key_%d", rapid.IntRange(0, 6).Draw(rt, "askKey")))
			case 4:
				lines = append(lines, fmt.Sprintf("detail secret_%d := s%d", i, i))
			}
			calls := rapid.IntRange(0, 3).Draw(rt, "calls")
			for j := 0; j < calls; j++ {
				lines = append(lines, fmt.Sprintf("!call tool_%d {\"i\":%d}", j, i))
			}
			if rapid.Bool().Draw(rt, "pad") {
				lines = append(lines, fmt.Sprintf("!pad %d", rapid.IntRange(10, 300).Draw(rt, "padN")))
			}
			res, err := c.user(strings.Join(lines, "\n"))
			if hippocam.ErrorCode(err) == hippocam.ECAPACITY {
				continue
			} else if err != nil {
				rt.Fatalf("step %d: %v", i, err)
			}
			checkWindow(rt, res, window)
			if ids := res.Answer.CallIDs(); len(ids) > 0 {
				results := make([]string, len(ids))
				for j := range ids {
					results[j] = fmt.Sprintf("result %d of step %d\nkey_%d := r%d\n%s", j, i, j, i, filler("r", rapid.IntRange(1, 20).Draw(rt, "rows")))
				}
				res, err := c.results(results...)
				if hippocam.ErrorCode(err) == hippocam.ECAPACITY {
					rt.Skip("tool results larger than the window") // the agent could not continue either
				} else if err != nil {
					rt.Fatalf("results of step %d: %v", i, err)
				}
				checkWindow(rt, res, window)
			}
		}
		c.checkLossless()
	})
}

func checkWindow(tb T, res *engine.Result, window int) {
	tb.Helper()
	if res.MaxRequestTokens > window {
		tb.Fatalf("a main request of %d tokens exceeds the window of %d", res.MaxRequestTokens, window)
	}
}
