package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// heldJanus passes every call to inner, but holds JANUS's calls until release is closed, and can
// fail the next JANUS call instead (failNext).
type heldJanus struct {
	inner    hippocam.Model
	release  chan struct{}
	mu       sync.Mutex
	started  int // JANUS calls started
	failNext int
	janus    []*hippocam.Request
}

func newHeldJanus(t *testing.T) *heldJanus {
	return &heldJanus{inner: mustSim(t), release: make(chan struct{})}
}

func (h *heldJanus) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role == hippocam.CallJanus {
		h.mu.Lock()
		h.started++
		h.janus = append(h.janus, req)
		fail := h.failNext > 0
		h.failNext--
		h.mu.Unlock()
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if fail {
			return nil, hippocam.Errorf(hippocam.EUNAVAILABLE, "injected: upstream refused (HTTP 400)")
		}
	}
	return h.inner.Complete(ctx, req)
}

// shownToSecond is the text of every message the second JANUS call was shown.
func (h *heldJanus) shownToSecond(t *testing.T) string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.janus) < 2 {
		t.Fatalf("%d JANUS calls", len(h.janus))
	}
	var shown []string
	for _, msg := range h.janus[1].Messages {
		shown = append(shown, msg.Content)
	}
	return strings.Join(shown, "\n")
}

// With JANUS beside the answer (the default), a step answers while its JANUS call is still
// running; the verdict applies at the session's next step, after that step's new messages: the
// intents it opens begin with the answer the step gave (so their spans hold the work that
// answer started), and the next step waits for the verdict if it is not in yet.
func TestJanusBesideAnswersFirst(t *testing.T) {
	m := newHeldJanus(t)
	cfg := engine.ForWindow(8000)
	if cfg.Janus != "" && cfg.Janus != engine.JanusBeside {
		t.Fatalf("default JANUS mode %q, want beside", cfg.Janus)
	}
	c := newConversation(t, mustEngine(t, cfg, m))
	// JANUS is held: the answer comes all the same.
	first := c.mustUser("#open Read the exports | both exports are read\n!call read_file {\"path\":\"shop.csv\"}")
	if len(first.Answer.ToolCalls) != 1 || first.Verdict != "" {
		t.Fatalf("first answer %+v (verdict %q): want the tool call, and no verdict to take yet", first.Answer, first.Verdict)
	}
	if s := c.session(); len(s.Stack) != 0 {
		t.Fatalf("the stack changed before the verdict was applied: %v", s.Stack)
	}
	// The next step waits for the verdict; let JANUS answer while it does.
	done := make(chan *engine.Result)
	go func() { done <- c.mustResults("detail owner := Dana\nrevenue_shop := 1200") }()
	close(m.release)
	second := <-done
	if second.Verdict != engine.VerdictApplied {
		t.Fatalf("verdict %q, want it applied at the second step", second.Verdict)
	}
	s := c.session()
	if len(s.Stack) != 1 || s.Stack[0].Label != "Read the exports" {
		t.Fatalf("stack %v, want the intent opened", s.Stack)
	}
	// The intent begins with the first answer (the call), and the guidance comes after the
	// tool's result, where it could enter.
	if s.Stack[0].Start != first.Answer.ID {
		t.Fatalf("the intent begins at %s, want the answer %s that started its work", s.Stack[0].Start, first.Answer.ID)
	}
	gi := -1
	for i, msg := range s.Context {
		if msg.Kind == hippocam.KindGuidance {
			gi = i
		}
	}
	if gi < 2 || s.Context[gi-1].Role != hippocam.RoleTool {
		t.Fatalf("guidance at %d, want right after the tool result", gi)
	}
	// Its close, decided beside the third answer, consolidates the span from that call on, and
	// the user's request that prompted the close stays out of it.
	c.mustUser("#close Read the exports\n!say read")
	c.mustUser("!say next")
	s = c.session()
	if len(s.Stack) != 0 || s.Consolidations.Intent != 1 {
		t.Fatalf("stack %v, %d intent consolidations: want the intent closed and consolidated", s.Stack, s.Consolidations.Intent)
	}
	var memory *hippocam.Message
	for i := range s.Context {
		if s.Context[i].Kind == hippocam.KindIntentMemory {
			memory = &s.Context[i]
		}
		if s.Context[i].Content == "#close Read the exports\n!say read" && memory == nil {
			t.Fatal("the user's request to close came before the memory: the span began after it")
		}
	}
	if memory == nil {
		t.Fatal("no intent memory")
	}
	kids, err := hippocam.SessionArchive(c.st, "", c.id).Children(context.Background(), memory.Ref)
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, k := range kids {
		held = append(held, firstLine(k.Content))
		if k.Role == hippocam.RoleUser && strings.HasPrefix(k.Content, "#close") {
			t.Fatalf("the span holds the request that closed it: %q", held)
		}
	}
	if len(kids) == 0 || kids[0].ID != first.Answer.ID || !strings.Contains(fmt.Sprint(held), "detail owner := Dana") {
		t.Fatalf("the memory holds %q; want the span from the first answer, the tool result included", held)
	}
	c.checkLossless()
}

