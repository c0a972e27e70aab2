package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/tokenizer"
)

// janusSpy records every JANUS request and, while failing is set, refuses it the way a provider
// refuses a request (an error the engine does not retry), so that JANUS's call fails.
type janusSpy struct {
	inner   hippocam.Model
	mu      sync.Mutex
	failing bool
	reqs    []*hippocam.Request
}

func (j *janusSpy) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role == hippocam.CallJanus {
		j.mu.Lock()
		j.reqs = append(j.reqs, req)
		failing := j.failing
		j.mu.Unlock()
		if failing {
			return nil, hippocam.Errorf(hippocam.EINVALID, "janusSpy: refused")
		}
	}
	return j.inner.Complete(ctx, req)
}

func (j *janusSpy) last(t *testing.T) *hippocam.Request {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.reqs) == 0 {
		t.Fatal("no JANUS request was made")
	}
	return j.reqs[len(j.reqs)-1]
}

// janusParts splits a JANUS request into its state message (the stack and the memories' first
// lines), the messages between it and the instruction, and the instruction.
func janusParts(t *testing.T, req *hippocam.Request) (state string, shown []hippocam.Message, instruction string) {
	t.Helper()
	msgs := req.Messages
	if len(msgs) < 3 || msgs[0].Role != hippocam.RoleSystem || msgs[1].Role != hippocam.RoleUser || msgs[len(msgs)-1].Role != hippocam.RoleUser {
		t.Fatalf("JANUS request of %d messages: want its system message, the state, the messages and the instruction", len(msgs))
	}
	if !strings.Contains(msgs[1].Content, engine.JanusStackHeading) {
		t.Fatalf("the JANUS request's first message after the system message is not the stack: %q", clip(msgs[1].Content))
	}
	return msgs[1].Content, msgs[2 : len(msgs)-1], msgs[len(msgs)-1].Content
}

// At a long session, JANUS's request holds the stack, the memories' first lines and the messages
// new since its last verdict, and nothing else of the context: its size does not grow with the
// session, while the main model's request carries the whole managed context.
func TestJanusViewBoundedAtLongSession(t *testing.T) {
	tok := tokenizer.MustDefault()
	sizes := map[int]int{}
	for _, n := range []int{1000, 10000} {
		spy := &janusSpy{inner: mustSim(t)}
		e := mustEngine(t, gateWindow(32000), spy)
		c := newConversation(t, e)
		history := make([]hippocam.Message, 0, n)
		for i := 0; len(history) < n; i++ {
			history = append(history,
				hippocam.Message{Role: hippocam.RoleUser, Content: fmt.Sprintf("Here is part %d of the draft; read it through. %s", i, strings.Repeat("It goes on about the plan and the people in it. ", 6))},
				hippocam.Message{Role: hippocam.RoleAssistant, Content: fmt.Sprintf("I read part %d; it reads well.", i)})
		}
		res, err := e.Advance(context.Background(), c.st, "", c.id, engine.Input{History: history,
			Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "#open Write the report | the report is sent, or the data for it is missing\n!say starting"}}})
		if err != nil {
			t.Fatal(err)
		}
		first := res.Answer
		res = c.mustUser("Keep going with the report.\n!say going on")
		state, shown, instruction := janusParts(t, spy.last(t))
		// The state: the stack with where its intent opened, and the memories' first lines.
		if !strings.Contains(state, "- Write the report (done when: the report is sent, or the data for it is missing; opened ") ||
			!strings.Contains(state, engine.JanusMemoriesHeading) || !strings.Contains(state, "[ref:") {
			t.Fatalf("n=%d: the state holds no stack or no memory headings:\n%s", n, state)
		}
		// The messages: only what came after the last verdict (the guidance it appended): the
		// first answer and the new user message.
		if len(shown) != 2 || shown[0].Content != first.Content || !strings.HasPrefix(shown[1].Content, "Keep going with the report.") {
			var got []string
			for _, m := range shown {
				got = append(got, clip(m.Content))
			}
			t.Fatalf("n=%d: JANUS was shown %d messages %q, want the previous answer and the new message", n, len(shown), got)
		}
		if !strings.Contains(instruction, engine.ReviewStartPrefix) || strings.Contains(instruction, engine.ReviewLeftOutPrefix) {
			t.Fatalf("n=%d: instruction %q", n, instruction)
		}
		size := hippocam.RequestTokens(tok, spy.last(t).Messages, nil)
		if main := res.MaxRequestTokens; size >= main || size > 32000/5 {
			t.Fatalf("n=%d: JANUS's request has %d tokens, the main model's %d: JANUS should read a small view", n, size, main)
		}
		t.Logf("n=%d: JANUS request %d tokens, main request %d", n, size, res.MaxRequestTokens)
		sizes[n] = size
	}
	// Ten times the messages, the same bound: the headings may fill their share, nothing grows
	// with the session beyond it.
	if b := 32000 / 4; sizes[10000] > sizes[1000]+b/4 {
		t.Fatalf("JANUS's request grew from %d tokens at 1k messages to %d at 10k", sizes[1000], sizes[10000])
	}
}

