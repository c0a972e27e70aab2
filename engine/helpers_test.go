package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// T is what the helpers need of *testing.T and *rapid.T.
type T interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// simModel calls the simulated model in-process through the wire types, without HTTP.
type simModel struct{ m *sim.Model }

func (s simModel) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	w, err := wire.FromRequest("hippocam-sim", req)
	if err != nil {
		return nil, err
	}
	// A JSON round trip, as over the network.
	body, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	var back wire.ChatRequest
	if err := json.Unmarshal(body, &back); err != nil {
		return nil, err
	}
	resp, err := s.m.Complete(req.Role, &back)
	if err != nil {
		return nil, err
	}
	msg, err := wire.ToMessage(resp.Choices[0].Message)
	if err != nil {
		return nil, err
	}
	u := hippocam.CallUsage{Input: resp.Usage.PromptTokens, Output: resp.Usage.CompletionTokens}
	if d := resp.Usage.PromptTokensDetails; d != nil {
		u.CachedInput = d.CachedTokens
	}
	return &hippocam.Response{Message: msg, FinishReason: resp.Choices[0].FinishReason, Usage: u}, nil
}

// faulty answers calls of one role with scripted bad outputs, and passes everything else to the
// simulated model. It records the requests of that role.
type faulty struct {
	inner   hippocam.Model
	role    hippocam.CallRole
	outputs []hippocam.Message // cycled
	mu      sync.Mutex
	calls   int
	seen    []*hippocam.Request
}

func (f *faulty) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role != f.role {
		return f.inner.Complete(ctx, req)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.outputs[f.calls%len(f.outputs)]
	f.calls++
	f.seen = append(f.seen, req)
	return &hippocam.Response{Message: out, FinishReason: "stop", Usage: hippocam.CallUsage{Input: 10, Output: 5}}, nil
}

func toolAnswer(name, args string) hippocam.Message {
	return hippocam.Message{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{{ID: "c1", Name: name, Arguments: args}}}
}

func mustSim(tb testing.TB) hippocam.Model {
	tb.Helper()
	return simModel{sim.New(tokenizer.MustDefault())}
}

