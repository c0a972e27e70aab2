package sessions_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sessions"
)

// A preview counts exactly what the next step then sends to the main model (the simulated
// model's usage counts the request it received with the same tokenizer), for new sessions,
// named and unnamed ones, and sessions whose context consolidation has shrunk; and it changes
// nothing: no session, no message, no version.
func TestPreviewMatchesNextStep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int
		steps  int
	}{
		{"OKNamed", 8000, 4},
		{"OKUnnamed", 8000, 4},
		// A window small enough to consolidate, with room left for steps that do not: at 3,000
		// tokens the room kept for a component request over the context folds at every step.
		{"OKConsolidated", 4000, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, st := newService(t, tc.window)
			ctx := context.Background()
			name := "s"
			if tc.name == "OKUnnamed" {
				name = ""
			}
			c := &client{framing: []hippocam.Message{{Role: hippocam.RoleSystem, Content: "You help."}}}
			compared, sent, memories := 0, 0, 0
			for i := 0; i < tc.steps; i++ {
				c.history = append(c.history, hippocam.Message{Role: hippocam.RoleUser,
					Content: fmt.Sprintf("fact_%d := %d, which matters later in the task. %s\n!say noted %d", i, i*7, strings.Repeat("Some words of context. ", 8), i)})
				before := snapshot(t, st)
				pv, err := svc.Preview(ctx, c.request(name, false))
				if err != nil {
					t.Fatal(err)
				}
				if after := snapshot(t, st); after != before {
					t.Fatalf("step %d: the preview changed the store:\n%s\nthen\n%s", i, before, after)
				}
				res, err := svc.Continue(ctx, c.request(name, false))
				if err != nil {
					t.Fatal(err)
				}
				if pv.Session != res.Session.ID || pv.Event != res.Event {
					t.Fatalf("step %d: preview names %s (%s), the step answered in %s (%s)", i, pv.Session, pv.Event, res.Session.ID, res.Event)
				}
				if res.Step.PrefixConsolidations == 0 && res.Step.IntentConsolidations == 0 && !res.Step.RanPending {
					if int64(pv.Tokens) != res.Usage.Input {
						t.Fatalf("step %d: preview counted %d tokens, the model received %d", i, pv.Tokens, res.Usage.Input)
					}
					compared++
					sent, memories = len(pv.Request.Messages), 0
					for _, m := range pv.Request.Messages {
						if m.Consolidated() {
							memories++
						}
					}
				}
				c.history = append(c.history, res.Answer)
			}
			if compared < tc.steps/3 {
				t.Fatalf("only %d of %d steps ran without consolidation", compared, tc.steps)
			}
			// Hippocam's system message and the framing, then the context: once consolidated, fewer
			// messages than the client's history, memories among them.
			if tc.name == "OKConsolidated" && (memories == 0 || sent >= 2+len(c.history)) {
				t.Fatalf("the last compared preview sent %d messages (%d memories) for a history of %d: the managed context was not counted", sent, memories, len(c.history))
			}
		})
	}
}

// A history that ends with the session's last answer previews that session as it stands; a
// new history previews a new session, which is not created.
func TestPreviewEndsWithAnswer(t *testing.T) {
	svc, st := newService(t, 8000)
	ctx := context.Background()
	c := &client{history: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!say hello"}}}
	res, err := svc.Continue(ctx, c.request("", false))
	if err != nil {
		t.Fatal(err)
	}
	c.history = append(c.history, res.Answer)
	pv, err := svc.Preview(ctx, c.request("", false))
	if err != nil {
		t.Fatal(err)
	}
	if pv.Session != res.Session.ID || pv.Fresh {
		t.Fatalf("preview of the whole transcript: session %q (fresh %v), want %q", pv.Session, pv.Fresh, res.Session.ID)
	}
	other := &client{history: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!say another"}}}
	pv, err = svc.Preview(ctx, other.request("", false))
	if err != nil {
		t.Fatal(err)
	}
	list, _ := st.Sessions(ctx, "t")
	if !pv.Fresh || pv.Event != sessions.EventCreated || len(list) != 1 {
		t.Fatalf("preview of a new history: fresh %v, event %s, %d sessions stored (want 1)", pv.Fresh, pv.Event, len(list))
	}
}

// A history with a system message inside a tool exchange, ending with the session's answer, is
// previewed as the session it is (it is read in the same order as the requests were).
func TestPreviewSystemInsideExchange(t *testing.T) {
	svc, _ := newService(t, 8000)
	ctx := context.Background()
	c := &client{history: []hippocam.Message{
		{Role: hippocam.RoleUser, Content: "!call run {}"},
		{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{{ID: "c1", Name: "run", Arguments: "{}"}}},
		{Role: hippocam.RoleSystem, Content: "Mind the tests."},
		{Role: hippocam.RoleTool, ToolCallID: "c1", Content: "!say done"},
	}}
	res, err := svc.Continue(ctx, c.request("", false))
	if err != nil {
		t.Fatal(err)
	}
	c.history = append(c.history, res.Answer)
	pv, err := svc.Preview(ctx, c.request("", false))
	if err != nil {
		t.Fatal(err)
	}
	if pv.Session != res.Session.ID || pv.Fresh {
		t.Fatalf("preview: session %q (fresh %v), want %q", pv.Session, pv.Fresh, res.Session.ID)
	}
}

// snapshot describes what the store holds for tenant "t": each session's version and context.
func snapshot(t *testing.T, st hippocam.Store) string {
	t.Helper()
	ctx := context.Background()
	list, err := st.Sessions(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(list))
	for _, info := range list {
		sess, err := st.Session(ctx, "t", info.ID)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, fmt.Sprintf("%s v%d n%d", sess.ID, sess.Version, len(sess.Context)))
	}
	slices.Sort(ids)
	return fmt.Sprint(ids)
}
