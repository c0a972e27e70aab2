package bench

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/scenario"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// runEnv is a fresh simulated model in-process, through the real wire client.
func runEnv(t testing.TB, window int) Env {
	t.Helper()
	tok := tokenizer.MustDefault()
	m, err := openai.New(openai.Config{BaseURL: "http://sim.local/v1", Model: sim.ModelID, HTTPClient: &http.Client{Transport: sim.New(tok).Transport()}})
	if err != nil {
		t.Fatal(err)
	}
	return Env{Model: m, Tok: tok, Window: window, Prices: hippocam.DefaultPrices}
}

// stubPolicy keeps the last keep messages of the conversation (all of them when keep is 0) and
// sends them to the main model: the simplest policies there are, for testing the runner.
func stubPolicy(name string, keep int) Policy {
	return Policy{Name: name, New: func(env Env) (Agent, error) { return &stubAgent{env: env, keep: keep}, nil }}
}

type stubAgent struct {
	env  Env
	keep int
	msgs []hippocam.Message
}

func (a *stubAgent) Step(ctx context.Context, in []hippocam.Message) (*Turn, error) {
	a.msgs = append(a.msgs, in...)
	if a.keep > 0 && len(a.msgs) > a.keep {
		cut := len(a.msgs) - a.keep
		for cut < len(a.msgs) && a.msgs[cut].Role == hippocam.RoleTool {
			cut++ // never start with a tool result whose call was dropped
		}
		a.msgs = a.msgs[cut:]
	}
	resp, err := a.env.Model.Complete(ctx, &hippocam.Request{Role: hippocam.CallAgent, Messages: a.msgs})
	if err != nil {
		return nil, err
	}
	n := hippocam.RequestTokens(a.env.Tok, a.msgs, nil)
	a.msgs = append(a.msgs, resp.Message)
	u := hippocam.Usage{}
	u.Add(hippocam.CallAgent, resp.Usage, a.env.Prices)
	return &Turn{Answer: resp.Message, Usage: u, MaxRequestTokens: n, Overflow: n > a.env.Window}, nil
}

