package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/openai/wire"
)

// expansion reads GET /api/sessions/{id}/expand.
type expandedMessage struct {
	Role        string `json:"role"`
	Content     string `json:"content"`
	Framing     int    `json:"framing"`
	Regenerated bool   `json:"regenerated"`
	Origin      *struct {
		Format string `json:"format"`
		Raw    string `json:"raw"`
	} `json:"origin"`
}

func expanded(t *testing.T, s *testServer, id string) []expandedMessage {
	t.Helper()
	var exp struct {
		Messages []expandedMessage `json:"messages"`
	}
	r := s.do(t, "GET", "/api/sessions/"+id+"/expand", "", "", nil)
	if r.status != 200 {
		t.Fatalf("expand %s: %d %s", id, r.status, r.body)
	}
	r.json(t, &exp)
	return exp.Messages
}

// A system prompt that changes on every request (a clock, a task list) updates the framing and
// stays in one session; every version is kept at the place it took effect.
func TestFramingChangesNeverFork(t *testing.T) {
	s := newServer(t, 8000, nil)
	a := &agent{t: t, s: s, session: "timey"}
	const rounds = 100
	for i := 0; i < rounds; i++ {
		a.history = append([]wire.ChatMessage{{Role: "system", Content: wire.StringContent(fmt.Sprintf("You are helpful. The time is 10:%02d.", i))}}, a.history[min(1, len(a.history)):]...)
		if i%10 == 3 {
			a.history[0].Role = "developer"
		}
		_, rep := a.send(i%2 == 0, wire.ChatMessage{Role: "user", Content: wire.StringContent(fmt.Sprintf("!say answer %d", i))})
		if id := rep.header.Get(httpapi.SessionHeader); id != "timey" {
			t.Fatalf("request %d answered in session %q, want timey", i, id)
		}
	}
	msgs := expanded(t, s, "timey")
	versions := 0
	for _, m := range msgs {
		if m.Framing > versions {
			versions = m.Framing
			if !strings.Contains(m.Content, fmt.Sprintf("10:%02d", versions-1)) {
				t.Fatalf("framing version %d holds %q", versions, m.Content)
			}
		}
	}
	if versions != rounds {
		t.Fatalf("%d framing versions kept, want %d", versions, rounds)
	}
	if got := len(msgs) - rounds; got != len(a.history)-1 {
		t.Fatalf("expansion holds %d conversation messages, the history %d", got, len(a.history)-1)
	}
	var dev int
	for _, m := range msgs {
		if m.Origin != nil && strings.Contains(m.Origin.Raw, `"developer"`) {
			dev++
		}
	}
	if dev != 10 {
		t.Fatalf("%d developer framings recoverable, want 10", dev)
	}
	var list struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	s.do(t, "GET", "/api/sessions", "", "", nil).json(t, &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(list.Sessions))
	}
}

// A client that re-serializes tool-call arguments (re-indented, keys reordered) continues the
// session instead of forking it.
func TestReserializedArgumentsContinue(t *testing.T) {
	s := newServer(t, 8000, nil)
	a := &agent{t: t, s: s, session: "tools", tools: []wire.ToolDef{{Type: "function", Function: wire.FunctionDef{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}}}}
	for i := 0; i < 5; i++ {
		msg, _ := a.send(false, wire.ChatMessage{Role: "user", Content: wire.StringContent(fmt.Sprintf("!call read_file {\"path\":\"a%d.txt\",\"n\":1}", i))})
		if len(msg.ToolCalls) != 1 {
			t.Fatalf("round %d: no tool call", i)
		}
		last := &a.history[len(a.history)-1]
		last.ToolCalls[0].Function.Arguments = fmt.Sprintf("{\n  \"n\": 1,\n  \"path\": \"a%d.txt\"\n}", i)
		_, rep := a.send(false, wire.ChatMessage{Role: "tool", ToolCallID: msg.ToolCalls[0].ID, Content: wire.StringContent("contents\n!say read")})
		if id := rep.header.Get(httpapi.SessionHeader); id != "tools" {
			t.Fatalf("round %d answered in %q", i, id)
		}
	}
}

// Without a session header, two conversations that open the same way are two sessions, and
// each continues its own.
func TestUnnamedConversationsDoNotCollide(t *testing.T) {
	s := newServer(t, 8000, nil)
	sys := wire.ChatMessage{Role: "system", Content: wire.StringContent("You are terse.")}
	a := &agent{t: t, s: s, history: []wire.ChatMessage{sys}}
	b := &agent{t: t, s: s, history: []wire.ChatMessage{sys}}
	_, ra := a.send(false, wire.ChatMessage{Role: "user", Content: wire.StringContent("!say hi")})
	_, rb := b.send(false, wire.ChatMessage{Role: "user", Content: wire.StringContent("!say hi")})
	ida, idb := ra.header.Get(httpapi.SessionHeader), rb.header.Get(httpapi.SessionHeader)
	if ida == idb || rb.header.Get(httpapi.EventHeader) != "created" {
		t.Fatalf("two conversations share session %q (event %q)", ida, rb.header.Get(httpapi.EventHeader))
	}
	// Their histories are identical so far, so either session holds either one; from the first
	// message that differs, each continues a session whose transcript is its own.
	for i := 0; i < 3; i++ {
		_, ra = a.send(false, wire.ChatMessage{Role: "user", Content: wire.StringContent(fmt.Sprintf("!say a%d", i))})
		_, rb = b.send(false, wire.ChatMessage{Role: "user", Content: wire.StringContent(fmt.Sprintf("!say b%d", i))})
	}
	ida, idb = ra.header.Get(httpapi.SessionHeader), rb.header.Get(httpapi.SessionHeader)
	if ida == idb {
		t.Fatalf("both conversations ended in session %q", ida)
	}
	for _, c := range []struct {
		id string
		h  []wire.ChatMessage
	}{{ida, a.history}, {idb, b.history}} {
		msgs := expanded(t, s, c.id)
		if len(msgs) != len(c.h) {
			t.Fatalf("session %s holds %d messages, its conversation %d", c.id, len(msgs), len(c.h))
		}
		for i, m := range msgs {
			if want, _ := c.h[i].Text(); m.Content != want {
				t.Fatalf("session %s message %d: %q, want %q", c.id, i, m.Content, want)
			}
		}
	}
}