// When JANUS's calls fail, the next call that goes through is shown every message since the last
// verdict, and acts on the directives of all of them.
func TestJanusViewAfterFailedCalls(t *testing.T) {
	spy := &janusSpy{inner: mustSim(t)}
	c := newConversation(t, mustEngine(t, gateWindow(16000), spy))
	c.mustUser("#open Migrate the service | it runs on the new cluster\n!say starting")
	spy.failing = true
	r := c.mustUser("#open Survey the service | its config is read\n!call read_config {}")
	if r.JanusFailures != 1 {
		t.Fatalf("JanusFailures = %d, want 1", r.JanusFailures)
	}
	c.mustResults("port := 8080\n" + filler("config", 300))
	c.mustUser("The config is read.\n!say read")
	spy.failing = false
	c.mustUser("Now the manifest.\n!say next")
	_, shown, instruction := janusParts(t, spy.last(t))
	var texts []string
	for _, m := range shown {
		texts = append(texts, m.Content)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"#open Survey the service", "port := 8080", "The config is read.", "Now the manifest."} {
		if !strings.Contains(all, want) {
			t.Fatalf("after the failed calls, JANUS was not shown %q; it saw:\n%s", want, clip(all))
		}
	}
	// The last verdict came before the first answer: the review starts there.
	if !strings.Contains(instruction, `Review start: the latest assistant message above that reads "starting"`) || texts[0] != "starting" {
		t.Fatalf("the review does not start at the first message after the last verdict: %q", instruction)
	}
	if got := c.session().Stack.Labels(); len(got) != 2 || got[1] != "Survey the service" {
		t.Fatalf("stack %v: the directive the failed calls missed was lost", got)
	}
}

// When more arrived since the last verdict than JANUS's view holds, the view shows the newest
// messages within its bound, cuts long ones in the middle, and says how many it left out; the
// newest directive is still acted on.
func TestJanusViewLeavesOutOldestWhenTooMuchIsNew(t *testing.T) {
	spy := &janusSpy{inner: mustSim(t)}
	const w = 64000 // room for all of it in the context: nothing folds
	c := newConversation(t, mustEngine(t, gateWindow(w), spy))
	c.mustUser("#open Collect the logs | every log is read\n!say starting")
	spy.failing = true
	for i := 0; i < 12; i++ {
		rows := 80
		if i == 11 {
			rows = 250 // longer than a message may be in the view
		}
		c.mustUser(fmt.Sprintf("Log %d follows.\n%s\n!say read %d", i, filler(fmt.Sprint("log", i), rows), i))
	}
	spy.failing = false
	c.mustUser("#close Collect the logs\n!say all read")
	_, shown, instruction := janusParts(t, spy.last(t))
	if !strings.Contains(instruction, engine.ReviewLeftOutPrefix) {
		t.Fatalf("the instruction does not say what was left out: %q", instruction)
	}
	size, cut := 0, false
	for i := range shown {
		size += shown[i].Tokens
		cut = cut || strings.Contains(shown[i].Content, engine.JanusCutMark)
	}
	if b := w / 4; size > b+b/4 || !cut {
		t.Fatalf("the view's messages take %d tokens (bound %d), cut: %v", size, b, cut)
	}
	if !strings.HasPrefix(shown[len(shown)-1].Content, "#close Collect the logs") {
		t.Fatalf("the newest message is not shown last: %q", clip(shown[len(shown)-1].Content))
	}
	if got := c.session().Stack; len(got) != 0 {
		t.Fatalf("stack %v: the newest directive was not acted on", got.Labels())
	}
}