func mustEngine(tb T, cfg engine.Config, m hippocam.Model) *engine.Engine {
	tb.Helper()
	e, err := engine.New(cfg, m, tokenizer.MustDefault(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// conversation drives a session the way an agent would: it sends user messages and answers the
// agent's tool calls with the given results.
type conversation struct {
	tb     T
	e      *engine.Engine
	st     hippocam.Store
	id     string
	sent   []hippocam.Message // every message that entered, in order (inputs and answers)
	answer hippocam.Message
	mode   consolidation
	// job is a consolidation job in flight (beginJob), computed on base; landed counts the jobs
	// landed (landJob) and what they carried over.
	job    *engine.Result
	base   *hippocam.Session
	landed struct{ jobs, rebased, intent, prefix, dropped, chained int }
}

// consolidation says when a conversation's steps consolidate.
type consolidation int

const (
	consolidateInline consolidation = iota // in the step, before it returns
	consolidateJob                         // deferred, then Engine.Consolidate right after the step
	consolidateNext                        // deferred, never run by a job: a later step runs it first when its window or the lag bound needs it
)

func newConversation(tb T, e *engine.Engine) *conversation {
	return &conversation{tb: tb, e: e, st: inmem.New(), id: "s1"}
}

func (c *conversation) user(text string) (*engine.Result, error) {
	return c.send(hippocam.Message{Role: hippocam.RoleUser, Content: text})
}

// results answers the pending calls of the last answer, in order.
func (c *conversation) results(texts ...string) (*engine.Result, error) {
	calls := c.answer.CallIDs()
	if len(calls) != len(texts) {
		c.tb.Fatalf("the last answer made %d calls, the test gives %d results", len(calls), len(texts))
	}
	msgs := make([]hippocam.Message, len(texts))
	for i, text := range texts {
		msgs[i] = hippocam.Message{Role: hippocam.RoleTool, Content: text, ToolCallID: calls[i]}
	}
	return c.send(msgs...)
}

func (c *conversation) send(msgs ...hippocam.Message) (*engine.Result, error) {
	res, err := c.e.Advance(context.Background(), c.st, "", c.id, engine.Input{Messages: msgs, Defer: c.mode != consolidateInline})
	if err != nil {
		return nil, err
	}
	if c.mode == consolidateJob && res.Deferred {
		s := c.session()
		job, err := c.e.Consolidate(context.Background(), s, hippocam.SessionArchive(c.st, "", c.id))
		if err != nil {
			return nil, err
		}
		if err := c.st.Commit(context.Background(), job.Session, job.Change); err != nil {
			return nil, err
		}
	}
	c.sent = append(c.sent, msgs...)
	c.sent = append(c.sent, res.Answer)
	c.answer = res.Answer
	return res, nil
}

// beginJob runs a consolidation job on the session as it is now; landJob commits it later.
func (c *conversation) beginJob() error {
	s := c.session()
	res, err := c.e.Consolidate(context.Background(), s, hippocam.SessionArchive(c.st, "", c.id))
	if err != nil {
		return err
	}
	c.job, c.base = res, s
	return nil
}

// landJob commits the job in flight, if any, rebased onto the session as it is now, and counts
// what it carried over.
func (c *conversation) landJob() error {
	if c.job == nil {
		return nil
	}
	newer := c.session()
	out, err := c.e.Rebase(newer, c.job)
	if err != nil {
		return err
	}
	if err := c.st.Commit(context.Background(), out.Session, out.Change); err != nil {
		return err
	}
	c.landed.jobs++
	if newer.Version != c.job.Change.From {
		c.landed.rebased++
	}
	c.landed.intent += out.IntentConsolidations
	c.landed.prefix += out.PrefixConsolidations
	made := map[string]bool{} // a fold that takes in a memory the same job wrote
	for _, op := range out.Change.Ops {
		for _, id := range op.Span {
			if made[id] {
				c.landed.chained++
			}
		}
		made[op.Memory.ID] = true
	}
	c.landed.dropped += c.job.IntentConsolidations + c.job.PrefixConsolidations + c.job.Reinforced - out.IntentConsolidations - out.PrefixConsolidations - out.Reinforced
	c.job = nil
	return nil
}

func (c *conversation) mustUser(text string) *engine.Result {
	c.tb.Helper()
	res, err := c.user(text)
	if err != nil {
		c.tb.Fatalf("user %q: %v", firstLine(text), err)
	}
	return res
}

func (c *conversation) mustResults(texts ...string) *engine.Result {
	c.tb.Helper()
	res, err := c.results(texts...)
	if err != nil {
		c.tb.Fatalf("results: %v", err)
	}
	return res
}

func (c *conversation) session() *hippocam.Session {
	c.tb.Helper()
	s, err := c.st.Session(context.Background(), "", c.id)
	if err != nil {
		c.tb.Fatal(err)
	}
	return s
}

// checkLossless asserts that the expansion of the context, less guidance and the model's own
// recall exchanges (archived beneath the memories that reinforced them), is exactly what was
// sent and answered, in order, byte for byte; and that no layer of the tree splits a tool
// exchange.
func (c *conversation) checkLossless() {
	c.tb.Helper()
	ctx := context.Background()
	s := c.session()
	arch := hippocam.SessionArchive(c.st, "", c.id)
	all, err := hippocam.Expand(ctx, arch, s.Context)
	if err != nil {
		c.tb.Fatal(err)
	}
	var got []hippocam.Message
	for _, m := range all {
		if m.Kind == hippocam.KindRaw {
			got = append(got, m)
		} else if m.Kind != hippocam.KindGuidance && m.Kind != hippocam.KindRecall {
			c.tb.Fatalf("expansion holds a %s message %s", m.Kind, m.ID)
		}
	}
	if len(got) != len(c.sent) {
		c.tb.Fatalf("expansion has %d raw messages, %d were sent", len(got), len(c.sent))
	}
	for i := range got {
		if got[i].Role != c.sent[i].Role || got[i].Content != c.sent[i].Content || got[i].ToolCallID != c.sent[i].ToolCallID {
			c.tb.Fatalf("expanded[%d] = %s %q, sent %s %q", i, got[i].Role, clip(got[i].Content), c.sent[i].Role, clip(c.sent[i].Content))
		}
	}
	var walk func(layer []hippocam.Message)
	walk = func(layer []hippocam.Message) {
		checkWholeExchanges(c.tb, layer)
		for _, m := range layer {
			if m.Consolidated() {
				kids, err := arch.Children(ctx, m.Ref)
				if err != nil {
					c.tb.Fatal(err)
				}
				walk(kids)
			}
		}
	}
	walk(s.Context)
}

// checkWholeExchanges fails if a layer holds a tool result without the call before it in the
// same layer, or a call whose results are not all right after it (at the end of the context
// results may still be pending).
func checkWholeExchanges(tb T, layer []hippocam.Message) {
	tb.Helper()
	for i, m := range layer {
		if m.Role == hippocam.RoleTool {
			j := i
			for j >= 0 && layer[j].Role == hippocam.RoleTool {
				j--
			}
			if j < 0 || len(layer[j].ToolCalls) == 0 {
				tb.Fatalf("tool result %s is separated from its call", m.ID)
			}
		}
		if len(m.ToolCalls) > 0 {
			n := 0
			for j := i + 1; j < len(layer) && layer[j].Role == hippocam.RoleTool; j++ {
				n++
			}
			if n != len(m.ToolCalls) && i+1+n != len(layer) {
				tb.Fatalf("call %s has %d of its %d results beside it", m.ID, n, len(m.ToolCalls))
			}
		}
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func filler(tag string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "row %04d | %s | item-%d | qty %d | %d.%02d\n", i, tag, 1000+i*7%9000, i%9+1, i*37%999, i%100)
	}
	return b.String()
}

// gateWindow is engine.ForWindow(w) with JANUS asked before the main call (engine.JanusGate), the
// paper's order: for tests that check, one step at a time, what JANUS's verdict does within the
// step that asked for it. verdict_test.go checks the default order, JANUS beside the answer.
func gateWindow(w int) engine.Config {
	cfg := engine.ForWindow(w)
	cfg.Janus = engine.JanusGate
	return cfg
}
