package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
)

// okAnswer is a plain successful answer.
const okAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`

// upstream is a fake Messages endpoint that answers with the next of its scripted replies and
// records what it was sent.
type upstream struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []func(w http.ResponseWriter)
	got     []*http.Request
	bodies  [][]byte
	times   []time.Time
}

func newUpstream(t *testing.T, replies ...func(w http.ResponseWriter)) *upstream {
	t.Helper()
	u := &upstream{t: t, replies: replies}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		n := len(u.got)
		u.got, u.bodies, u.times = append(u.got, r), append(u.bodies, b), append(u.times, time.Now())
		u.mu.Unlock()
		if n >= len(u.replies) {
			http.Error(w, "no more replies", http.StatusTeapot)
			return
		}
		u.replies[n](w)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.got)
}

// reply answers with status, body and headers given as name, value pairs.
func reply(status int, body string, headers ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func newClient(t *testing.T, base string, edit ...func(*anthropic.Config)) *anthropic.Client {
	t.Helper()
	cfg := anthropic.Config{BaseURL: base, APIKey: "sk-test", Model: "claude-test", MaxRetries: 3,
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Second, Timeout: 5 * time.Second}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func userRequest(text string) *hippocam.Request {
	return &hippocam.Request{Role: hippocam.CallJanus, Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: text}}}
}

func TestClientHeaders(t *testing.T) {
	up := newUpstream(t, reply(200, okAnswer))
	c := newClient(t, up.srv.URL+"/")
	resp, err := c.Complete(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "ok" || resp.FinishReason != "stop" || resp.Message.Role != hippocam.RoleAssistant || resp.Message.Kind != hippocam.KindRaw {
		t.Errorf("response %+v", resp)
	}
	r := up.got[0]
	for name, want := range map[string]string{
		"X-Api-Key": "sk-test", "Anthropic-Version": "2023-06-01", "Content-Type": "application/json",
		hippocam.RoleHeader: "janus", "Authorization": "",
	} {
		if got := r.Header.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		t.Errorf("%s %s", r.Method, r.URL.Path)
	}
	var body map[string]any
	if err := json.Unmarshal(up.bodies[0], &body); err != nil {
		t.Fatal(err)
	}
	if body["model"] != "claude-test" || body["max_tokens"] != float64(anthropic.DefaultMaxTokens) || body["stream"] != nil {
		t.Errorf("body %s", up.bodies[0])
	}

	t.Run("BaseURLWithV1", func(t *testing.T) {
		up := newUpstream(t, reply(200, okAnswer))
		c := newClient(t, up.srv.URL+"/v1")
		if _, err := c.Complete(context.Background(), userRequest("hi")); err != nil {
			t.Fatal(err)
		}
		if p := up.got[0].URL.Path; p != "/v1/messages" {
			t.Errorf("path %s", p)
		}
	})
}

func TestClientRequestMapping(t *testing.T) {
	up := newUpstream(t, reply(200, okAnswer))
	c := newClient(t, up.srv.URL)
	thinking := `{"type":"thinking","thinking":"hm","signature":"s1"}`
	anth := hippocam.FormatAnthropic
	req := &hippocam.Request{
		Model: "claude-other",
		Messages: []hippocam.Message{
			{Role: hippocam.RoleSystem, Content: "Rule one."},
			{Role: hippocam.RoleSystem, Content: "Rule two."},
			{Role: hippocam.RoleUser, Content: "Look:", Parts: []hippocam.Part{
				{Type: hippocam.PartImage, URL: "data:image/png;base64,iVBORw0KGgo="},
				{Type: hippocam.PartImage, URL: "https://example.com/x.jpg"},
				{Type: hippocam.PartAudio, Data: "AAAA"},
			}},
			{Role: hippocam.RoleAssistant, Content: "Calling.", Parts: []hippocam.Part{{Type: anthropic.PartThinking, Format: anth, Raw: thinking}},
				ToolCalls: []hippocam.ToolCall{{ID: "t1", Name: "read", Arguments: `{"p":"a"}`}, {ID: "t2", Name: "list", Arguments: "oops"}}},
			{Role: hippocam.RoleTool, ToolCallID: "t1", Content: "contents"},
			{Role: hippocam.RoleUser, Content: "and also"},
			{Role: hippocam.RoleTool, ToolCallID: "t2", Content: "failed", Parts: []hippocam.Part{{Type: anthropic.PartToolError, Format: anth}}},
			{Role: hippocam.RoleAssistant, Content: "Done.  \n"},
		},
		Tools: []hippocam.Tool{
			{Name: "read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string"}}}`)},
			{Name: "list"},
		},
		ToolChoice: "required",
		MaxTokens:  77,
		Extra: json.RawMessage(`{"temperature":1.5,"top_p":0.9,"stop":"END","seed":7,"response_format":{"type":"json_object"},` +
			`"metadata":{"user_id":"u9","team":"x"},"parallel_tool_calls":false,"service_tier":"flex","container":"c-1","max_tokens":5,"stream":true}`),
	}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := `{
	  "model": "claude-other", "max_tokens": 77,
	  "system": [{"type":"text","text":"Rule one."},{"type":"text","text":"Rule two.","cache_control":{"type":"ephemeral"}}],
	  "messages": [
	    {"role":"user","content":[
	      {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
	      {"type":"image","source":{"type":"url","url":"https://example.com/x.jpg"}},
	      {"type":"text","text":"Look:"}]},
	    {"role":"assistant","content":[
	      {"type":"thinking","thinking":"hm","signature":"s1"},
	      {"type":"text","text":"Calling."},
	      {"type":"tool_use","id":"t1","name":"read","input":{"p":"a"}},
	      {"type":"tool_use","id":"t2","name":"list","input":{}}]},
	    {"role":"user","content":[
	      {"type":"tool_result","tool_use_id":"t1","content":"contents"},
	      {"type":"tool_result","tool_use_id":"t2","content":"failed","is_error":true},
	      {"type":"text","text":"and also","cache_control":{"type":"ephemeral"}}]},
	    {"role":"assistant","content":[{"type":"text","text":"Done.","cache_control":{"type":"ephemeral"}}]}
	  ],
	  "tools": [
	    {"name":"read","description":"Read a file","input_schema":{"type":"object","properties":{"p":{"type":"string"}}}},
	    {"name":"list","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
	  "tool_choice": {"type":"any","disable_parallel_tool_use":true},
	  "temperature": 1, "stop_sequences": ["END"]
	}`
	if got := hippocam.CanonicalJSON(string(up.bodies[0])); got != hippocam.CanonicalJSON(want) {
		t.Errorf("request body:\n got %s\nwant %s", got, hippocam.CanonicalJSON(want))
	}

	t.Run("NoPromptCache", func(t *testing.T) {
		up := newUpstream(t, reply(200, okAnswer))
		c := newClient(t, up.srv.URL, func(c *anthropic.Config) { c.NoPromptCache = true })
		if _, err := c.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(up.bodies[0]), "cache_control") {
			t.Errorf("body has cache marks: %s", up.bodies[0])
		}
	})
	t.Run("AgentCacheMarksDropped", func(t *testing.T) {
		up := newUpstream(t, reply(200, okAnswer))
		c := newClient(t, up.srv.URL)
		img := `{"type":"image","source":{"type":"url","url":"u"},"cache_control":{"type":"ephemeral"}}`
		var msgs []hippocam.Message
		for i := 0; i < 6; i++ {
			msgs = append(msgs, hippocam.Message{Role: hippocam.RoleUser, Content: "x", Parts: []hippocam.Part{{Type: hippocam.PartImage, Format: anth, Raw: img}}},
				hippocam.Message{Role: hippocam.RoleAssistant, Content: "y"})
		}
		if _, err := c.Complete(context.Background(), &hippocam.Request{Messages: msgs, Tools: req.Tools}); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(up.bodies[0]), "cache_control"); n != 3 {
			t.Errorf("%d cache marks, want 3 (tool and last two turns): %s", n, up.bodies[0])
		}
	})
	t.Run("ToolChoices", func(t *testing.T) {
		for choice, want := range map[string]string{"auto": `{"type":"auto"}`, "none": `{"type":"none"}`, "read": `{"type":"tool","name":"read"}`} {
			up := newUpstream(t, reply(200, okAnswer))
			c := newClient(t, up.srv.URL)
			r := userRequest("x")
			r.Tools, r.ToolChoice = req.Tools, choice
			if _, err := c.Complete(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			var body struct {
				ToolChoice json.RawMessage `json:"tool_choice"`
			}
			json.Unmarshal(up.bodies[0], &body)
			if string(body.ToolChoice) != want {
				t.Errorf("tool choice %q: sent %s, want %s", choice, body.ToolChoice, want)
			}
		}
	})
}

