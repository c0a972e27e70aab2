package sessions_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sessions"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
	"pgregory.net/rapid"
)

// newService returns a service over an in-memory store, with the simulated model upstream.
func newService(tb testing.TB, window int) (*sessions.Service, hippocam.Store) {
	tb.Helper()
	tok := tokenizer.MustDefault()
	model, err := openai.New(openai.Config{BaseURL: "http://sim.local/v1", Model: sim.ModelID,
		HTTPClient: &http.Client{Transport: sim.New(tok).Transport()}})
	if err != nil {
		tb.Fatal(err)
	}
	e, err := engine.New(engine.ForWindow(window), model, tok, nil)
	if err != nil {
		tb.Fatal(err)
	}
	st := inmem.New()
	svc, err := sessions.New(sessions.Config{Engine: e, Store: st})
	if err != nil {
		tb.Fatal(err)
	}
	return svc, st
}

// client is an agent's side of a conversation: its framing and the history it resends.
type client struct {
	framing []hippocam.Message
	history []hippocam.Message
}

func (c *client) request(name string, retry bool) *sessions.Request {
	conv := &hippocam.Conversation{Format: hippocam.FormatChat, Framing: slices.Clone(c.framing), Messages: slices.Clone(c.history),
		Tools: []hippocam.Tool{{Name: "read_file", Parameters: []byte(`{"type":"object"}`)}}}
	return &sessions.Request{Tenant: "t", Name: name, Conversation: conv, Retry: retry, Received: time.Now()}
}

// Random interleavings of framing changes, transport retries, regenerations, re-serialized
// tool-call arguments and divergences: the session the client continues always holds exactly
// the client's conversation (every message once, in order, regenerated answers kept beside it),
// every framing version is kept, and the client forks only when its history truly diverged.
func TestServiceInterleavings(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		svc, st := newService(t, rapid.SampledFrom([]int{4000, 8000}).Draw(rt, "window"))
		ctx := context.Background()
		c := &client{framing: []hippocam.Message{{Role: hippocam.RoleSystem, Content: "You help."}}}
		current := "s"
		forks := 0
		// What each session holds, to know what a fork takes over: its transcript, and where
		// its framing versions and regenerated answers stand in it.
		type mark struct {
			pos     int    // transcript messages before it
			framing string // a framing version's text; "" for a regenerated answer
		}
		held := map[string][]hippocam.Message{}
		marks := map[string][]mark{}
		unknown := false // the counts of a fork continued later are not tracked
		var lastReq *sessions.Request
		steps := rapid.IntRange(3, 25).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			op := rapid.IntRange(0, 5).Draw(rt, "op")
			if lastReq == nil || len(c.history) < 2 {
				op = 0
			}
			var req *sessions.Request
			switch op {
			case 0, 1: // a new user message, sometimes asking for a tool
				text := fmt.Sprintf("fact_%d := %d\n!say answer %d", i, i, i)
				if op == 1 {
					text = fmt.Sprintf("!call read_file {\"path\":\"f%d\", \"n\": %d}", i, i)
				}
				c.history = append(c.history, hippocam.Message{Role: hippocam.RoleUser, Content: text})
				req = c.request("s", false)
			case 2: // the framing changes
				c.framing = []hippocam.Message{{Role: hippocam.RoleSystem, Content: fmt.Sprintf("You help. It is %d o'clock.", i)}}
				c.history = append(c.history, hippocam.Message{Role: hippocam.RoleUser, Content: fmt.Sprintf("!say framed %d", i)})
				req = c.request("s", false)
			case 3: // a transport retry of the last request
				c.history = slices.Clone(lastReq.Conversation.Messages)
				req = c.request("s", true)
			case 4: // a regeneration of the last request
				c.history = slices.Clone(lastReq.Conversation.Messages)
				req = c.request("s", false)
			case 5: // the client edits its history: a true divergence
				cut := rapid.IntRange(0, len(c.history)-1).Draw(rt, "cut")
				for cut > 0 && c.history[cut].Role == hippocam.RoleTool {
					cut--
				}
				c.history = append(slices.Clone(c.history[:cut]), hippocam.Message{Role: hippocam.RoleUser, Content: fmt.Sprintf("!say edited %d", i)})
				req = c.request("s", false)
				forks++
			}
			res, err := svc.Continue(ctx, req)
			if err != nil {
				rt.Fatalf("step %d (op %d): %v", i, op, err)
			}
			n, framing := len(req.Conversation.Messages), c.framing[0].Content
			switch {
			case res.Event == sessions.EventCreated:
				marks[res.Session.ID] = []mark{{0, framing}}
			case res.Event == sessions.EventForked:
				// The fork takes over what its origin held before the shared messages end,
				// and marks the request's framing when it is not the one in effect there.
				from := res.Session.Transcript.Fork.From
				at := common(held[from], req.Conversation.Messages)
				if at != res.Session.Transcript.Fork.At || at < common(held["s"], req.Conversation.Messages) {
					rt.Fatalf("step %d: forked from %s at %d; it shares %d messages with it, %d with s", i, from, res.Session.Transcript.Fork.At, at, common(held["s"], req.Conversation.Messages))
				}
				var kept []mark
				effect := ""
				for _, m := range marks[from] {
					if at > 0 && m.pos < at {
						kept = append(kept, m)
						if m.framing != "" {
							effect = m.framing
						}
					}
				}
				if effect != framing {
					pos := n
					if at == 0 {
						pos = 0
					}
					kept = append(kept, mark{pos, framing})
				}
				marks[res.Session.ID] = kept
			case op == 2:
				marks[res.Session.ID] = append(marks[res.Session.ID], mark{n, framing})
			case op == 4:
				marks[res.Session.ID] = append(marks[res.Session.ID], mark{n, ""})
			}
			if op == 5 {
				if res.Event != sessions.EventForked && res.Event != sessions.EventContinued {
					rt.Fatalf("step %d: a divergence answered as %s", i, res.Event)
				}
				if res.Event == sessions.EventContinued {
					forks-- // the edit happened to extend a fork made earlier
					unknown = true
				}
				current = res.Session.ID
			} else if res.Session.ID != current {
				rt.Fatalf("step %d (op %d): answered in %q, want %q (event %s)", i, op, res.Session.ID, current, res.Event)
			}
			if op == 3 && res.Event != sessions.EventRetried {
				rt.Fatalf("step %d: a retry answered as %s", i, res.Event)
			}
			if op == 4 && res.Event != sessions.EventRegenerated {
				rt.Fatalf("step %d: a regeneration answered as %s", i, res.Event)
			}
			lastReq = req
			answer := res.Answer
			c.history = append(c.history, hippocam.Message{Role: hippocam.RoleAssistant, Content: answer.Content, ToolCalls: reserialize(answer.ToolCalls)})
			for _, call := range answer.ToolCalls {
				c.history = append(c.history, hippocam.Message{Role: hippocam.RoleTool, ToolCallID: call.ID, Content: "file text\n!say read"})
			}
			if len(answer.ToolCalls) > 0 {
				// The results go out at once, in the same client turn.
				res, err := svc.Continue(ctx, c.request("s", false))
				if err != nil || res.Session.ID != current {
					rt.Fatalf("step %d: tool results: %v (session %v)", i, err, res)
				}
				lastReq = nil
				c.history = append(c.history, hippocam.Message{Role: hippocam.RoleAssistant, Content: res.Answer.Content})
			}
			checkSession(rt, st, current, c.history)
			held[current] = slices.Clone(c.history)
		}
		list, _ := st.Sessions(ctx, "t")
		if len(list) != forks+1 {
			rt.Fatalf("%d sessions, want %d (the session and %d forks)", len(list), forks+1, forks)
		}
		if unknown {
			return
		}
		sess, _ := st.Session(ctx, "t", current)
		all, _ := hippocam.Expand(ctx, hippocam.SessionArchive(st, "t", current), sess.Context)
		framings, answers := 0, 0
		for _, m := range all {
			switch m.Role {
			case hippocam.RoleSystem:
				framings++
			case hippocam.RoleAssistant:
				answers++
			}
		}
		versions, regenerated := 0, 0
		for _, m := range marks[current] {
			if m.framing != "" {
				versions++
			} else {
				regenerated++
			}
		}
		if framings != versions {
			rt.Fatalf("%d framing versions kept, want %d", framings, versions)
		}
		transcriptAnswers := 0
		for _, m := range c.history {
			if m.Role == hippocam.RoleAssistant {
				transcriptAnswers++
			}
		}
		if answers != transcriptAnswers+regenerated {
			rt.Fatalf("%d answers kept, want %d and %d regenerated", answers, transcriptAnswers, regenerated)
		}
	})
}