// TestRunFullContextAnswersEverything runs every workload through a stub that keeps the whole
// conversation: the simulated model then sees every line, so every answer must be right. This
// also checks the generators' questions against the simulated model's own reading of the lines.
func TestRunFullContextAnswersEverything(t *testing.T) {
	tok := tokenizer.MustDefault()
	for _, g := range generators {
		t.Run(g.name, func(t *testing.T) {
			w := g.gen(3, 12000, tok)
			var calls, last int
			r, err := Run(context.Background(), stubPolicy("stub-full", 0), runEnv(t, 8000), w, func(done, total int) {
				if total != len(w.Lines) || done != last+1 {
					t.Fatalf("progress(%d, %d) after %d", done, total, last)
				}
				calls, last = calls+1, done
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls != len(w.Lines) {
				t.Errorf("progress called %d times for %d lines", calls, len(w.Lines))
			}
			for _, a := range r.Answers {
				if a.Verdict != Right {
					t.Errorf("%s: got %q, want %q", a.Verdict, a.Got, a.Want)
				}
			}
			if r.Accuracy != 1 || r.Right != len(w.Questions) || r.Questions != len(w.Questions) {
				t.Fatalf("accuracy %v, %d/%d right", r.Accuracy, r.Right, r.Questions)
			}
			if !r.Overflowed || r.OverflowStep == 0 || r.MaxRequestTokens <= 8000 {
				t.Errorf("12k tokens in a window of 8k: overflowed %v at step %d, max request %d", r.Overflowed, r.OverflowStep, r.MaxRequestTokens)
			}
			if r.Calls[hippocam.CallAgent] != r.Steps || len(r.UncachedByStep) != r.Steps {
				t.Errorf("%d steps, %d agent calls, %d points of uncached tokens", r.Steps, r.Calls[hippocam.CallAgent], len(r.UncachedByStep))
			}
			for i := 1; i < len(r.UncachedByStep); i++ {
				if r.UncachedByStep[i] < r.UncachedByStep[i-1] {
					t.Fatalf("cumulative uncached tokens fall at step %d", i)
				}
			}
			if n := r.UncachedByStep[len(r.UncachedByStep)-1]; n != r.UncachedInputTokens || r.UncachedInputTokens != r.InputTokens-r.CachedInputTokens {
				t.Errorf("uncached: series ends at %d, figure %d, input %d less cached %d", n, r.UncachedInputTokens, r.InputTokens, r.CachedInputTokens)
			}
			if r.CachedInputTokens == 0 || r.NewContentTokens <= int64(w.LengthTokens) || r.CostUSD <= 0 || r.CostPerCorrectUSD == nil {
				t.Errorf("figures: %+v", r)
			}
		})
	}
}

// TestRunForgetfulStub checks that a policy that forgets gets wrong answers scored as such.
func TestRunForgetfulStub(t *testing.T) {
	w := FactStream(1, 20000, tokenizer.MustDefault())
	r, err := Run(context.Background(), stubPolicy("stub-last-4", 4), runEnv(t, 8000), w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Accuracy >= 0.5 || r.Missed == 0 || r.Right+r.Stale+r.Invented+r.Missed != r.Questions {
		t.Fatalf("a policy keeping 4 messages: accuracy %v, %d right, %d stale, %d invented, %d missed", r.Accuracy, r.Right, r.Stale, r.Invented, r.Missed)
	}
	if r.Overflowed {
		t.Error("a policy keeping 4 short messages overflowed")
	}
}

func TestRunErrorsNameTheLine(t *testing.T) {
	tok := tokenizer.MustDefault()
	lines := func(ls ...scenario.Line) *Workload {
		for i := range ls {
			ls[i].Number = i + 1
		}
		return &Workload{Name: "handmade", Lines: ls}
	}
	user := func(s string) scenario.Line { return scenario.Line{Role: hippocam.RoleUser, Content: s} }
	tool := func(s string) scenario.Line { return scenario.Line{Role: hippocam.RoleTool, Content: s} }
	t.Run("ErrStrayToolResult", func(t *testing.T) {
		_, err := Run(context.Background(), stubPolicy("stub", 0), runEnv(t, 8000), lines(user("hello"), tool("result")), nil)
		if hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(err.Error(), "line 2") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrCallsWaiting", func(t *testing.T) {
		_, err := Run(context.Background(), stubPolicy("stub", 0), runEnv(t, 8000), lines(user("!call a {}\n!call b {}"), tool("one"), user("next")), nil)
		if hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(err.Error(), "line 3") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrStep", func(t *testing.T) {
		boom := errors.New("boom")
		p := Policy{Name: "failing", New: func(Env) (Agent, error) { return &failAt{2, boom}, nil }}
		_, err := Run(context.Background(), p, Env{Tok: tok}, lines(user("a"), user("b")), nil)
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "line 2") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("OKParallelCalls", func(t *testing.T) {
		w := lines(user("!call a {}\n!call b {}"), tool("one"), tool("two"), user("x := 1"), user("!ask x"))
		w.Questions = []Question{{Key: "x", Want: "x := 1"}}
		r, err := Run(context.Background(), stubPolicy("stub", 0), runEnv(t, 8000), w, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Steps != 4 || r.Right != 1 || r.Questions != 1 {
			t.Fatalf("steps %d, right %d of %d", r.Steps, r.Right, r.Questions)
		}
	})
}

// failAt is an agent whose Step fails on the n-th call.
type failAt struct {
	n   int
	err error
}

func (f *failAt) Step(context.Context, []hippocam.Message) (*Turn, error) {
	if f.n--; f.n <= 0 {
		return nil, f.err
	}
	return &Turn{}, nil
}

func TestSuiteRunsEveryPair(t *testing.T) {
	tok := tokenizer.MustDefault()
	ws := []*Workload{Agentic(1, 6000, tok), Interleaved(1, 6000, tok)}
	boom := errors.New("boom")
	s := &Suite{
		Config:    Config{Window: 4000, Seed: 1, Prices: hippocam.DefaultPrices},
		Workloads: ws,
		Policies:  []Policy{stubPolicy("stub-full", 0), {Name: "broken", New: func(Env) (Agent, error) { return nil, boom }}},
		Env:       func() (Env, error) { return runEnv(t, 4000), nil },
		Progress:  &strings.Builder{},
	}
	rep, err := s.Run(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the broken policy's", err)
	}
	if len(rep.Results) != 4 || len(rep.Config.Workloads) != 2 || len(rep.Config.Policies) != 2 {
		t.Fatalf("%d results, config %+v", len(rep.Results), rep.Config)
	}
	for i, r := range rep.Results {
		if r.Workload != ws[i/2].Name || (r.Error != "") != (i%2 == 1) {
			t.Errorf("result %d: %s %s error %q", i, r.Workload, r.Policy, r.Error)
		}
	}
	if bar := s.Progress.(*strings.Builder).String(); !strings.Contains(bar, "100%") {
		t.Errorf("progress bar never reached 100%%: %q", bar)
	}
}