// A system message inside the conversation is sent as a system turn in its place, with the
// request's betas as the anthropic-beta header, when the betas allow it; as user text otherwise.
func TestClientMidConversationSystem(t *testing.T) {
	msgs := []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: "Top."},
		{Role: hippocam.RoleUser, Content: "q"},
		{Role: hippocam.RoleAssistant, Content: "a"},
		{Role: hippocam.RoleUser, Content: "r"},
		{Role: hippocam.RoleSystem, Content: "Plan mode."},
	}
	for _, c := range []struct {
		name  string
		betas []string
		turns string
		beta  string
	}{
		{"Beta", []string{"claude-code-20250219", anthropic.BetaMidConversationSystem},
			`[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"text","text":"a"}]},` +
				`{"role":"user","content":[{"type":"text","text":"r","cache_control":{"type":"ephemeral"}}]},` +
				`{"role":"system","content":[{"type":"text","text":"Plan mode.","cache_control":{"type":"ephemeral"}}]}]`,
			"claude-code-20250219," + anthropic.BetaMidConversationSystem},
		// Claude Code 2.1 sends its system turns without naming any beta: one that arrived as an
		// Anthropic system turn goes back as one.
		{"SentSo", nil,
			`[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"text","text":"a"}]},` +
				`{"role":"user","content":[{"type":"text","text":"r","cache_control":{"type":"ephemeral"}}]},` +
				`{"role":"system","content":[{"type":"text","text":"Plan mode.","cache_control":{"type":"ephemeral"}}]}]`,
			""},
		// Hippocam's own calls never carry the client's betas: a system turn the client sent
		// reaches them as user text, which every Messages endpoint takes.
		{"SentSoRoleCall", nil,
			`[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]},` +
				`{"role":"user","content":[{"type":"text","text":"r"},{"type":"text","text":"Plan mode.","cache_control":{"type":"ephemeral"}}]}]`,
			""},
		{"NoBeta", nil,
			`[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]},` +
				`{"role":"user","content":[{"type":"text","text":"r"},{"type":"text","text":"Plan mode.","cache_control":{"type":"ephemeral"}}]}]`,
			""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				up := newUpstream(t, reply(200, okAnswer), sse(evStart, evStop))
				cl := newClient(t, up.srv.URL)
				in := msgs
				if strings.HasPrefix(c.name, "SentSo") {
					in = slices.Clone(msgs)
					in[4].Origin = &hippocam.Origin{Format: hippocam.FormatAnthropic, Raw: `{"role":"system","content":"Plan mode."}`}
				}
				role := hippocam.CallAgent
				if c.name == "SentSoRoleCall" {
					role = hippocam.CallPalim
				}
				req := &hippocam.Request{Role: role, Messages: in, Betas: c.betas}
				var err error
				if stream {
					_, err = cl.Stream(context.Background(), req, nil)
				} else {
					_, err = cl.Complete(context.Background(), req)
				}
				if err != nil {
					t.Fatal(err)
				}
				i := up.calls() - 1
				var body struct {
					Messages json.RawMessage `json:"messages"`
				}
				json.Unmarshal(up.bodies[i], &body)
				if got, want := hippocam.CanonicalJSON(string(body.Messages)), hippocam.CanonicalJSON(c.turns); got != want {
					t.Errorf("stream %v: messages\n got %s\nwant %s", stream, got, want)
				}
				if got := up.got[i].Header.Get("Anthropic-Beta"); got != c.beta {
					t.Errorf("stream %v: anthropic-beta %q, want %q", stream, got, c.beta)
				}
			}
		})
	}
}

