package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
)

// A search the model makes is answered inside the proxy, like recall: whether the client reads
// the answer whole or streamed, it gets the text the model wrote (before its search call and
// after it, set apart by a blank line) and no tool call, while the stored answer's trace keeps
// the search exchange, whose hit lies in the archive beneath a memory.
func TestChatSearchStaysInside(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "Whole"
		if stream {
			name = "Streamed"
		}
		t.Run(name, func(t *testing.T) {
			s := newGateServer(t, 8000, nil)
			a := &agent{t: t, s: s, session: "search-" + strings.ToLower(name)}
			a.user(stream, "#open Meet the owner | the owner is met\n!say meeting")
			a.user(stream, "The owner of the shop is called Dana.\n!say noted")
			a.user(stream, "#close Meet the owner\n!say met")
			// The sim runs a scripted !call of search like any call; Hippocam answers it.
			text := a.user(stream, "!call search {\"query\":\"owner of the shop\"}\n!say searched")
			if text != "searched\n\nsearched" {
				t.Fatalf("answer %q, want the text of both responses", text)
			}
			last := a.history[len(a.history)-1]
			if len(last.ToolCalls) != 0 {
				t.Fatalf("the client received tool calls %+v", last.ToolCalls)
			}
			sess, err := s.store.Session(context.Background(), "", a.session)
			if err != nil {
				t.Fatal(err)
			}
			answer := sess.Context[len(sess.Context)-1]
			if answer.Role != hippocam.RoleAssistant || len(answer.Trace) != 2 || answer.Trace[0].ToolCalls[0].Name != engine.SearchTool {
				t.Fatalf("stored answer %q with a trace of %d messages, want the search exchange", answer.Content, len(answer.Trace))
			}
			if got := answer.Trace[1].Content; !strings.Contains(got, "1 matching message") || !strings.Contains(got, engine.SearchInMarker+"[ref:") {
				t.Errorf("search result %q: want one hit in an archived layer", got)
			}
			// The next request resends the history the client holds: the search is no part of it.
			if text := a.user(stream, "!say again"); text != "again" {
				t.Errorf("next answer %q", text)
			}
		})
	}
}

// An agent tool named search is refused, as one named recall is: the name is Hippocam's.
func TestChatSearchToolReserved(t *testing.T) {
	s := newServer(t, 8000, nil)
	body, _ := json.Marshal(wire.ChatRequest{Model: "m", Messages: []wire.ChatMessage{{Role: "user", Content: wire.StringContent("hi")}},
		Tools: []wire.ToolDef{{Type: "function", Function: wire.FunctionDef{Name: engine.SearchTool}}}})
	r := s.do(t, "POST", "/v1/chat/completions", "", "reserved", body)
	if r.status != 400 || !strings.Contains(string(r.body), "reserved") {
		t.Fatalf("status %d, body %s; want 400 naming the reserved tool", r.status, r.body)
	}
}
