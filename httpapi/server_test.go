package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
)

// upstream is the simulated model over HTTP, with switchable failures for the main model.
type upstream struct {
	*httptest.Server
	failStatus atomic.Int32           // when non-zero, agent calls answer this status
	failBody   atomic.Pointer[string] // the body of those answers, when set
	agentCalls atomic.Int32
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{}
	h := sim.New(tokenizer.MustDefault()).Handler()
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		role := r.Header.Get(hippocam.RoleHeader)
		if r.Method == http.MethodPost && (role == "" || role == "agent") {
			u.agentCalls.Add(1)
			if st := u.failStatus.Load(); st != 0 {
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(int(st))
				if b := u.failBody.Load(); b != nil {
					io.WriteString(w, *b)
					return
				}
				fmt.Fprintf(w, `{"error":{"message":"upstream says %d","type":"x"}}`, st)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

type testServer struct {
	*httptest.Server
	store hippocam.Store
	up    *upstream
}

func newServer(t testing.TB, window int, keys map[string]string) *testServer {
	t.Helper()
	return newServerWith(t, engine.ForWindow(window), keys)
}

// newGateServer is newServer with JANUS asked before the main call (the paper's order), for
// tests that need an intent consolidated in the very step that closes it.
func newGateServer(t testing.TB, window int, keys map[string]string) *testServer {
	t.Helper()
	ecfg := engine.ForWindow(window)
	ecfg.Janus = engine.JanusGate
	return newServerWith(t, ecfg, keys)
}

// newServerWith is newServer with the engine's configuration.
func newServerWith(t testing.TB, ecfg engine.Config, keys map[string]string) *testServer {
	t.Helper()
	up := newUpstream(t)
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.MaxRetries = up.URL+"/v1", "hippocam-sim", 0
	model, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(ecfg, model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sqlite.New(t.TempDir() + "/h.db")
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: db, Upstream: model, Keys: keys, Metrics: httpapi.NewMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &testServer{Server: ts, store: db, up: up}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("status %d, body %q: %v", r.status, r.body, err)
	}
}

func (s *testServer) do(t *testing.T, method, path, key, session string, body []byte, header ...string) reply {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if session != "" {
		req.Header.Set(httpapi.SessionHeader, session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

// agent keeps a client-side history, as an OpenAI agent does, and resends all of it.
type agent struct {
	t       *testing.T
	s       *testServer
	session string
	key     string
	history []wire.ChatMessage
	tools   []wire.ToolDef
}

func (a *agent) send(stream bool, msgs ...wire.ChatMessage) (wire.ChatMessage, reply) {
	a.t.Helper()
	a.history = append(a.history, msgs...)
	body, _ := json.Marshal(wire.ChatRequest{Model: "m", Messages: a.history, Tools: a.tools, Stream: stream, Extra: wire.Extra{"temperature": json.RawMessage("0.2")}})
	r := a.s.do(a.t, "POST", "/v1/chat/completions", a.key, a.session, body)
	if r.status != 200 {
		a.t.Fatalf("status %d: %s", r.status, r.body)
	}
	var msg wire.ChatMessage
	if stream {
		msg = assemble(a.t, r.body)
	} else {
		var resp wire.ChatResponse
		r.json(a.t, &resp)
		msg = resp.Choices[0].Message
	}
	for _, c := range msg.ToolCalls {
		if c.Function.Name == engine.RecallTool {
			a.t.Fatal("the agent saw a recall call")
		}
	}
	a.history = append(a.history, msg)
	return msg, r
}

func (a *agent) user(stream bool, text string) string {
	a.t.Helper()
	msg, _ := a.send(stream, wire.ChatMessage{Role: "user", Content: wire.StringContent(text)})
	s, _ := msg.Text()
	return s
}

func (a *agent) results(stream bool, texts ...string) string {
	a.t.Helper()
	calls := a.history[len(a.history)-1].ToolCalls
	if len(calls) != len(texts) {
		a.t.Fatalf("%d calls pending, %d results given", len(calls), len(texts))
	}
	var msgs []wire.ChatMessage
	for i, text := range texts {
		msgs = append(msgs, wire.ChatMessage{Role: "tool", ToolCallID: calls[i].ID, Content: wire.StringContent(text)})
	}
	msg, _ := a.send(stream, msgs...)
	s, _ := msg.Text()
	return s
}

// assemble rebuilds a message from an SSE body.
func assemble(t *testing.T, body []byte) wire.ChatMessage {
	t.Helper()
	msg := wire.ChatMessage{Role: "assistant"}
	text := ""
	done := false
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c wire.ChatChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("bad chunk %q: %v", data, err)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				for len(msg.ToolCalls) <= *tc.Index {
					msg.ToolCalls = append(msg.ToolCalls, wire.ToolCall{Type: "function"})
				}
				d := &msg.ToolCalls[*tc.Index]
				if tc.ID != "" {
					d.ID = tc.ID
				}
				d.Function.Name += tc.Function.Name
				d.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	if !done {
		t.Fatal("the stream did not end with [DONE]")
	}
	msg.Content = wire.StringContent(text)
	return msg
}

func filler(tag string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "row %04d | %s | item-%d | qty %d\n", i, tag, 1000+i*7%9000, i%9+1)
	}
	return b.String()
}

func expandContents(t *testing.T, s *testServer, key, id string) []string {
	t.Helper()
	r := s.do(t, "GET", "/api/sessions/"+id+"/expand", key, "", nil)
	if r.status != 200 {
		t.Fatalf("expand: %d %s", r.status, r.body)
	}
	var out struct {
		Messages []struct{ Role, Kind, Content string } `json:"messages"`
	}
	r.json(t, &out)
	var got []string
	for _, m := range out.Messages {
		if m.Kind == "raw" {
			got = append(got, m.Role+": "+m.Content)
		}
	}
	return got
}

func historyContents(h []wire.ChatMessage) []string {
	var out []string
	for _, m := range h {
		text, _ := m.Text()
		out = append(out, m.Role+": "+text)
	}
	return out
}

// A long exchange with tool calls, streaming and non-streaming turns and questions that need
// recall: every answer right, no recall call visible, /expand holds every message in order.
func TestChatLongExchange(t *testing.T) {
	s := newServer(t, 8000, nil)
	a := &agent{t: t, s: s, session: "long"}
	for k := 0; k < 8; k++ {
		a.user(k%2 == 0, fmt.Sprintf("#open Batch %d | batch %d stored\n!call store {\"batch\":%d}\n!call check {\"batch\":%d}", k, k, k, k))
		a.results(k%2 == 1, fmt.Sprintf("batch_%d := %d\ndetail batch_%d_sum := s%d\n%s", k, 100+k, k, k*13, filler("b", 30)), "checked\n"+filler("c", 10))
		a.user(false, fmt.Sprintf("#close Batch %d\n!say stored %d", k, k))
		a.user(true, fmt.Sprintf("!call log {\"k\":%d}", k))
		a.results(false, fmt.Sprintf("log_%d := ok\n%s", k, filler("l", 35)))
	}
	for q, want := range map[string]string{"batch_0": "batch_0 := 100", "batch_1_sum": "batch_1_sum := s13", "log_2": "log_2 := ok", "nothing_here": "nothing_here := unknown"} {
		if got := a.user(q == "batch_1_sum", "!ask "+q); got != want {
			t.Errorf("!ask %s = %q, want %q", q, got, want)
		}
	}
	got, want := expandContents(t, s, "", "long"), historyContents(a.history)
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("expand holds %d raw messages, the client saw %d", len(got), len(want))
	}
	var sess struct {
		Consolidations struct{ Intent, Prefix int } `json:"consolidations"`
		Usage          map[string]struct {
			Calls int `json:"calls"`
		} `json:"usage"`
	}
	s.do(t, "GET", "/api/sessions/long", "", "", nil).json(t, &sess)
	if sess.Consolidations.Intent == 0 || sess.Consolidations.Prefix == 0 || sess.Usage["janus"].Calls == 0 {
		t.Fatalf("session: %+v", sess)
	}
	metrics := s.do(t, "GET", "/metrics", "", "", nil)
	for _, name := range []string{"hippocam_http_requests_total", "hippocam_model_tokens_total", "hippocam_consolidations_total", "hippocam_model_cost_usd_total"} {
		if !bytes.Contains(metrics.body, []byte(name)) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// Bad input gets a 4xx with OpenAI's error JSON and leaves the session exactly as it was.
func TestChatBadInputChangesNothing(t *testing.T) {
	s := newServer(t, 8000, nil)
	a := &agent{t: t, s: s, session: "bad"}
	a.user(false, "!call look {}")
	a.results(false, "seen")
	before := s.do(t, "GET", "/api/sessions/bad", "", "", nil).body
	valid, _ := json.Marshal(a.history)
	for name, body := range map[string]string{
		"MalformedJSON":  `{"messages": [`,
		"NoMessages":     `{"model":"m"}`,
		"EmptyMessages":  `{"model":"m","messages":[]}`,
		"UnknownRole":    `{"model":"m","messages":[{"role":"wizard","content":"hi"}]}`,
		"OrphanResult":   `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"nope","content":"x"}]}`,
		"BadContent":     `{"model":"m","messages":[{"role":"user","content":42}]}`,
		"EndsWithAnswer": `{"model":"m","messages":` + string(valid) + `}`,
		"Oversize":       `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", httpapi.DefaultMaxBodyBytes+10) + `"}]}`,
		"ReservedTool":   `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"recall"}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := s.do(t, "POST", "/v1/chat/completions", "", "bad", []byte(body))
			if r.status < 400 || r.status >= 500 {
				t.Fatalf("status %d, want 4xx", r.status)
			}
			var e wire.ErrorResponse
			r.json(t, &e)
			if e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("not OpenAI error JSON: %s", r.body)
			}
			if after := s.do(t, "GET", "/api/sessions/bad", "", "", nil).body; !bytes.Equal(before, after) {
				t.Fatal("the session changed")
			}
		})
	}
}

// Keys: 401 without one; tenants cannot read, recall from or write into each other's sessions,
// even under the same session name; delete removes everything.
func TestTenantsAndDelete(t *testing.T) {
	s := newGateServer(t, 8000, map[string]string{"ka": "alice", "kb": "bob"})
	if r := s.do(t, "GET", "/api/sessions", "", "", nil); r.status != 401 {
		t.Fatalf("no key: status %d", r.status)
	}
	if r := s.do(t, "POST", "/v1/chat/completions", "wrong", "x", []byte(`{"messages":[{"role":"user","content":"hi"}]}`)); r.status != 401 {
		t.Fatalf("wrong key: status %d", r.status)
	}
	if r := s.do(t, "GET", "/healthz", "", "", nil); r.status != 200 {
		t.Fatalf("healthz: %d", r.status)
	}
	alice := &agent{t: t, s: s, session: "shared", key: "ka"}
	alice.user(false, "#open Keep secret | kept\nsecret := alice-only\n!say noted")
	alice.user(false, "#close Keep secret\n!say done")
	bob := &agent{t: t, s: s, session: "shared", key: "kb"}
	if got := bob.user(false, "!ask secret"); got != "secret := unknown" {
		t.Fatalf("bob read alice's secret: %q", got)
	}
	var list struct {
		Sessions []struct{ ID string } `json:"sessions"`
	}
	s.do(t, "GET", "/api/sessions", "kb", "", nil).json(t, &list)
	var ref string
	var sess struct {
		Context []struct{ Ref string } `json:"context"`
	}
	s.do(t, "GET", "/api/sessions/shared", "ka", "", nil).json(t, &sess)
	for _, m := range sess.Context {
		if m.Ref != "" {
			ref = m.Ref
		}
	}
	if ref == "" {
		t.Fatal("alice's session has no consolidated message")
	}
	if r := s.do(t, "GET", "/api/sessions/shared/nodes/"+ref, "kb", "", nil); r.status != 404 && r.status != 403 {
		t.Fatalf("bob opened alice's node: %d %s", r.status, r.body)
	}
	if got := expandContents(t, s, "kb", "shared"); strings.Contains(strings.Join(got, "\n"), "alice-only") {
		t.Fatal("bob's expand shows alice's secret")
	}
	if r := s.do(t, "DELETE", "/api/sessions/shared", "ka", "", nil); r.status != 204 {
		t.Fatalf("delete: %d", r.status)
	}
	for _, path := range []string{"/api/sessions/shared", "/api/sessions/shared/expand", "/api/sessions/shared/nodes/" + ref} {
		if r := s.do(t, "GET", path, "ka", "", nil); r.status != 404 {
			t.Fatalf("%s after delete: %d", path, r.status)
		}
	}
	if got := expandContents(t, s, "kb", "shared"); len(got) == 0 {
		t.Fatal("deleting alice's session removed bob's")
	}
}

// state is what a failed request must leave as it was: the context, the stack, the transcript's
// messages. (The usage of the calls the failed step made is recorded: they were paid for.)
func state(t *testing.T, s *testServer, id string) (string, float64) {
	t.Helper()
	var v struct {
		Context json.RawMessage `json:"context"`
		Stack   json.RawMessage `json:"stack"`
		Framing json.RawMessage `json:"framing"`
		Totals  struct {
			Calls int `json:"calls"`
		} `json:"totals"`
	}
	s.do(t, "GET", "/api/sessions/"+id, "", "", nil).json(t, &v)
	return string(v.Context) + string(v.Stack) + string(v.Framing), float64(v.Totals.Calls)
}

// Upstream 429 and 5xx come back mapped, Retry-After kept; nothing is recorded half-way (but the
// usage of the calls made) and the next request continues the session.
func TestUpstreamFailures(t *testing.T) {
	s := newServer(t, 8000, nil)
	a := &agent{t: t, s: s, session: "flaky"}
	a.user(false, "#open Work | done\nfact := 1\n!say first")
	before, calls := state(t, s, "flaky")
	for status, want := range map[int]int{429: 429, 500: 502, 503: 503} {
		s.up.failStatus.Store(int32(status))
		body, _ := json.Marshal(wire.ChatRequest{Model: "m", Messages: append(a.history, wire.ChatMessage{Role: "user", Content: wire.StringContent("!say second")})})
		r := s.do(t, "POST", "/v1/chat/completions", "", "flaky", body)
		if r.status != want {
			t.Fatalf("upstream %d: status %d, want %d", status, r.status, want)
		}
		if status == 429 && r.header.Get("Retry-After") != "7" {
			t.Fatalf("Retry-After = %q", r.header.Get("Retry-After"))
		}
		after, n := state(t, s, "flaky")
		if after != before {
			t.Fatal("a failed request changed the session")
		}
		if n < calls {
			t.Fatalf("usage went down from %v to %v calls", calls, n)
		}
		calls = n
	}
	s.up.failStatus.Store(0)
	if got := a.user(false, "!say second"); got != "second" {
		t.Fatalf("after the failures: %q", got)
	}
}

// A retried request (its answer never reached the client) gets the same answer without a new
// step; a history that diverges continues in a fork and leaves the session as it was.
func TestRetryAndFork(t *testing.T) {
	s := newServer(t, 8000, nil)
	a := &agent{t: t, s: s, session: "conv"}
	a.user(false, "!say one")
	a.user(false, "!say two")
	calls := s.up.agentCalls.Load()
	retry, _ := json.Marshal(wire.ChatRequest{Model: "m", Messages: a.history[:len(a.history)-1]})
	r := s.do(t, "POST", "/v1/chat/completions", "", "conv", retry, "X-Stainless-Retry-Count", "1")
	var resp wire.ChatResponse
	r.json(t, &resp)
	if text, _ := resp.Choices[0].Message.Text(); text != "two" || s.up.agentCalls.Load() != calls || r.header.Get(httpapi.EventHeader) != "retried" {
		t.Fatalf("retry: %q, %d new model calls, event %q", text, s.up.agentCalls.Load()-calls, r.header.Get(httpapi.EventHeader))
	}
	// The same history without a retry mark is a regeneration: a new answer, the old one kept.
	r = s.do(t, "POST", "/v1/chat/completions", "", "conv", retry)
	r.json(t, &resp)
	if text, _ := resp.Choices[0].Message.Text(); text != "two" || s.up.agentCalls.Load() != calls+1 || r.header.Get(httpapi.EventHeader) != "regenerated" {
		t.Fatalf("regeneration: %q, %d new model calls, event %q", text, s.up.agentCalls.Load()-calls, r.header.Get(httpapi.EventHeader))
	}
	var exp struct {
		Messages []struct {
			Content     string `json:"content"`
			Regenerated bool   `json:"regenerated"`
		} `json:"messages"`
	}
	s.do(t, "GET", "/api/sessions/conv/expand", "", "", nil).json(t, &exp)
	if n := len(exp.Messages); n != len(a.history)+1 || !exp.Messages[n-2].Regenerated || exp.Messages[n-2].Content != "two" || exp.Messages[n-1].Regenerated {
		t.Fatalf("expansion after a regeneration: %+v", exp.Messages)
	}
	a.history[len(a.history)-1] = wire.FromMessage(&hippocam.Message{Role: hippocam.RoleAssistant, Content: "two"})
	before := s.do(t, "GET", "/api/sessions/conv", "", "", nil).body
	b := &agent{t: t, s: s, session: "conv", history: append([]wire.ChatMessage(nil), a.history[:2]...)}
	_, rep := b.send(false, wire.ChatMessage{Role: "user", Content: wire.StringContent("!say other branch")})
	if id := rep.header.Get(httpapi.SessionHeader); id != "conv~2" {
		t.Fatalf("fork answered in session %q, want conv~2", id)
	}
	if after := s.do(t, "GET", "/api/sessions/conv", "", "", nil).body; !bytes.Equal(before, after) {
		t.Fatal("the diverging history changed the original session")
	}
	b.user(false, "!say still the branch")
	a.user(false, "!say three")
	if got := len(expandContents(t, s, "", "conv~2")); got != len(b.history) {
		t.Fatalf("fork holds %d messages, the branch has %d", got, len(b.history))
	}
	if got := len(expandContents(t, s, "", "conv")); got != len(a.history)+1 {
		t.Fatalf("original holds %d messages, its history has %d", got, len(a.history))
	}
}

// Requests of different sessions run in parallel; requests of one session are serialized.
func TestConcurrentSessions(t *testing.T) {
	s := newServer(t, 8000, nil)
	for i := 0; i < 6; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			a := &agent{t: t, s: s, session: fmt.Sprintf("par-%d", i)}
			for k := 0; k < 5; k++ {
				if got := a.user(k%2 == 0, fmt.Sprintf("k%d := %d\n!say ok %d", k, i, k)); got != fmt.Sprintf("ok %d", k) {
					t.Errorf("session %d step %d: %q", i, k, got)
				}
			}
		})
	}
}

// GET /v1/models passes through to the upstream.
func TestModelsPassThrough(t *testing.T) {
	s := newServer(t, 8000, nil)
	r := s.do(t, "GET", "/v1/models", "", "", nil)
	if r.status != 200 || !bytes.Contains(r.body, []byte("hippocam-sim")) {
		t.Fatalf("models: %d %s", r.status, r.body)
	}
}

// Two replicas over one store: a replica whose cached copy of a session is stale sees so before
// it runs the step (the cache checks the stored version) and reads the store again, so nothing
// is overwritten and no request fails. (A commit that still loses a race gets a 409, which SDKs
// retry: the store tests and sessions/replica_test.go cover it.)
func TestReplicasShareOneStore(t *testing.T) {
	a := newServer(t, 8000, nil)
	srv, err := httpapi.New(httpapi.Config{Engine: mustEngineFor(t, a), Store: a.store})
	if err != nil {
		t.Fatal(err)
	}
	bts := httptest.NewServer(srv)
	defer bts.Close()
	b := &testServer{Server: bts, store: a.store, up: a.up}
	var history []wire.ChatMessage
	conflicts := 0
	say := func(s *testServer, text string) {
		t.Helper()
		history = append(history, wire.ChatMessage{Role: "user", Content: wire.StringContent(text)})
		body, _ := json.Marshal(wire.ChatRequest{Model: "m", Messages: history})
		r := s.do(t, "POST", "/v1/chat/completions", "", "shared", body)
		if r.status == 409 { // a stale cached copy: the retry reads the store
			conflicts++
			r = s.do(t, "POST", "/v1/chat/completions", "", "shared", body)
		}
		if r.status != 200 {
			t.Fatalf("%q: status %d %s", text, r.status, r.body)
		}
		var resp wire.ChatResponse
		r.json(t, &resp)
		history = append(history, resp.Choices[0].Message)
	}
	say(a, "!say one")
	say(b, "!say two")
	say(a, "!say three") // a cached the session at "one"
	say(b, "!say four")  // b cached it at "two"
	if conflicts != 0 {
		t.Fatalf("%d conflicts: a stale cached copy was used", conflicts)
	}
	if got := expandContents(t, a, "", "shared"); len(got) != len(history) {
		t.Fatalf("store holds %d messages, the client saw %d", len(got), len(history))
	}
}

func mustEngineFor(t *testing.T, s *testServer) *engine.Engine {
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.MaxRetries = s.up.URL+"/v1", "hippocam-sim", 0
	model, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.ForWindow(8000), model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A failed first request leaves no session behind, and a failed diverging request leaves no fork
// that could capture the original conversation.
func TestFailedRequestsLeaveNothing(t *testing.T) {
	s := newServer(t, 8000, nil)
	s.up.failStatus.Store(503)
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"!say hi"}]}`)
	if r := s.do(t, "POST", "/v1/chat/completions", "", "ghost", body); r.status != 503 {
		t.Fatalf("status %d", r.status)
	}
	if r := s.do(t, "GET", "/api/sessions/ghost", "", "", nil); r.status != 404 {
		t.Fatalf("a failed first request left session ghost: %d", r.status)
	}
	s.up.failStatus.Store(0)
	a := &agent{t: t, s: s, session: "x"}
	a.user(false, "!say one")
	s.up.failStatus.Store(503)
	div, _ := json.Marshal(wire.ChatRequest{Model: "m", Messages: []wire.ChatMessage{{Role: "user", Content: wire.StringContent("!say other")}}})
	if r := s.do(t, "POST", "/v1/chat/completions", "", "x", div); r.status != 503 {
		t.Fatalf("status %d", r.status)
	}
	s.up.failStatus.Store(0)
	_, rep := a.send(false, wire.ChatMessage{Role: "user", Content: wire.StringContent("!say two")})
	if id := rep.header.Get(httpapi.SessionHeader); id != "x" {
		t.Fatalf("the original conversation continued in %q", id)
	}
}

// Forks are found however they are numbered: deleting one does not reroute the others.
func TestForksSurviveDeletes(t *testing.T) {
	s := newServer(t, 8000, nil)
	open := func(text string) *agent {
		a := &agent{t: t, s: s, session: "z"}
		a.user(false, text)
		return a
	}
	z1, z2, z3 := open("!say first"), open("!say second"), open("!say third")
	_ = z1
	_ = z2
	if r := s.do(t, "DELETE", "/api/sessions/z~2", "", "", nil); r.status != 204 {
		t.Fatalf("delete: %d", r.status)
	}
	_, rep := z3.send(false, wire.ChatMessage{Role: "user", Content: wire.StringContent("!say on")})
	if id := rep.header.Get(httpapi.SessionHeader); id != "z~3" {
		t.Fatalf("the third conversation continued in %q, want z~3", id)
	}
	n := open("!say fourth")
	_, rep = n.send(false, wire.ChatMessage{Role: "user", Content: wire.StringContent("!say more")})
	if id := rep.header.Get(httpapi.SessionHeader); id != "z~4" {
		t.Fatalf("a new fork took %q, want z~4", id)
	}
}

// Without a session header, conversations that share a system prompt but start with different
// user messages get different sessions.
func TestAutoSessionNames(t *testing.T) {
	s := newServer(t, 8000, nil)
	ids := map[string]bool{}
	for _, task := range []string{"!say task one", "!say task two"} {
		body, _ := json.Marshal(wire.ChatRequest{Model: "m", Messages: []wire.ChatMessage{{Role: "system", Content: wire.StringContent("You are an agent.")}, {Role: "user", Content: wire.StringContent(task)}}})
		r := s.do(t, "POST", "/v1/chat/completions", "", "", body)
		if r.status != 200 {
			t.Fatalf("status %d %s", r.status, r.body)
		}
		ids[r.header.Get(httpapi.SessionHeader)] = true
	}
	if len(ids) != 2 {
		t.Fatalf("sessions %v, want two different ones", ids)
	}
}

// The upstream refusing the operator's key is a 502 that does not quote the provider.
func TestUpstreamAuthFailureHidesDetails(t *testing.T) {
	s := newServer(t, 8000, nil)
	s.up.failStatus.Store(401)
	r := s.do(t, "POST", "/v1/chat/completions", "", "k", []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if r.status != 502 || bytes.Contains(r.body, []byte("upstream says")) {
		t.Fatalf("status %d body %s", r.status, r.body)
	}
}