// A verdict lost to a JANUS failure loses no directive: the next JANUS call is shown the
// messages the failed one was shown, and its verdict opens the intent.
func TestJanusBesideFailureReviewedAgain(t *testing.T) {
	m := newHeldJanus(t)
	close(m.release)
	m.failNext = 3
	c := newConversation(t, mustEngine(t, engine.ForWindow(8000), m))
	c.mustUser("#open Write the report | the report file exists\n!say starting")
	second := c.mustUser("!say going on")
	if second.Verdict != engine.VerdictFailed || second.JanusFailures != 1 {
		t.Fatalf("verdict %q with %d failures, want the failure taken at the second step", second.Verdict, second.JanusFailures)
	}
	third := c.mustUser("!say still going")
	if third.Verdict != engine.VerdictApplied {
		t.Fatalf("verdict %q, want the directive applied one step later", third.Verdict)
	}
	if s := c.session(); len(s.Stack) != 1 || s.Stack[0].Label != "Write the report" {
		t.Fatalf("stack %v, want the intent the failed call missed", s.Stack)
	}
	if shown := m.shownToSecond(t); !strings.Contains(shown, "#open Write the report") {
		t.Fatalf("the second JANUS call was not shown the request the first one missed: %q", shown)
	}
}

// A verdict about a step that never committed (its commit lost, the client retried) is dropped,
// its usage still counted, and the retried step's own JANUS call reviews the same messages.
func TestJanusBesideDropsVerdictOfUncommittedStep(t *testing.T) {
	m := newHeldJanus(t)
	close(m.release)
	e := mustEngine(t, engine.ForWindow(8000), m)
	c := newConversation(t, e)
	c.mustUser("!say hello")
	s := c.session()
	in := engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "#open Tidy the notes | the notes are tidy\n!say tidying"}}}
	// The step runs but is never committed.
	if _, err := e.Step(context.Background(), s, hippocam.SessionArchive(c.st, "", c.id), in); err != nil {
		t.Fatal(err)
	}
	// The same request again, committed; then the next step.
	if _, err := e.Advance(context.Background(), c.st, "", c.id, in); err != nil {
		t.Fatal(err)
	}
	next := c.mustUser("!say done")
	if next.Verdict != engine.VerdictApplied {
		t.Fatalf("verdict %q: the committed step's verdict should apply", next.Verdict)
	}
	if s := c.session(); len(s.Stack) != 1 {
		t.Fatalf("stack %v", s.Stack)
	}
	// Now a verdict left by a step that did not commit meets the stored session.
	s = c.session()
	if _, err := e.Step(context.Background(), s, hippocam.SessionArchive(c.st, "", c.id), engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "#close Tidy the notes\n!say tidy"}}}); err != nil {
		t.Fatal(err)
	}
	s = c.session()
	res, err := e.Step(context.Background(), s, hippocam.SessionArchive(c.st, "", c.id), engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!say other"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != engine.VerdictDropped || res.Usage[hippocam.CallJanus].Calls == 0 {
		t.Fatalf("verdict %q, JANUS usage %+v: want the stale verdict dropped and its call counted", res.Verdict, res.Usage[hippocam.CallJanus])
	}
	if len(res.Session.Stack) != 1 {
		t.Fatalf("a dropped verdict changed the stack: %v", res.Session.Stack)
	}
}

