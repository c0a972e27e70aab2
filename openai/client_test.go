package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/openai/wire"
)

// MustClient starts a test server running h and returns a client for it with small timeouts
// and backoffs; edit may change the config first.
func MustClient(tb testing.TB, h http.HandlerFunc, edit func(*openai.Config)) *openai.Client {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	cfg := openai.DefaultConfig()
	cfg.BaseURL = srv.URL + "/v1/"
	cfg.Model = "test-model"
	cfg.APIKey = "sk-test"
	cfg.Timeout = 2 * time.Second
	cfg.MinBackoff = time.Millisecond
	cfg.MaxBackoff = 5 * time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	c, err := openai.New(cfg)
	if err != nil {
		tb.Fatalf("new client: %v", err)
	}
	return c
}

// userRequest is a one-message request.
func userRequest(text string) *hippocam.Request {
	return &hippocam.Request{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: text}}}
}

// writeJSON answers with status and body.
func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

const okAnswer = `{"id":"c1","object":"chat.completion","created":1,"model":"test-model",
 "choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],
 "usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`

func TestComplete(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		var got struct {
			method, path, auth, ctype, role string
			body                            map[string]json.RawMessage
			raw                             string
		}
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			got.method, got.path = r.Method, r.URL.Path
			got.auth, got.ctype = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
			got.role = r.Header.Get(hippocam.RoleHeader)
			b, _ := io.ReadAll(r.Body)
			got.raw = string(b)
			_ = json.Unmarshal(b, &got.body)
			writeJSON(w, 200, `{"id":"c1","object":"chat.completion","created":1,"model":"test-model",
			 "choices":[{"index":0,"message":{"role":"assistant","content":null,
			   "tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]},
			  "finish_reason":"tool_calls"}],
			 "usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,"prompt_tokens_details":{"cached_tokens":1024}}}`)
		}, nil)
		req := &hippocam.Request{
			Role: hippocam.CallJanus,
			Messages: []hippocam.Message{
				{Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: "be brief"},
				{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "read a"},
			},
			Tools:      []hippocam.Tool{{Name: "read_file", Description: "reads", Parameters: json.RawMessage(`{"type":"object"}`)}},
			ToolChoice: "required",
			MaxTokens:  100,
			Extra:      json.RawMessage(`{"temperature":0.5,"model":"other","stream":true}`),
		}
		resp, err := c.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got.method != "POST" || got.path != "/v1/chat/completions" {
			t.Errorf("request = %s %s, want POST /v1/chat/completions", got.method, got.path)
		}
		if got.auth != "Bearer sk-test" || !strings.HasPrefix(got.ctype, "application/json") || got.role != "janus" {
			t.Errorf("headers: auth %q, content type %q, role %q", got.auth, got.ctype, got.role)
		}
		for k, want := range map[string]string{
			"model": `"test-model"`, "tool_choice": `"required"`, "max_tokens": `100`, "temperature": `0.5`,
		} {
			if string(got.body[k]) != want {
				t.Errorf("body %s = %s, want %s", k, got.body[k], want)
			}
		}
		if _, ok := got.body["stream"]; ok || strings.Count(got.raw, `"model"`) != 1 {
			t.Errorf("body repeats fields Extra must not override: %s", got.raw)
		}
		var msgs []wire.ChatMessage
		var tools []wire.ToolDef
		_ = json.Unmarshal(got.body["messages"], &msgs)
		_ = json.Unmarshal(got.body["tools"], &tools)
		if len(msgs) != 2 || msgs[0].Role != "system" || string(msgs[1].Content) != `"read a"` {
			t.Errorf("messages = %s", got.body["messages"])
		}
		if len(tools) != 1 || tools[0].Type != "function" || tools[0].Function.Name != "read_file" {
			t.Errorf("tools = %s", got.body["tools"])
		}

		m := resp.Message
		if m.Role != hippocam.RoleAssistant || m.Kind != hippocam.KindRaw || m.Content != "" {
			t.Errorf("message = %+v", m)
		}
		if len(m.ToolCalls) != 1 || m.ToolCalls[0] != (hippocam.ToolCall{ID: "call_1", Name: "read_file", Arguments: `{"path":"a"}`}) {
			t.Errorf("tool calls = %+v", m.ToolCalls)
		}
		if resp.FinishReason != "tool_calls" {
			t.Errorf("finish reason = %q", resp.FinishReason)
		}
		if want := (hippocam.CallUsage{Input: 1200, CachedInput: 1024, Output: 30}); resp.Usage != want {
			t.Errorf("usage = %+v, want %+v", resp.Usage, want)
		}
	})

	t.Run("DefaultRoleNoKey", func(t *testing.T) {
		var role, auth string
		var hasAuth bool
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			role, auth = r.Header.Get(hippocam.RoleHeader), r.Header.Get("Authorization")
			_, hasAuth = r.Header["Authorization"]
			writeJSON(w, 200, okAnswer)
		}, func(cfg *openai.Config) { cfg.APIKey = "" })
		resp, err := c.Complete(context.Background(), userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if role != "agent" || hasAuth {
			t.Errorf("role %q, authorization %q (sent %v); want agent and none", role, auth, hasAuth)
		}
		if resp.Message.Content != "hello" || resp.Usage != (hippocam.CallUsage{Input: 10, Output: 2}) {
			t.Errorf("response = %+v", resp)
		}
	})

	t.Run("OKAnswerExtra", func(t *testing.T) {
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"choices":[{"index":0,"message":{"role":"assistant","content":"fine",
			 "refusal":null,"annotations":[],"reasoning_content":"long thoughts","audio":null,"custom":{"a":1}},
			 "finish_reason":"stop"}]}`)
		}, nil)
		resp, err := c.Complete(context.Background(), userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(resp.Message.Extra); got != `{"custom":{"a":1}}` {
			t.Errorf("extra = %s, want only the informative unknown field", got)
		}
	})

	t.Run("OKNullContentLeavesNoExtra", func(t *testing.T) {
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,
			 "tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)
		}, nil)
		resp, err := c.Complete(context.Background(), userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Message.Extra) != 0 || resp.Message.Content != "" || len(resp.Message.ToolCalls) != 1 {
			t.Errorf("message = %+v, extra %s", resp.Message, resp.Message.Extra)
		}
	})

	t.Run("ErrMalformedAnswer", func(t *testing.T) {
		for name, body := range map[string]string{
			"NotJSON":   `{"choices":[`,
			"NoChoices": `{"id":"x","choices":[]}`,
			"BadRole":   `{"choices":[{"index":0,"message":{"role":"assistant","content":42}}]}`,
		} {
			t.Run(name, func(t *testing.T) {
				var calls atomic.Int32
				c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
					calls.Add(1)
					writeJSON(w, 200, body)
				}, nil)
				_, err := c.Complete(context.Background(), userRequest("hi"))
				if code := hippocam.ErrorCode(err); code != hippocam.EUNAVAILABLE {
					t.Fatalf("code = %q (%v), want unavailable", code, err)
				}
				if n := calls.Load(); n != 1 {
					t.Errorf("attempts = %d, want 1 (no retry of a 200)", n)
				}
			})
		}
	})

	t.Run("ErrNilRequest", func(t *testing.T) {
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) { t.Error("no request expected") }, nil)
		if _, err := c.Complete(context.Background(), nil); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("err = %v, want invalid", err)
		}
	})
}

func TestComplete_Retry(t *testing.T) {
	t.Run("RetryAfter429ThenOK", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				writeJSON(w, 429, `{"error":{"message":"slow down","type":"rate_limit"}}`)
				return
			}
			writeJSON(w, 200, okAnswer)
		}, func(cfg *openai.Config) { cfg.MaxBackoff = 60 * time.Millisecond })
		start := time.Now()
		resp, err := c.Complete(context.Background(), userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		// Retry-After 1s is capped at MaxBackoff (60ms); without it the wait would be ~1ms.
		if d := time.Since(start); d < 55*time.Millisecond || d > 900*time.Millisecond {
			t.Errorf("took %v, want the capped Retry-After wait of 60ms", d)
		}
		if calls.Load() != 2 || resp.Message.Content != "hello" {
			t.Errorf("calls = %d, content %q", calls.Load(), resp.Message.Content)
		}
	})

	t.Run("Err500Exhausted", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			writeJSON(w, 500, `{"error":{"message":"engine overloaded","type":"server_error"}}`)
		}, func(cfg *openai.Config) { cfg.MaxRetries = 2 })
		_, err := c.Complete(context.Background(), userRequest("hi"))
		if code := hippocam.ErrorCode(err); code != hippocam.EUNAVAILABLE {
			t.Fatalf("code = %q (%v), want unavailable", code, err)
		}
		if n := calls.Load(); n != 3 {
			t.Errorf("attempts = %d, want 3", n)
		}
		var se *openai.StatusError
		if !errors.As(err, &se) || se.Status != 500 || se.Attempts != 3 {
			t.Fatalf("status error = %+v", se)
		}
		if msg := hippocam.ErrorMessage(err); !strings.Contains(msg, "engine overloaded") {
			t.Errorf("message %q lacks the provider's message", msg)
		}
	})

	t.Run("Err429KeepsRetryAfter", func(t *testing.T) {
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			writeJSON(w, 429, `{"error":{"message":"quota","type":"rate_limit"}}`)
		}, func(cfg *openai.Config) { cfg.MaxRetries = 0 })
		_, err := c.Complete(context.Background(), userRequest("hi"))
		var se *openai.StatusError
		if !errors.As(err, &se) || se.Status != 429 || se.RetryAfter != 7*time.Second || se.Attempts != 1 {
			t.Fatalf("err = %v, status error %+v", err, se)
		}
		if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE {
			t.Errorf("code = %q", hippocam.ErrorCode(err))
		}
	})

	for _, tt := range []struct {
		name   string
		status int
		code   string
	}{
		{"Err400", 400, hippocam.EINVALID},
		{"Err401", 401, hippocam.EUNAUTHORIZED},
		{"Err403", 403, hippocam.EFORBIDDEN},
		{"Err404", 404, hippocam.EINVALID},
		{"Err422", 422, hippocam.EINVALID},
	} {
		t.Run(tt.name+"NoRetry", func(t *testing.T) {
			var calls atomic.Int32
			c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				writeJSON(w, tt.status, `{"error":{"message":"context length exceeded","type":"invalid_request_error","code":"context_length_exceeded"}}`)
			}, nil)
			_, err := c.Complete(context.Background(), userRequest("hi"))
			if code := hippocam.ErrorCode(err); code != tt.code {
				t.Fatalf("code = %q (%v), want %q", code, err, tt.code)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("attempts = %d, want 1", n)
			}
			if msg := hippocam.ErrorMessage(err); !strings.Contains(msg, "context length exceeded") {
				t.Errorf("message %q lacks the provider's message", msg)
			}
			var se *openai.StatusError
			if !errors.As(err, &se) || se.Body.Error.Code == nil || *se.Body.Error.Code != "context_length_exceeded" {
				t.Errorf("status error body = %+v", se)
			}
		})
	}

	t.Run("RetryAfterBrokenBody", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				// Promise a long body, send part of it, and drop the connection.
				w.Header().Set("Content-Length", "1000")
				w.WriteHeader(200)
				_, _ = io.WriteString(w, okAnswer[:20])
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			writeJSON(w, 200, okAnswer)
		}, nil)
		resp, err := c.Complete(context.Background(), userRequest("hi"))
		if err != nil || calls.Load() != 2 || resp.Message.Content != "hello" {
			t.Fatalf("resp %+v, err %v, attempts %d; want success on the second attempt", resp, err, calls.Load())
		}
	})

	t.Run("ErrUnreachable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		c, err := openai.New(openai.Config{BaseURL: url + "/v1", Model: "m", MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Complete(context.Background(), userRequest("hi"))
		if code := hippocam.ErrorCode(err); code != hippocam.EUNAVAILABLE {
			t.Fatalf("code = %q (%v), want unavailable", code, err)
		}
		if !strings.Contains(err.Error(), "after 2 attempts") {
			t.Errorf("err = %v, want 2 attempts", err)
		}
	})
}

func TestComplete_Timeout(t *testing.T) {
	// stall blocks until the client gives up on the request.
	// The body must be read first: only then does the server notice a closed connection.
	stall := func(r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}

	t.Run("RetriedAfterSlowAttempt", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				stall(r)
				return
			}
			writeJSON(w, 200, okAnswer)
		}, func(cfg *openai.Config) { cfg.Timeout = 50 * time.Millisecond })
		start := time.Now()
		if _, err := c.Complete(context.Background(), userRequest("hi")); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 2 || time.Since(start) > 2*time.Second {
			t.Errorf("attempts = %d in %v, want 2 quickly", calls.Load(), time.Since(start))
		}
	})

	t.Run("ErrEveryAttemptSlow", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			stall(r)
		}, func(cfg *openai.Config) { cfg.Timeout = 30 * time.Millisecond; cfg.MaxRetries = 1 })
		_, err := c.Complete(context.Background(), userRequest("hi"))
		if code := hippocam.ErrorCode(err); code != hippocam.EUNAVAILABLE {
			t.Fatalf("code = %q (%v), want unavailable", code, err)
		}
		if calls.Load() != 2 || !strings.Contains(err.Error(), "no progress within 30ms") {
			t.Errorf("attempts = %d, err = %v", calls.Load(), err)
		}
	})

	t.Run("ErrCancelled", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			stall(r)
		}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Complete(ctx, userRequest("hi"))
		if !errors.Is(err, context.DeadlineExceeded) || hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE {
			t.Fatalf("err = %v, want unavailable and the context's error", err)
		}
		if calls.Load() != 1 || time.Since(start) > time.Second {
			t.Errorf("attempts = %d in %v, want 1 and a quick return", calls.Load(), time.Since(start))
		}
	})

	t.Run("ErrCancelledDuringBackoff", func(t *testing.T) {
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "30")
			writeJSON(w, 503, `{"error":{"message":"down"}}`)
		}, func(cfg *openai.Config) { cfg.MaxBackoff = time.Minute })
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Millisecond, cancel)
		start := time.Now()
		_, err := c.Complete(ctx, userRequest("hi"))
		if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
			t.Fatalf("err = %v after %v, want cancellation within a second", err, time.Since(start))
		}
	})
}

func TestListModels(t *testing.T) {
	const body = `{"object":"list","data":[{"id":"test-model","object":"model","owned_by":"me","x":1}]}`
	var path, auth, role string
	c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
		path, auth, role = r.Method+" "+r.URL.Path, r.Header.Get("Authorization"), r.Header.Get(hippocam.RoleHeader)
		writeJSON(w, 200, body)
	}, nil)
	raw, err := c.ListModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != body {
		t.Errorf("body = %s, want it verbatim", raw)
	}
	if path != "GET /v1/models" || auth != "Bearer sk-test" || role != "" {
		t.Errorf("request %q, auth %q, role %q", path, auth, role)
	}
}

func TestConfig_Validate(t *testing.T) {
	ok := openai.Config{BaseURL: "http://localhost:8000/v1", Model: "m"}
	for _, tt := range []struct {
		name string
		edit func(*openai.Config)
		code string
	}{
		{"OK", func(*openai.Config) {}, ""},
		{"OKDefaults", func(c *openai.Config) {
			*c = openai.DefaultConfig()
			c.BaseURL = "https://api.example.com/v1/"
			c.Model = "m"
		}, ""},
		{"ErrNoBaseURL", func(c *openai.Config) { c.BaseURL = "" }, hippocam.EINVALID},
		{"ErrNoModel", func(c *openai.Config) { c.Model = "" }, hippocam.EINVALID},
		{"ErrScheme", func(c *openai.Config) { c.BaseURL = "ftp://host/v1" }, hippocam.EINVALID},
		{"ErrNoHost", func(c *openai.Config) { c.BaseURL = "localhost:8000" }, hippocam.EINVALID},
		{"ErrUnparsable", func(c *openai.Config) { c.BaseURL = "http://[::1" }, hippocam.EINVALID},
		{"ErrQuery", func(c *openai.Config) { c.BaseURL = "http://host/v1?x=1" }, hippocam.EINVALID},
		{"ErrNegativeTimeout", func(c *openai.Config) { c.Timeout = -time.Second }, hippocam.EINVALID},
		{"ErrNegativeRetries", func(c *openai.Config) { c.MaxRetries = -1 }, hippocam.EINVALID},
		{"ErrMinOverMax", func(c *openai.Config) { c.MinBackoff = time.Minute; c.MaxBackoff = time.Second }, hippocam.EINVALID},
		{"ErrMinOverDefaultMax", func(c *openai.Config) { c.MinBackoff = time.Hour }, hippocam.EINVALID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.edit(&cfg)
			if code := hippocam.ErrorCode(cfg.Validate()); code != tt.code {
				t.Errorf("Validate code = %q, want %q", code, tt.code)
			}
			if _, err := openai.New(cfg); hippocam.ErrorCode(err) != tt.code {
				t.Errorf("New code = %q, want %q", hippocam.ErrorCode(err), tt.code)
			}
		})
	}
}
