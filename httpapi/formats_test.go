package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
)

// seen is one request the simulated upstream received.
type seen struct {
	role   string
	header http.Header
	body   map[string]json.RawMessage
}

// recorder is the simulated model over HTTP, keeping every request it receives.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newRecorder(t testing.TB) *recorder {
	rec := &recorder{}
	h := sim.New(tokenizer.MustDefault()).Handler()
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]json.RawMessage
		_ = json.Unmarshal(b, &body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, seen{role: r.Header.Get(hippocam.RoleHeader), header: r.Header.Clone(), body: body})
		rec.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec
}

// agentCalls returns the main model's requests so far.
func (rec *recorder) agentCalls() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []seen
	for _, s := range rec.reqs {
		if s.role == string(hippocam.CallAgent) {
			out = append(out, s)
		}
	}
	return out
}

// roleCalls returns the requests of Hippocam's own components (JANUS, PRECIP, PALIM).
func (rec *recorder) roleCalls() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []seen
	for _, s := range rec.reqs {
		if s.role != string(hippocam.CallAgent) {
			out = append(out, s)
		}
	}
	return out
}

// newServerOver returns a proxy whose upstream, the recorder, speaks upstream format f
// (FormatChat or FormatAnthropic).
func newServerOver(t testing.TB, f hippocam.Format, window int) (*testServer, *recorder) {
	t.Helper()
	rec := newRecorder(t)
	var model hippocam.Model
	switch f {
	case hippocam.FormatAnthropic:
		cfg := anthropic.DefaultConfig()
		cfg.BaseURL, cfg.Model, cfg.MaxRetries = rec.URL, "hippocam-sim", 0
		m, err := anthropic.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		model = m
	default:
		cfg := openai.DefaultConfig()
		cfg.BaseURL, cfg.Model, cfg.MaxRetries = rec.URL+"/v1", "hippocam-sim", 0
		m, err := openai.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		model = m
	}
	e, err := engine.New(engine.ForWindow(window), model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sqlite.New(t.TempDir() + "/h.db")
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: db, Keys: nil, Metrics: httpapi.NewMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &testServer{Server: ts, store: db}, rec
}

// wireMessage is a message of an upstream request, as either format writes it.
type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns the message's text: the string, or its text blocks or parts joined.
func (m wireMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &blocks)
	var texts []string
	for _, b := range blocks {
		texts = append(texts, b.Text)
	}
	return strings.Join(texts, "\n")
}

// A Claude Code request with a system message in the middle of "messages", under the beta
// that allows it, is answered in one session whichever upstream serves it: an Anthropic
// upstream gets the system message in its place and the client's betas on the main model's
// calls only; a chat upstream gets it as a system message in its place. The message is kept in
// the transcript byte for byte.
func TestMessagesMidConversationSystem(t *testing.T) {
	const (
		betas = "claude-code-20250219, mid-conversation-system-2026-04-07,effort-2025-11-24"
		mid   = `{"role":"system","content":"Plan mode is on: do not edit files."}`
	)
	u1 := `{"role":"user","content":"!say one"}`
	a1 := `{"role":"assistant","content":[{"type":"text","text":"one"}]}`
	u2 := `{"role":"user","content":[{"type":"text","text":"!say two"}]}`
	for _, up := range []hippocam.Format{hippocam.FormatAnthropic, hippocam.FormatChat} {
		t.Run(string(up), func(t *testing.T) {
			s, rec := newServerOver(t, up, 8000)
			post := func(msgs ...string) reply {
				body := `{"model":"claude-x","max_tokens":300,"system":"Be brief.","messages":[` + strings.Join(msgs, ",") + `]}`
				return s.do(t, "POST", "/v1/messages", "", "cc", []byte(body), "anthropic-beta", betas)
			}
			if r := post(u1); r.status != 200 {
				t.Fatalf("first: %d %s", r.status, r.body)
			}
			r := post(u1, a1, u2, mid)
			var ans anthropicReply
			r.json(t, &ans)
			if r.status != 200 || len(ans.Content) != 1 || ans.Content[0].Text != "two" || r.header.Get(httpapi.EventHeader) != "continued" {
				t.Fatalf("second: %d %s (%s)", r.status, r.body, r.header.Get(httpapi.EventHeader))
			}
			calls := rec.agentCalls()
			last := calls[len(calls)-1]
			var msgs []wireMessage
			_ = json.Unmarshal(last.body["messages"], &msgs)
			n := len(msgs)
			if n < 3 || msgs[n-1].Role != "system" || msgs[n-1].text() != "Plan mode is on: do not edit files." ||
				msgs[n-2].Role != "user" || !strings.Contains(msgs[n-2].text(), "!say two") {
				t.Fatalf("upstream messages end with %s, want the user message then the system message", last.body["messages"])
			}
			wantBeta := ""
			if up == hippocam.FormatAnthropic {
				wantBeta = "claude-code-20250219,mid-conversation-system-2026-04-07,effort-2025-11-24"
			}
			for _, c := range calls {
				if got := c.header.Get("Anthropic-Beta"); got != wantBeta {
					t.Errorf("main model call: anthropic-beta %q, want %q", got, wantBeta)
				}
			}
			for _, c := range rec.roleCalls() {
				if got := c.header.Get("Anthropic-Beta"); got != "" {
					t.Errorf("%s call carries anthropic-beta %q", c.role, got)
				}
			}
			ex := s.do(t, "GET", "/api/sessions/cc/expand", "", "", nil)
			var out struct {
				Messages []struct {
					Role   string           `json:"role"`
					Origin *hippocam.Origin `json:"origin"`
				} `json:"messages"`
			}
			ex.json(t, &out)
			kept := false
			for _, m := range out.Messages {
				kept = kept || (m.Role == "system" && m.Origin != nil && m.Origin.Raw == mid)
			}
			if !kept {
				t.Errorf("the system message is not in the session byte for byte: %s", ex.body)
			}
		})
	}
}