func TestClientResponse(t *testing.T) {
	input := `{ "path" : "a.go",
  "line": 3 }`
	thinking := `{"type":"thinking", "thinking":"plan","signature":"zz"}`
	body := `{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[` + thinking + `,` +
		`{"type":"text","text":"Part one, "},{"type":"text","text":"part two."},` +
		`{"type":"tool_use","id":"toolu_9","name":"open","input":` + input + `}],` +
		`"stop_reason":"tool_use","stop_sequence":null,` +
		`"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":80,"output_tokens":7}}`
	up := newUpstream(t, reply(200, body))
	resp, err := newClient(t, up.srv.URL).Complete(context.Background(), userRequest("go"))
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Message
	if m.Content != "Part one, part two." || resp.FinishReason != "tool_calls" {
		t.Errorf("content %q, finish %q", m.Content, resp.FinishReason)
	}
	if len(m.ToolCalls) != 1 || m.ToolCalls[0] != (hippocam.ToolCall{ID: "toolu_9", Name: "open", Arguments: input}) {
		t.Errorf("tool calls %+v", m.ToolCalls)
	}
	if len(m.Parts) != 1 || m.Parts[0] != (hippocam.Part{Type: "thinking", Format: hippocam.FormatAnthropic, Raw: thinking}) {
		t.Errorf("parts %+v", m.Parts)
	}
	if resp.Usage != (hippocam.CallUsage{Input: 95, CachedInput: 80, Output: 7}) {
		t.Errorf("usage %+v", resp.Usage)
	}
	for stop, want := range map[string]string{"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"} {
		up := newUpstream(t, reply(200, strings.Replace(okAnswer, "end_turn", stop, 1)))
		resp, err := newClient(t, up.srv.URL).Complete(context.Background(), userRequest("go"))
		if err != nil || resp.FinishReason != want {
			t.Errorf("stop %s: finish %q, %v", stop, resp.FinishReason, err)
		}
	}
	t.Run("Unreadable", func(t *testing.T) {
		for _, body := range []string{`{`, `{"type":"error","error":{"type":"api_error","message":"boom"}}`, `{"type":"nonsense"}`} {
			up := newUpstream(t, reply(200, body))
			_, err := newClient(t, up.srv.URL).Complete(context.Background(), userRequest("go"))
			if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE {
				t.Errorf("body %s: %v", body, err)
			}
		}
	})
}