// A step that fails cancels its JANUS call: nothing of it reaches the next step.
func TestJanusBesideFailedStepLeavesNoVerdict(t *testing.T) {
	m := newHeldJanus(t)
	e := mustEngine(t, engine.ForWindow(8000), &failingAgent{inner: m})
	c := newConversation(t, e)
	_, err := c.user("#open Tidy the notes | the notes are tidy\n!say tidying")
	if !errors.Is(err, errAgentDown) {
		t.Fatalf("error %v, want the main model's", err)
	}
	close(m.release)
	e2res, err := c.e.Advance(context.Background(), c.st, "", c.id, engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!say again"}}})
	if err == nil && e2res.Verdict != "" {
		t.Fatalf("verdict %q taken from a failed step", e2res.Verdict)
	}
}

var errAgentDown = errors.New("main model down")

// failingAgent fails every main-model call.
type failingAgent struct{ inner hippocam.Model }

func (f *failingAgent) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role == hippocam.CallAgent {
		return nil, errAgentDown
	}
	return f.inner.Complete(ctx, req)
}

// streaming makes the simulated model stream its main answers in pieces of a few bytes.
type streaming struct{ inner hippocam.Model }

func (s *streaming) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	return s.CompleteStream(ctx, req, nil)
}

func (s *streaming) CompleteStream(ctx context.Context, req *hippocam.Request, fn func(string) error) (*hippocam.Response, error) {
	resp, err := s.inner.Complete(ctx, req)
	if err != nil || req.Role != hippocam.CallAgent {
		return resp, err
	}
	for text := resp.Message.Content; text != "" && fn != nil; {
		k := min(len(text), 5)
		if err := fn(text[:k]); err != nil {
			return nil, err
		}
		text = text[k:]
	}
	return resp, nil
}

// Before each main-model call's text reaches OnText, OnCall gets the input tokens of the request
// sent; the text the caller gets is the stored answer, in both JANUS modes.
func TestOnCallBeforeText(t *testing.T) {
	for _, cfg := range []engine.Config{engine.ForWindow(8000), gateWindow(8000)} {
		m := &streaming{inner: mustSim(t)}
		e := mustEngine(t, cfg, m)
		st := newConversation(t, e).st
		for _, text := range []string{"!say hello", "#open Read the exports | both exports are read\n!say reading"} {
			var calls []int
			var got strings.Builder
			textFirst := false
			res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{
				Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: text}},
				OnText: func(s string) {
					if len(calls) == 0 {
						textFirst = true
					}
					got.WriteString(s)
				},
				OnCall: func(n int) { calls = append(calls, n) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if textFirst || len(calls) != 1 || calls[0] == 0 || calls[0] != res.MaxRequestTokens {
				t.Fatalf("%s %q: OnCall got %v (text before it: %v), want once the request's %d tokens before the text",
					cfg.Janus, text, calls, textFirst, res.MaxRequestTokens)
			}
			if got.String() != res.Answer.Content {
				t.Fatalf("%s: streamed %q, stored %q", cfg.Janus, got.String(), res.Answer.Content)
			}
		}
	}
}

// A step finds the previous verdict still out after JanusWait: it answers without it and starts
// no JANUS call of its own; the verdict applies at the next step, whose JANUS call then reviews
// the messages of the step that went without.
func TestJanusBesideWaitIsBounded(t *testing.T) {
	m := newHeldJanus(t)
	cfg := engine.ForWindow(8000)
	cfg.JanusWait = time.Millisecond
	c := newConversation(t, mustEngine(t, cfg, m))
	c.mustUser("#open Write the report | the report file exists\n!say starting")
	second := c.mustUser("facts := 1\n!say going on")
	if second.Verdict != engine.VerdictPending || len(second.Session.Stack) != 0 {
		t.Fatalf("verdict %q, stack %v: want the step to go on without it", second.Verdict, second.Session.Stack)
	}
	m.mu.Lock()
	started := m.started
	m.mu.Unlock()
	if started != 1 {
		t.Fatalf("%d JANUS calls started, want only the first while it runs", started)
	}
	close(m.release)
	if _, err := c.e.SettleVerdict(context.Background(), "", c.id); err != nil { // the call has answered
		t.Fatal(err)
	}
	third := c.mustUser("!say still going")
	if third.Verdict != engine.VerdictApplied || len(third.Session.Stack) != 1 {
		t.Fatalf("verdict %q, stack %v: want the held verdict applied", third.Verdict, third.Session.Stack)
	}
	c.mustUser("!say more")
	if shown := m.shownToSecond(t); !strings.Contains(shown, "facts := 1") {
		t.Fatalf("the next JANUS call was not shown the step that went without a verdict: %q", shown)
	}
	c.checkLossless()
}