// A history far longer than the window, sent to a fresh session, is imported and consolidated
// on the way in, then continued; every message stays recoverable.
func TestLongHistoryImports(t *testing.T) {
	s := newServer(t, 8000, nil)
	var history []wire.ChatMessage
	for i := 0; len(history) < 300; i++ {
		history = append(history,
			wire.ChatMessage{Role: "user", Content: wire.StringContent(fmt.Sprintf("fact_%d := %d\n%s", i, i*7, filler("u", 40)))},
			wire.ChatMessage{Role: "assistant", Content: wire.StringContent(fmt.Sprintf("noted %d", i))})
	}
	a := &agent{t: t, s: s, session: "long", history: history}
	if got := a.user(false, "!ask fact_3"); got != "fact_3 := 21" {
		t.Fatalf("after the import: %q", got)
	}
	if got := a.user(false, "!say continued"); got != "continued" {
		t.Fatalf("continuing: %q", got)
	}
	msgs := expanded(t, s, "long")
	if len(msgs) != len(a.history) {
		t.Fatalf("expansion holds %d messages, the history %d", len(msgs), len(a.history))
	}
	for i, m := range msgs {
		want, _ := a.history[i].Text()
		if m.Content != want {
			t.Fatalf("message %d: %q, want %q", i, m.Content, want)
		}
	}
}

// Bad input of every kind is refused with a clear 400 and changes nothing.
func TestChatRefusals(t *testing.T) {
	s := newServer(t, 8000, nil)
	a := &agent{t: t, s: s, session: "ok"}
	a.user(false, "!say first")
	before := s.do(t, "GET", "/api/sessions/ok", "", "", nil).body
	good := `{"role":"user","content":"!say x"}`
	for _, c := range []struct {
		name, session, body, want string
	}{
		{"InvalidUTF8", "ok", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", "UTF-8"},
		{"LoneSurrogate", "ok", `{"model":"m","messages":[{"role":"user","content":"\ud800"}]}`, "surrogate"},
		{"UnknownPart", "ok", `{"model":"m","messages":[{"role":"user","content":[{"type":"nonsense"}]}]}`, "nonsense"},
		{"ToolWithoutName", "ok", `{"model":"m","messages":[` + good + `],"tools":[{"type":"function","function":{"name":""}}]}`, "name"},
		{"TwoChoices", "ok", `{"model":"m","n":2,"messages":[` + good + `]}`, "n must be 1"},
		{"DotName", ".", `{"model":"m","messages":[` + good + `]}`, "not allowed"},
		{"DotDotName", "..", `{"model":"m","messages":[` + good + `]}`, "not allowed"},
		{"SlashName", "//expand", `{"model":"m","messages":[` + good + `]}`, "/"},
		{"LongName", strings.Repeat("x", 60000), `{"model":"m","messages":[` + good + `]}`, "bytes"},
		{"ControlName", "a\tb", `{"model":"m","messages":[` + good + `]}`, "control"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.do(t, "POST", "/v1/chat/completions", "", c.session, []byte(c.body))
			if r.status != 400 || !strings.Contains(string(r.body), c.want) {
				t.Fatalf("status %d, body %s; want 400 mentioning %q", r.status, r.body, c.want)
			}
		})
	}
	if after := s.do(t, "GET", "/api/sessions/ok", "", "", nil).body; string(after) != string(before) {
		t.Fatal("a refused request changed the session")
	}
	var list struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	s.do(t, "GET", "/api/sessions", "", "", nil).json(t, &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("%d sessions after the refusals, want 1", len(list.Sessions))
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/chat/completions", 405}, {"GET", "/v1/nothing", 404}, {"POST", "/api/nothing", 404},
	} {
		r := s.do(t, c.method, c.path, "", "", nil)
		var e wire.ErrorResponse
		if r.status != c.status || json.Unmarshal(r.body, &e) != nil || e.Error.Message == "" {
			t.Errorf("%s %s: %d %s, want %d with OpenAI error JSON", c.method, c.path, r.status, r.body, c.status)
		}
	}
}

// Images, developer messages and unknown fields come back byte for byte in the expansion.
func TestContentKeptByteForByte(t *testing.T) {
	s := newServer(t, 8000, nil)
	user := `{"role":"user","content":[{"type":"text","text":"!say seen"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}}],  "name":"ann", "x_custom": {"k": [1, 2.50]}}`
	dev := `{"role": "developer", "content": "Be brief."}`
	body := `{"model":"m","messages":[` + dev + `,` + user + `]}`
	r := s.do(t, "POST", "/v1/chat/completions", "", "bytes", []byte(body))
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	msgs := expanded(t, s, "bytes")
	if len(msgs) < 3 || msgs[0].Origin == nil || msgs[0].Origin.Raw != dev || msgs[1].Origin == nil || msgs[1].Origin.Raw != user {
		t.Fatalf("expansion: %+v", msgs)
	}
}