func TestClientRetries(t *testing.T) {
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	t.Run("Overloaded", func(t *testing.T) {
		up := newUpstream(t, reply(529, overloaded), reply(500, "oops"), reply(200, okAnswer))
		resp, err := newClient(t, up.srv.URL).Complete(context.Background(), userRequest("x"))
		if err != nil || resp.Message.Content != "ok" || up.calls() != 3 {
			t.Fatalf("calls %d, %v", up.calls(), err)
		}
	})
	t.Run("RetryAfter", func(t *testing.T) {
		limited := `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`
		up := newUpstream(t, reply(429, limited, "Retry-After", "0.3"), reply(429, limited, "Retry-After-Ms", "150"), reply(200, okAnswer))
		if _, err := newClient(t, up.srv.URL).Complete(context.Background(), userRequest("x")); err != nil {
			t.Fatal(err)
		}
		if d := up.times[1].Sub(up.times[0]); d < 300*time.Millisecond {
			t.Errorf("retried after %v, the server asked for 300ms", d)
		}
		if d := up.times[2].Sub(up.times[1]); d < 150*time.Millisecond {
			t.Errorf("retried after %v, the server asked for 150ms", d)
		}
	})
	t.Run("RateLimitedToTheEnd", func(t *testing.T) {
		limited := `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`
		up := newUpstream(t, reply(429, limited, "Retry-After", "0.01"), reply(429, limited, "Retry-After", "7"))
		c := newClient(t, up.srv.URL, func(c *anthropic.Config) { c.MaxRetries, c.MaxBackoff = 1, 10*time.Millisecond })
		_, err := c.Complete(context.Background(), userRequest("x"))
		var se *anthropic.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("error %v is not a StatusError", err)
		}
		status, wait := se.UpstreamStatus()
		if status != 429 || wait != 7*time.Second || se.Attempts != 2 || hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE {
			t.Errorf("status %d, wait %v, attempts %d, code %s", status, wait, se.Attempts, hippocam.ErrorCode(err))
		}
		if msg := hippocam.ErrorMessage(err); !strings.Contains(msg, "429") || !strings.Contains(msg, "slow down") || !strings.Contains(msg, "after 2 attempts") {
			t.Errorf("message %q", msg)
		}
	})
	t.Run("NetworkError", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		c := newClient(t, url, func(c *anthropic.Config) { c.MaxRetries = 2 })
		_, err := c.Complete(context.Background(), userRequest("x"))
		if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || !strings.Contains(hippocam.ErrorMessage(err), "after 3 attempts") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("Cancelled", func(t *testing.T) {
		up := newUpstream(t, reply(529, overloaded, "Retry-After", "30"))
		c := newClient(t, up.srv.URL, func(c *anthropic.Config) { c.MaxBackoff = time.Minute })
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := c.Complete(ctx, userRequest("x"))
		if !errors.Is(err, context.DeadlineExceeded) || hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE {
			t.Errorf("error %v", err)
		}
	})
}

