package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// Closing an inner intent that began at the same guidance as its parent keeps the parent's first
// message in the context: the span starts just after it.
func TestPrecipSharedStart(t *testing.T) {
	c := newConversation(t, mustEngine(t, gateWindow(8000), mustSim(t)))
	c.mustUser("#open Outer | outer done\n#open Inner | inner done\n!say starting")
	c.mustUser("inner_fact := 1\n!say noted")
	res := c.mustUser("#close Inner\n!say inner closed")
	if res.IntentConsolidations != 1 {
		t.Fatalf("%d intent consolidations, want 1", res.IntentConsolidations)
	}
	s := c.session()
	if len(s.Stack) != 1 || s.Stack[0].Label != "Outer" {
		t.Fatalf("stack = %v", s.Stack.Labels())
	}
	if s.Index(s.Stack[0].Start) < 0 {
		t.Fatal("the open intent's first message left the context")
	}
	c.checkLossless()
}

// Closures that add only guidance around the inner span are coalesced into one memory; closures
// whose spans hold other work are consolidated one after the other, innermost first.
func TestPrecipCoalesce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		between     bool // work between the outer and the inner intent's opening
		wantMemory  int
		wantClosing string
	}{
		{"OnlyGuidance", false, 1, `"Inner" and "Outer"`},
		{"WorkBetween", true, 2, `"Outer"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &faulty{inner: mustSim(t), role: "none"}
			c := newConversation(t, mustEngine(t, gateWindow(8000), f))
			if tc.between {
				c.mustUser("#open Outer | outer done\n!say go")
				c.mustUser("outer_fact := 2\n!say noted")
				c.mustUser("#open Inner | inner done\n!say deeper")
			} else {
				c.mustUser("#open Outer | outer done\n#open Inner | inner done\n!say go")
			}
			c.mustUser("inner_fact := 1\n!say noted")
			res := c.mustUser("#close Inner\n#close Outer\n!say all done")
			if res.IntentConsolidations != tc.wantMemory {
				t.Fatalf("%d intent consolidations, want %d", res.IntentConsolidations, tc.wantMemory)
			}
			s := c.session()
			var mem []hippocam.Message
			for _, m := range s.Context {
				if m.Kind == hippocam.KindIntentMemory {
					mem = append(mem, m)
				}
			}
			if len(mem) != 1 || !strings.Contains(firstLine(mem[0].Content), tc.wantClosing) {
				t.Fatalf("context memories: %d, first line %q", len(mem), firstLine(mem[0].Content))
			}
			for _, fact := range []string{"inner_fact := 1"} {
				if !strings.Contains(mem[0].Content, fact) && !tc.between {
					t.Fatalf("memory lacks %q", fact)
				}
			}
			c.checkLossless()
		})
	}
}

// A detail inside one message larger than the room a recall may take comes back through pages.
func TestRecallPages(t *testing.T) {
	cfg := gateWindow(8000)
	cfg.Quantile = 0   // reserve the smallest round, so that the big round does not eat the room
	cfg.MinAnswer = 64 // and a small answer room: the big result nearly fills the window
	// The big result is sized to what the window holds beside the engine's own framing: the
	// largest that fits, which is larger than any recall result may be.
	var c *conversation
	for rows := 300; ; rows -= 10 {
		if rows < 100 {
			t.Fatal("no size of the big result fits the window")
		}
		c = newConversation(t, mustEngine(t, cfg, mustSim(t)))
		c.mustUser("#open Read the big log | the log is read\n!call read_file {\"path\":\"big.log\"}")
		if _, err := c.results(filler("big", rows) + "detail last_error := disk full at 03:12\n"); err == nil {
			break
		}
	}
	c.mustUser("#close Read the big log\n!say read")
	for k := 0; k < 6; k++ { // raw work outside any intent fills the context
		c.mustUser(fmt.Sprintf("!call look {\"n\":%d}", k))
		if _, err := c.results(filler("look", 15)); err != nil {
			for _, m := range c.session().Context {
				t.Logf("context %s %s %s %d %s", m.ID, m.Role, m.Kind, m.Tokens, clip(m.Content))
			}
			t.Fatal(err)
		}
	}
	res := c.mustUser("!ask last_error")
	if res.Answer.Content != "last_error := disk full at 03:12" {
		for _, m := range c.session().Context {
			t.Logf("context %s %s %s", m.ID, m.Role, clip(m.Content))
		}
		for _, m := range res.Answer.Trace {
			t.Logf("trace %s %s %v", m.Role, m.Content, m.ToolCalls)
		}
		t.Fatalf("answer %q", res.Answer.Content)
	}
	paged := false
	for _, m := range res.Answer.Trace {
		if m.Role == hippocam.RoleTool && strings.Contains(m.Content, "continued from byte") {
			paged = true
		}
	}
	if !paged || res.MaxRequestTokens > 8000 {
		t.Fatalf("paged=%v, max request %d (trace of %d messages)", paged, res.MaxRequestTokens, len(res.Answer.Trace))
	}
	c.checkLossless()
}

// A pressure sweep during the answer (here: after a large recall result) must not fold the span
// of an intent closed in the same step: PRECIP still consolidates it after the answer.
func TestPrecipClosedSpanSurvivesSweep(t *testing.T) {
	c := newConversation(t, mustEngine(t, gateWindow(8000), mustSim(t)))
	c.mustUser("#open Whole task | all done")
	c.mustUser("#open Read config | config read")
	c.mustUser("detail k1 := secret-value\n" + filler("cfg", 70))
	c.mustUser("#close Read config\n!say ok")
	c.mustUser("#open Long work | work done")
	for i := 0; i < 8; i++ {
		c.mustUser(fmt.Sprintf("step %d\n", i) + filler(fmt.Sprintf("w%d", i), 25))
	}
	res := c.mustUser("#close Long work\n!ask k1")
	if res.Answer.Content != "k1 := secret-value" {
		t.Fatalf("answer %q", res.Answer.Content)
	}
	if res.IntentConsolidations != 1 {
		t.Fatalf("%d intent consolidations in the closing step, want 1 (prefix: %d)", res.IntentConsolidations, res.PrefixConsolidations)
	}
	for _, m := range c.session().Context {
		if strings.HasPrefix(m.Content, "step ") {
			t.Fatalf("a message of the closed intent stayed raw: %s", clip(m.Content))
		}
	}
	c.checkLossless()
}

// A layer whose list of handles alone is larger than the room is listed in parts, each part
// ending with a handle to the rest of the list; every child stays reachable.
func TestRecallLongList(t *testing.T) {
	cfg := gateWindow(4000)
	c := newConversation(t, mustEngine(t, cfg, mustSim(t)))
	c.mustUser("#open Collect | all collected\n!say start")
	for i := 0; i < 150; i++ {
		c.mustUser(fmt.Sprintf("!say item %d", i))
	}
	c.mustUser("detail needle := found-it\n!say noted")
	c.mustUser("#close Collect\n!say done")
	res := c.mustUser("!ask needle")
	if res.Answer.Content != "needle := found-it" {
		for _, m := range res.Answer.Trace {
			t.Logf("trace %s %s", m.Role, clip(m.Content))
		}
		t.Fatalf("answer %q", res.Answer.Content)
	}
	c.checkLossless()
}

// A user's new request that leads JANUS to close an intent opens the next work: the closed
// span ends before it, so the memory does not swallow the question the step is answering.
func TestPrecipSpanEndsBeforeTheNewRequest(t *testing.T) {
	c := newConversation(t, mustEngine(t, gateWindow(8000), mustSim(t)))
	c.mustUser("#open Fix | fix done\n!say starting")
	c.mustUser("fix_fact := 1\n!say noted")
	res := c.mustUser("#close Fix\nNow a new question for the standup.\n!say closed")
	if res.IntentConsolidations != 1 {
		t.Fatalf("%d intent consolidations, want 1", res.IntentConsolidations)
	}
	s := c.session()
	at := -1
	for i, m := range s.Context {
		if m.Role == hippocam.RoleUser && strings.Contains(m.Content, "a new question for the standup") {
			at = i
		}
	}
	if at < 0 {
		t.Fatal("the new request was folded into the closed intent's memory")
	}
	mem := -1
	for i, m := range s.Context {
		if m.Kind == hippocam.KindIntentMemory {
			mem = i
		}
	}
	if mem < 0 || mem > at {
		t.Fatalf("memory at %d, the new request at %d: want the memory before it", mem, at)
	}
	c.checkLossless()
}