// A system or developer message after the conversation began, in the chat and Responses
// formats, is kept in its place: a chat upstream gets it as a system (or developer) message
// there, an Anthropic upstream, without the beta, as user text there.
func TestMidConversationSystemOpenAIFormats(t *testing.T) {
	const note = "Answer in French from now on."
	for _, c := range []struct {
		name, path, body string
	}{
		{"Chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"system","content":"Top."},{"role":"user","content":"!say one"},` +
			`{"role":"assistant","content":"one"},{"role":"developer","content":"` + note + `"},{"role":"user","content":"!say two"}]}`},
		{"Responses", "/v1/responses", `{"model":"m","instructions":"Top.","input":[{"role":"user","content":"!say one"},` +
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"one"}]},{"type":"message","role":"developer","content":"` + note + `"},` +
			`{"role":"user","content":"!say two"}]}`},
	} {
		for _, up := range []hippocam.Format{hippocam.FormatChat, hippocam.FormatAnthropic} {
			t.Run(c.name+"/"+string(up), func(t *testing.T) {
				s, rec := newServerOver(t, up, 8000)
				if r := s.do(t, "POST", c.path, "", "", []byte(c.body)); r.status != 200 {
					t.Fatalf("%d %s", r.status, r.body)
				}
				calls := rec.agentCalls()
				var msgs []wireMessage
				_ = json.Unmarshal(calls[len(calls)-1].body["messages"], &msgs)
				n := len(msgs)
				if n < 3 {
					t.Fatalf("upstream messages %s", calls[len(calls)-1].body["messages"])
				}
				switch up {
				case hippocam.FormatChat:
					want := "system"
					if c.name == "Chat" {
						want = "developer"
					}
					if msgs[n-3].Role != "assistant" || msgs[n-2].Role != want || msgs[n-2].text() != note || msgs[n-1].text() != "!say two" {
						t.Errorf("upstream messages end with %s, want the note as a %s message before the last", calls[len(calls)-1].body["messages"], want)
					}
				default:
					if m := msgs[n-1]; m.Role != "user" || m.text() != note+"\n!say two" {
						t.Errorf("upstream messages end with %s, want the note as user text before the last user text", calls[len(calls)-1].body["messages"])
					}
				}
			})
		}
	}
}

// A developer message between a call and its result (the Responses API takes one anywhere) is
// accepted and kept, its bytes whole, just after the result, where the chat and Messages
// formats and the engine's whole tool exchanges want it; the agent's next request, which sends
// it where it stood, continues the session.
func TestSystemInsideToolExchange(t *testing.T) {
	const note = "Mind the tests."
	history := `{"role":"user","content":"!call run {}"},` +
		`{"type":"function_call","call_id":"c1","name":"run","arguments":"{}"},` +
		`{"type":"message","role":"developer","content":"` + note + `"},` +
		`{"type":"function_call_output","call_id":"c1","output":"!say done"}`
	tools := `"tools":[{"type":"function","name":"run","parameters":{"type":"object"}}]`
	for _, up := range []hippocam.Format{hippocam.FormatChat, hippocam.FormatAnthropic} {
		t.Run(string(up), func(t *testing.T) {
			s, rec := newServerOver(t, up, 8000)
			r := s.do(t, "POST", "/v1/responses", "", "", []byte(`{"model":"m","input":[`+history+`],`+tools+`}`))
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			calls := rec.agentCalls()
			sent := string(calls[len(calls)-1].body["messages"])
			if result, at := strings.Index(sent, "!say done"), strings.Index(sent, note); result < 0 || at < result {
				t.Errorf("upstream messages %s: want the note after the tool result", sent)
			}
			name := r.header.Get(httpapi.SessionHeader)
			exp := string(s.do(t, "GET", "/api/sessions/"+name+"/expand", "", "", nil).body)
			if !strings.Contains(exp, `"raw":"{\"type\":\"message\",\"role\":\"developer\",\"content\":\"`+note+`\"}"`) {
				t.Errorf("the note's bytes are not kept: %s", exp)
			}
			next := `{"model":"m","input":[` + history + `,{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]},` +
				`{"role":"user","content":"!say again"}],` + tools + `}`
			r2 := s.do(t, "POST", "/v1/responses", "", "", []byte(next))
			if r2.status != 200 || r2.header.Get(httpapi.SessionHeader) != name || r2.header.Get(httpapi.EventHeader) != "continued" {
				t.Errorf("next request: %d, session %q (%s), want %q continued: %s", r2.status, r2.header.Get(httpapi.SessionHeader),
					r2.header.Get(httpapi.EventHeader), name, r2.body)
			}
		})
	}
}
