package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// An advisory enters the first step's context as its own message, before the task, marked as
// what it is; what it quotes from earlier tasks is not acted on again; no transcript holds it,
// and later steps add none.
func TestAdvisory(t *testing.T) {
	c := newConversation(t, mustEngine(t, engine.ForWindow(8000), mustSim(t)))
	advice := "Earlier task: Sales report\n!ask zz\n#open Old work | never\nrevenue := 7"
	res, err := c.e.Advance(context.Background(), c.st, "", c.id, engine.Input{Advisory: advice,
		Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!ask revenue"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer.Content != "revenue := 7" {
		t.Fatalf("answer %q: the advisory's fact is visible context, its directives are not to be done", res.Answer.Content)
	}
	s := c.session()
	if len(s.Stack) != 0 {
		t.Fatalf("the advisory's #open opened %+v", s.Stack)
	}
	if a := s.Context[0]; a.Kind != hippocam.KindAdvisory || a.Role != hippocam.RoleUser || !strings.HasPrefix(a.Content, hippocam.AdvisoryHeader) {
		t.Fatalf("first context message %s %s %q, want the advisory", a.Kind, a.Role, a.Content)
	}
	res, err = c.e.Advance(context.Background(), c.st, "", c.id, engine.Input{Advisory: "again",
		Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!say next"}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range res.Session.Context {
		if m.Kind == hippocam.KindAdvisory {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d advisories in the context, want the first step's only", n)
	}
}

// An advisory that came after the first step enters on a later step, after that step's inputs
// and before its answer, which draws on it; sent again, it adds nothing.
func TestLateAdvisory(t *testing.T) {
	c := newConversation(t, mustEngine(t, engine.ForWindow(8000), mustSim(t)))
	ctx := context.Background()
	if _, err := c.e.Advance(ctx, c.st, "", c.id, engine.Input{LateAdvisory: "revenue := 5",
		Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!say hello"}}}); err != nil {
		t.Fatal(err)
	}
	if n := advisories(c.session().Context); n != 0 {
		t.Fatalf("%d advisories after a first step: a late advisory waits for a later one", n)
	}
	res, err := c.e.Advance(ctx, c.st, "", c.id, engine.Input{LateAdvisory: "Earlier task: Sales report\nrevenue := 7",
		Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!ask revenue"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer.Content != "revenue := 7" {
		t.Fatalf("answer %q: the late advisory is not in the step's context", res.Answer.Content)
	}
	ctxt := c.session().Context
	n := len(ctxt)
	if n < 3 || ctxt[n-3].Content != "!ask revenue" || ctxt[n-2].Kind != hippocam.KindAdvisory || ctxt[n-1].Role != hippocam.RoleAssistant {
		t.Fatalf("the context ends %s %q, %s, %s: want the step's message, the advisory, the answer", ctxt[n-3].Role, ctxt[n-3].Content, ctxt[n-2].Kind, ctxt[n-1].Role)
	}
	if _, err := c.e.Advance(ctx, c.st, "", c.id, engine.Input{LateAdvisory: "Earlier task: Sales report\nrevenue := 7",
		Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!say next"}}}); err != nil {
		t.Fatal(err)
	}
	if n := advisories(c.session().Context); n != 1 {
		t.Fatalf("%d advisories after the same late advisory came twice, want 1", n)
	}
}

func advisories(ms []hippocam.Message) int {
	n := 0
	for _, m := range ms {
		if m.Kind == hippocam.KindAdvisory {
			n++
		}
	}
	return n
}