func TestClientErrors(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		code   string
		text   string
	}{
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}`, hippocam.EINVALID, "roles must alternate"},
		{401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, hippocam.EUNAUTHORIZED, "401"},
		{403, `{"type":"error","error":{"type":"permission_error","message":"no"}}`, hippocam.EFORBIDDEN, "403"},
		{404, `not found at all`, hippocam.EINVALID, "not found at all"},
		{413, `{"error":{"message":"too big"}}`, hippocam.EINVALID, "too big"},
	} {
		up := newUpstream(t, reply(c.status, c.body), reply(200, okAnswer))
		_, err := newClient(t, up.srv.URL).Complete(context.Background(), userRequest("x"))
		var se *anthropic.StatusError
		if !errors.As(err, &se) || se.Status != c.status {
			t.Errorf("%d: error %v", c.status, err)
			continue
		}
		if up.calls() != 1 {
			t.Errorf("%d was retried", c.status)
		}
		if hippocam.ErrorCode(err) != c.code || !strings.Contains(hippocam.ErrorMessage(err), c.text) {
			t.Errorf("%d: code %s, message %q", c.status, hippocam.ErrorCode(err), hippocam.ErrorMessage(err))
		}
	}
	t.Run("BadExtra", func(t *testing.T) {
		c := newClient(t, "http://127.0.0.1:1")
		r := userRequest("x")
		r.Extra = json.RawMessage(`[1]`)
		if _, err := c.Complete(context.Background(), r); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("error %v", err)
		}
		if _, err := c.Complete(context.Background(), &hippocam.Request{Messages: []hippocam.Message{{Role: hippocam.RoleSystem, Content: "only"}}}); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("error %v", err)
		}
	})
}

func TestConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  anthropic.Config
		ok   bool
	}{
		{"Defaults", anthropic.Config{Model: "m"}, true},
		{"DefaultConfig", func() anthropic.Config { c := anthropic.DefaultConfig(); c.Model = "m"; return c }(), true},
		{"NoModel", anthropic.Config{}, false},
		{"BadScheme", anthropic.Config{Model: "m", BaseURL: "ftp://x"}, false},
		{"Query", anthropic.Config{Model: "m", BaseURL: "http://x/?a=1"}, false},
		{"Negative", anthropic.Config{Model: "m", MaxTokens: -1}, false},
		{"Backoffs", anthropic.Config{Model: "m", MinBackoff: time.Minute, MaxBackoff: time.Second}, false},
	} {
		err := c.cfg.Validate()
		if (err == nil) != c.ok || (err != nil && hippocam.ErrorCode(err) != hippocam.EINVALID) {
			t.Errorf("%s: %v", c.name, err)
		}
		if _, err := anthropic.New(c.cfg); (err == nil) != c.ok {
			t.Errorf("%s: New: %v", c.name, err)
		}
	}
}
