package bench_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/bench"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// polRecorder wraps the model of a policy test: it counts the calls that reach the model by role
// and keeps the requests.
type polRecorder struct {
	inner hippocam.Model
	mu    sync.Mutex
	calls map[hippocam.CallRole]int
	reqs  []*hippocam.Request
}

func (r *polRecorder) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	r.mu.Lock()
	r.calls[req.Role]++
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.inner.Complete(ctx, req)
}

// count returns how many calls of role reached the model.
func (r *polRecorder) count(role hippocam.CallRole) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[role]
}

// lastRequest returns the last request of role.
func (r *polRecorder) lastRequest(role hippocam.CallRole) *hippocam.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.reqs) - 1; i >= 0; i-- {
		if r.reqs[i].Role == role {
			return r.reqs[i]
		}
	}
	return nil
}

// polEnv is the simulated model in-process, through the real wire client, with a recorder.
func polEnv(t *testing.T, window int) (bench.Env, *polRecorder) {
	t.Helper()
	tok := tokenizer.MustDefault()
	client, err := openai.New(openai.Config{
		BaseURL:    "http://sim.local/v1",
		Model:      sim.ModelID,
		MaxRetries: 0,
		HTTPClient: &http.Client{Transport: sim.New(tok).Transport()},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &polRecorder{inner: client, calls: map[hippocam.CallRole]int{}}
	return bench.Env{Model: rec, Tok: tok, Window: window, Prices: hippocam.DefaultPrices}, rec
}

func polByName(t *testing.T, name string) bench.Policy {
	t.Helper()
	for _, p := range bench.Policies() {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no policy %q", name)
	return bench.Policy{}
}

// polSession drives one agent as the runner does: user messages, and tool results answering the
// pending calls of the last answer.
type polSession struct {
	t       *testing.T
	a       bench.Agent
	pending []string
	turns   []*bench.Turn
}

func newPolSession(t *testing.T, name string, env bench.Env) *polSession {
	t.Helper()
	a, err := polByName(t, name).New(env)
	if err != nil {
		t.Fatal(err)
	}
	return &polSession{t: t, a: a}
}

func (s *polSession) step(in []hippocam.Message) *bench.Turn {
	s.t.Helper()
	turn, err := s.a.Step(context.Background(), in)
	if err != nil {
		s.t.Fatalf("step %d: %v", len(s.turns)+1, err)
	}
	s.turns = append(s.turns, turn)
	s.pending = turn.Answer.CallIDs()
	return turn
}

// user sends a user message and returns the answer's text.
func (s *polSession) user(text string) string {
	s.t.Helper()
	if len(s.pending) > 0 {
		s.t.Fatalf("user message while %d calls are pending", len(s.pending))
	}
	return s.step([]hippocam.Message{{Role: hippocam.RoleUser, Content: text}}).Answer.Content
}

// results answers every pending call, in order, and returns the answer's text.
func (s *polSession) results(texts ...string) string {
	s.t.Helper()
	if len(texts) != len(s.pending) {
		s.t.Fatalf("%d results for %d pending calls", len(texts), len(s.pending))
	}
	in := make([]hippocam.Message, len(texts))
	for i, text := range texts {
		in[i] = hippocam.Message{Role: hippocam.RoleTool, ToolCallID: s.pending[i], Content: text}
	}
	return s.step(in).Answer.Content
}

// usage sums the usage of every turn.
func (s *polSession) usage() hippocam.Usage {
	u := hippocam.Usage{}
	for _, t := range s.turns {
		u.Merge(t.Usage)
	}
	return u
}

func (s *polSession) maxRequest() int {
	n := 0
	for _, t := range s.turns {
		n = max(n, t.MaxRequestTokens)
	}
	return n
}

func (s *polSession) overflowed() bool {
	for _, t := range s.turns {
		if t.Overflow {
			return true
		}
	}
	return false
}

// polFiller returns one line of plain words of about n tokens: no directive, no fact.
func polFiller(n int) string {
	words := []string{"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do", "eiusmod", "tempor"}
	tok := tokenizer.MustDefault()
	var b strings.Builder
	for i := 0; tok.Count(b.String()) < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[i%len(words)])
	}
	return b.String()
}

// polWant fails the test unless got is want.
func polWant(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}
