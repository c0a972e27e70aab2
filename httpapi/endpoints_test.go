package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sessions"
)

// sessionCount is how many sessions the default tenant has.
func (s *testServer) sessionCount(t *testing.T) int {
	t.Helper()
	list, err := s.store.Sessions(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

// The token counts of both formats are what the upstream then receives for the same request
// (the simulated model's usage counts the request it got with the same tokenizer): Hippocam's
// system message, the client's system prompt, the session's context, the tools. Counting
// creates and advances nothing.
func TestCountTokensMatchUpstream(t *testing.T) {
	t.Run("Messages", func(t *testing.T) {
		s := newServer(t, 8000, nil)
		head := `"model":"claude-x","system":"Be brief.","tools":[{"name":"read_file","description":"reads a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}]`
		msgs := `{"role":"user","content":"Hello there.\n!say hi"}`
		for turn := 0; turn < 3; turn++ {
			r := s.do(t, "POST", "/v1/messages/count_tokens", "", "", []byte(`{`+head+`,"messages":[`+msgs+`]}`))
			var count struct {
				InputTokens int `json:"input_tokens"`
			}
			r.json(t, &count)
			if r.status != 200 || count.InputTokens < 100 {
				t.Fatalf("turn %d: count_tokens: %d %s", turn, r.status, r.body)
			}
			if n := s.sessionCount(t); n != min(turn, 1) {
				t.Fatalf("turn %d: %d sessions after counting, want %d", turn, n, min(turn, 1))
			}
			r = s.do(t, "POST", "/v1/messages", "", "", []byte(`{`+head+`,"max_tokens":100,"messages":[`+msgs+`]}`))
			var answer anthropicReply
			r.json(t, &answer)
			// Anthropic's input_tokens leaves out what the prompt cache served.
			if got := answer.Usage.InputTokens + answer.Usage.CacheReadTokens; r.status != 200 || got != count.InputTokens {
				t.Fatalf("turn %d: counted %d tokens, the upstream received %d (%d %s)", turn, count.InputTokens, got, r.status, r.body)
			}
			text, _ := json.Marshal(answer.Content[0].Text)
			msgs += `,{"role":"assistant","content":` + string(text) + `},{"role":"user","content":"Turn ` + fmt.Sprint(turn) + `.\n!say ok ` + fmt.Sprint(turn) + `"}`
		}
		if n := s.sessionCount(t); n != 1 {
			t.Fatalf("%d sessions, want 1", n)
		}
	})
	t.Run("Responses", func(t *testing.T) {
		s := newServer(t, 8000, nil)
		head := `"model":"m","instructions":"Be brief.","tools":[{"type":"function","name":"read_file","parameters":{"type":"object"}}]`
		input := `"input":"Read it.\n!call read_file {\"path\":\"a.txt\"}"`
		prev := ""
		for turn := 0; turn < 2; turn++ {
			body := `{` + head + `,` + input + prev + `}`
			r := s.do(t, "POST", "/v1/responses/input_tokens", "", "", []byte(body))
			var count struct {
				Object      string `json:"object"`
				InputTokens int    `json:"input_tokens"`
			}
			r.json(t, &count)
			if r.status != 200 || count.Object != "response.input_tokens" || count.InputTokens < 100 {
				t.Fatalf("turn %d: input_tokens: %d %s", turn, r.status, r.body)
			}
			before := s.sessionCount(t)
			resp, _ := postResponses(t, s, "", body)
			if resp.Usage == nil || resp.Usage.InputTokens != count.InputTokens {
				t.Fatalf("turn %d: counted %d tokens, the upstream received %+v", turn, count.InputTokens, resp.Usage)
			}
			if turn > 0 && s.sessionCount(t) != before {
				t.Fatalf("turn %d: previous_response_id started a new session", turn)
			}
			// The next turn sends only the tool's result, after previous_response_id.
			prev = `,"previous_response_id":"` + resp.ID + `"`
			input = `"input":[{"type":"function_call_output","call_id":"` + resp.Output[0].CallID + `","output":"text of a\n!say read"}]`
		}
	})
	t.Run("NoInput", func(t *testing.T) {
		s := newServer(t, 8000, nil)
		r := s.do(t, "POST", "/v1/responses/input_tokens", "", "", []byte(`{"model":"m","instructions":"Be brief."}`))
		var count struct {
			InputTokens int `json:"input_tokens"`
		}
		r.json(t, &count)
		if r.status != 200 || count.InputTokens < 100 || s.sessionCount(t) != 0 {
			t.Fatalf("instructions alone: %d %s, %d sessions", r.status, r.body, s.sessionCount(t))
		}
	})
	t.Run("NoMessages", func(t *testing.T) {
		s := newServer(t, 8000, nil)
		r := s.do(t, "POST", "/v1/messages/count_tokens", "", "", []byte(`{"model":"m","system":"Be brief.","messages":[]}`))
		var count struct {
			InputTokens int `json:"input_tokens"`
		}
		r.json(t, &count)
		if r.status != 200 || count.InputTokens < 100 || s.sessionCount(t) != 0 {
			t.Fatalf("system prompt alone: %d %s, %d sessions", r.status, r.body, s.sessionCount(t))
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		s := newServer(t, 8000, nil)
		r := s.do(t, "POST", "/v1/messages/count_tokens", "", "", []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"nonsense"}]}]}`))
		if r.status != 400 || !strings.Contains(string(r.body), `"type":"error"`) {
			t.Fatalf("bad count_tokens: %d %s, want 400 in Anthropic's error JSON", r.status, r.body)
		}
	})
}

// GET /v1/responses/{id} gives back a stored answer as a response object; an id that names
// nothing of the tenant's is a 404 in OpenAI's error JSON.
func TestGetResponse(t *testing.T) {
	s := newServer(t, 8000, map[string]string{"k1": "one", "k2": "two"})
	r := s.do(t, "POST", "/v1/responses", "k1", "", []byte(`{"model":"m","input":"!say stored answer"}`))
	var made wire.Response
	r.json(t, &made)
	r = s.do(t, "GET", "/v1/responses/"+made.ID, "k1", "", nil)
	var got wire.Response
	r.json(t, &got)
	if r.status != 200 || got.ID != made.ID || got.Object != "response" || got.Status != "completed" || outputText(got) != "stored answer" || got.Output[0].ID != made.Output[0].ID {
		t.Fatalf("GET %s: %d %s", made.ID, r.status, r.body)
	}
	for _, c := range []struct{ id, key string }{{made.ID, "k2"}, {"resp_nothing", "k1"}, {"resp_bm9uZQ.m9", "k1"}, {strings.TrimSuffix(made.ID, made.ID[len(made.ID)-1:]) + "x", "k1"}} {
		r := s.do(t, "GET", "/v1/responses/"+c.id, c.key, "", nil)
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if r.status != 404 || json.Unmarshal(r.body, &e) != nil || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "not found") {
			t.Errorf("GET %s as %s: %d %s, want 404 in OpenAI's error JSON", c.id, c.key, r.status, r.body)
		}
	}
}

// compacted is the part of a compacted response the tests read.
type compactedReply struct {
	ID     string            `json:"id"`
	Object string            `json:"object"`
	Output []json.RawMessage `json:"output"`
	Usage  struct {
		InputTokens int `json:"input_tokens"`
	} `json:"usage"`
}

// kept is what Codex keeps of a compacted output: user and assistant messages and compaction
// items.
func kept(t *testing.T, output []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, raw := range output {
		var it struct {
			Type string `json:"type"`
			Role string `json:"role"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatal(err)
		}
		if it.Type == "compaction" || it.Type == "message" && (it.Role == "user" || it.Role == "assistant") {
			out = append(out, string(raw))
		}
	}
	return out
}