// common counts the messages two histories open with, compared as the transcript compares
// them (tool-call arguments as JSON values, which reserialize keeps).
func common(a, b []hippocam.Message) int {
	n := 0
	for n < len(a) && n < len(b) && hippocam.TranscriptHash("", &a[n]) == hippocam.TranscriptHash("", &b[n]) {
		n++
	}
	return n
}

// reserialize writes tool-call arguments the way some clients do: re-indented.
func reserialize(calls []hippocam.ToolCall) []hippocam.ToolCall {
	out := slices.Clone(calls)
	for i := range out {
		out[i].Arguments = strings.ReplaceAll(strings.ReplaceAll(out[i].Arguments, ",", ",\n  "), "{", "{\n  ")
	}
	return out
}

// checkSession checks that the session's transcript is exactly the client's history, with
// regenerated answers and framing versions left out.
func checkSession(rt *rapid.T, st hippocam.Store, id string, history []hippocam.Message) {
	ctx := context.Background()
	sess, err := st.Session(ctx, "t", id)
	if err != nil {
		rt.Fatal(err)
	}
	got, err := sessions.Transcript(ctx, hippocam.SessionArchive(st, "t", id), sess.Context)
	if err != nil {
		rt.Fatal(err)
	}
	if len(got) != len(history) {
		rt.Fatalf("session %s holds %d transcript messages, the client %d", id, len(got), len(history))
	}
	for i := range got {
		if got[i].Role != history[i].Role || got[i].Content != history[i].Content {
			rt.Fatalf("session %s message %d: %s %q, want %s %q", id, i, got[i].Role, got[i].Content, history[i].Role, history[i].Content)
		}
	}
	all, err := hippocam.Expand(ctx, hippocam.SessionArchive(st, "t", id), sess.Context)
	if err != nil {
		rt.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range all {
		if seen[m.ID] {
			rt.Fatalf("session %s: message %s appears twice in the expansion", id, m.ID)
		}
		seen[m.ID] = true
	}
}