// A Responses client compacts its history with POST /v1/responses/compact and goes on with the
// compacted output: its next request continues the same session, whose transcript still holds
// the whole conversation; compacting changes no session. It works mid-turn too, with a tool
// result the session has not seen yet carried by the compaction item.
func TestCompactRoundTrip(t *testing.T) {
	s := newServer(t, 8000, nil)
	head := `"model":"m","instructions":"Be brief.","tools":[{"type":"function","name":"read_file","parameters":{"type":"object"}}]`
	var items []string // the client's history, as items
	send := func(path string, more ...string) reply {
		t.Helper()
		items = append(items, more...)
		return s.do(t, "POST", path, "", "", []byte(`{`+head+`,"input":[`+strings.Join(items, ",")+`]}`))
	}
	answer := func(r reply) wire.Response {
		t.Helper()
		var resp wire.Response
		r.json(t, &resp)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		for _, it := range resp.Output {
			b, _ := json.Marshal(it)
			items = append(items, string(b))
		}
		return resp
	}
	user := func(text string) string {
		b, _ := json.Marshal(text)
		return `{"role":"user","content":` + string(b) + `}`
	}
	r := send("/v1/responses", user("fact one: the key is 42.\n!say noted one"))
	session := r.header.Get(httpapi.SessionHeader)
	answer(r)
	answer(send("/v1/responses", user("fact two: the door is red.\n!say noted two")))
	call := answer(send("/v1/responses", user("Read it.\n!call read_file {\"path\":\"a.txt\"}")))
	if call.Output[0].Type != "function_call" {
		t.Fatalf("no tool call: %+v", call.Output)
	}
	// Mid-turn: the tool's result is in the history, not yet in the session.
	items = append(items, `{"type":"function_call_output","call_id":"`+call.Output[0].CallID+`","output":"contents of a\n!say read a"}`)
	version := func() int64 {
		sess, err := s.store.Session(context.Background(), "", session)
		if err != nil {
			t.Fatal(err)
		}
		return sess.Version
	}
	v := version()
	r = send("/v1/responses/compact")
	var cmp compactedReply
	r.json(t, &cmp)
	if r.status != 200 || cmp.Object != "response.compaction" || len(cmp.Output) < 2 || cmp.Usage.InputTokens < 100 {
		t.Fatalf("compact: %d %s", r.status, r.body)
	}
	if !strings.Contains(string(cmp.Output[len(cmp.Output)-1]), `"type":"compaction"`) || !strings.Contains(string(cmp.Output[0]), "fact one") {
		t.Fatalf("compact output: %s", r.body)
	}
	if version() != v || s.sessionCount(t) != 1 {
		t.Fatal("compacting changed the session")
	}
	// The client goes on with what it kept of the compacted output.
	items = kept(t, cmp.Output)
	r = send("/v1/responses")
	resp := answer(r)
	if outputText(resp) != "read a" || r.header.Get(httpapi.SessionHeader) != session || r.header.Get(httpapi.EventHeader) != "continued" {
		t.Fatalf("after compaction: %q in %s (%s), want \"read a\" continuing %s", outputText(resp), r.header.Get(httpapi.SessionHeader), r.header.Get(httpapi.EventHeader), session)
	}
	// Compacted twice, then a new turn: still the same session.
	r = send("/v1/responses/compact")
	r.json(t, &cmp)
	items = kept(t, cmp.Output)
	r = send("/v1/responses", user("!say after two compactions"))
	resp = answer(r)
	if outputText(resp) != "after two compactions" || r.header.Get(httpapi.SessionHeader) != session || s.sessionCount(t) != 1 {
		t.Fatalf("second compaction: %q in %s, %d sessions", outputText(resp), r.header.Get(httpapi.SessionHeader), s.sessionCount(t))
	}
	// Lossless: the session's transcript holds every message of the conversation.
	sess, err := s.store.Session(context.Background(), "", session)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := sessions.Transcript(context.Background(), hippocam.SessionArchive(s.store, "", session), sess.Context)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range msgs {
		texts = append(texts, string(m.Role)+":"+m.Content)
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"fact one", "fact two", "Read it.", "contents of a", "user:!say after two compactions", "assistant:after two compactions"} {
		if !strings.Contains(all, want) {
			t.Errorf("the transcript lacks %q: %s", want, all)
		}
	}
	if len(msgs) != 10 {
		t.Errorf("the transcript holds %d messages, want 10: %s", len(msgs), all)
	}
	// A compaction item naming a session the tenant does not have is a 404.
	forged := `{"type":"compaction","encrypted_content":"hippocam.v1.eyJzZXNzaW9uIjoibm9uZSIsImNvdW50IjoxfQ"}`
	items = nil
	if r := send("/v1/responses", forged, user("!say hi")); r.status != 404 {
		t.Fatalf("forged compaction item: %d %s, want 404", r.status, r.body)
	}
}
