package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// A refusal as a client reads it: OpenAI's {"error":{…}} or Anthropic's {"type":"error",…}.
type refusalBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string  `json:"type"`
		Code    *string `json:"code"`
		Param   *string `json:"param"`
		Message string  `json:"message"`
	} `json:"error"`
}

// What a format's client expects for one condition: status, error type, code (nil: none or
// null) and a pattern of the message.
type want struct {
	status  int
	typ     string
	code    string
	message string
}

// Each format tells the same condition in its provider's shape and words, so that clients'
// fallbacks (Claude Code compacts on "prompt is too long: N tokens > M maximum", Codex on
// context_length_exceeded, every SDK retries a 529 or 503) work through Hippocam.
func TestRefusalsInEachFormat(t *testing.T) {
	long := strings.Repeat("many words that fill the window ", 600)
	paths := map[string]string{"Chat": "/v1/chat/completions", "Responses": "/v1/responses", "Messages": "/v1/messages"}
	bodies := map[string]func(string) string{
		"Chat": func(text string) string {
			return `{"model":"m","messages":[{"role":"user","content":` + quote(text) + `}]}`
		},
		"Responses": func(text string) string { return `{"model":"m","input":` + quote(text) + `}` },
		"Messages": func(text string) string {
			return `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":` + quote(text) + `}]}`
		},
	}
	overflow := `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	for _, tc := range []struct {
		name     string
		status   int    // the upstream's refusal of the main call (0: none)
		upBody   string // its body
		text     string
		keys     bool
		path     string // another path than the format's
		byFormat map[string]want
	}{
		{name: "Capacity", text: long, byFormat: map[string]want{
			"Chat":      {400, "invalid_request_error", "context_length_exceeded", `^This model's maximum context length is 2000 tokens\. However, your messages resulted in \d+ tokens\. Please reduce the length of the messages\.$`},
			"Responses": {400, "invalid_request_error", "context_length_exceeded", `^Your input exceeds the context window of this model`},
			"Messages":  {400, "invalid_request_error", "", `^prompt is too long: \d+ tokens > 2000 maximum$`},
		}},
		{name: "UpstreamOverflow", status: 400, upBody: overflow, text: "!say hi", byFormat: map[string]want{
			"Chat":      {400, "invalid_request_error", "context_length_exceeded", `resulted in 9000 tokens`},
			"Responses": {400, "invalid_request_error", "context_length_exceeded", `^Your input exceeds`},
			"Messages":  {400, "invalid_request_error", "", `^prompt is too long: 9000 tokens > 8192 maximum$`},
		}},
		{name: "UpstreamBadRequest", status: 400, upBody: `{"error":{"message":"temperature: must be at most 2","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`, text: "!say hi", byFormat: map[string]want{
			"Chat":      {400, "invalid_request_error", "invalid_value", `^temperature: must be at most 2$`},
			"Responses": {400, "invalid_request_error", "invalid_value", `^temperature: must be at most 2$`},
			"Messages":  {400, "invalid_request_error", "", `^temperature: must be at most 2$`},
		}},
		{name: "Overloaded", status: 529, text: "!say hi", byFormat: map[string]want{
			"Chat":      {503, "server_error", "server_is_overloaded", `529`},
			"Responses": {503, "server_error", "server_is_overloaded", `529`},
			"Messages":  {529, "overloaded_error", "", `^Overloaded$`},
		}},
		{name: "RateLimited", status: 429, upBody: `{"error":{"message":"Rate limit reached. Please try again in 7s.","type":"requests","code":"rate_limit_exceeded"}}`, text: "!say hi", byFormat: map[string]want{
			"Chat":      {429, "rate_limit_error", "rate_limit_exceeded", `try again in 7s`},
			"Responses": {429, "rate_limit_error", "rate_limit_exceeded", `try again in 7s`},
			"Messages":  {429, "rate_limit_error", "", `try again in 7s`},
		}},
		{name: "UpstreamDown", status: 500, text: "!say hi", byFormat: map[string]want{
			"Chat":      {502, "server_error", "upstream_unavailable", `500`},
			"Responses": {502, "server_error", "upstream_unavailable", `500`},
			"Messages":  {502, "api_error", "", `500`},
		}},
		{name: "Unauthorized", keys: true, text: "!say hi", byFormat: map[string]want{
			"Chat":      {401, "invalid_request_error", "invalid_api_key", `API key`},
			"Responses": {401, "invalid_request_error", "invalid_api_key", `API key`},
			"Messages":  {401, "authentication_error", "", `API key`},
		}},
		{name: "NotFound", path: "/nothing/here", text: "!say hi", byFormat: map[string]want{
			"Chat":      {404, "invalid_request_error", "not_found", `no route`},
			"Responses": {404, "invalid_request_error", "not_found", `no route`},
			"Messages":  {404, "not_found_error", "", `no route`},
		}},
	} {
		for _, format := range []string{"Chat", "Responses", "Messages"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				var keys map[string]string
				if tc.keys {
					keys = map[string]string{"k": "t"}
				}
				s := newServer(t, 2000, keys)
				if tc.status != 0 {
					s.up.failStatus.Store(int32(tc.status))
					if tc.upBody != "" {
						s.up.failBody.Store(&tc.upBody)
					}
				}
				path := paths[format] + tc.path
				r := s.do(t, "POST", path, "", "refused", []byte(bodies[format](tc.text)))
				w := tc.byFormat[format]
				var b refusalBody
				if err := json.Unmarshal(r.body, &b); err != nil {
					t.Fatalf("status %d, body %s: %v", r.status, r.body, err)
				}
				code := ""
				if b.Error.Code != nil {
					code = *b.Error.Code
				}
				if r.status != w.status || b.Error.Type != w.typ || code != w.code || !regexp.MustCompile(w.message).MatchString(b.Error.Message) {
					t.Fatalf("status %d, type %q, code %q, message %q; want %d %q %q %q\n%s", r.status, b.Error.Type, code, b.Error.Message, w.status, w.typ, w.code, w.message, r.body)
				}
				if format == "Messages" {
					var top map[string]json.RawMessage
					json.Unmarshal(r.body, &top)
					if len(top) != 2 || b.Type != "error" || b.Error.Code != nil || b.Error.Param != nil {
						t.Errorf("not Anthropic's error body: %s", r.body)
					}
				}
			})
		}
	}
}

// A body over the bound is a 413, Anthropic's request_too_large in the Messages format.
func TestRefusalTooLarge(t *testing.T) {
	e, err := engine.New(engine.ForWindow(8000), sim.New(tokenizer.MustDefault()).InProcess(), tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: inmem.New(), MaxBodyBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	big := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}]}`
	for path, typ := range map[string]string{"/v1/messages": "request_too_large", "/v1/chat/completions": "invalid_request_error", "/v1/responses": "invalid_request_error"} {
		resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		var b refusalBody
		json.NewDecoder(resp.Body).Decode(&b)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || b.Error.Type != typ {
			t.Errorf("%s: status %d, type %q; want 413 %q", path, resp.StatusCode, b.Error.Type, typ)
		}
	}
}

// A streamed Responses request whose input cannot fit is told inside the stream, as the
// Responses API does: response.failed with context_length_exceeded (on which Codex compacts).
func TestRefusalCapacityStreamedResponses(t *testing.T) {
	s := newServer(t, 2000, nil)
	body := `{"model":"m","stream":true,"input":` + quote(strings.Repeat("many words that fill the window ", 600)) + `}`
	r := s.do(t, "POST", "/v1/responses", "", "long", []byte(body))
	if r.status != 200 || !strings.Contains(string(r.body), "event: response.failed") || !strings.Contains(string(r.body), `"code":"context_length_exceeded"`) {
		t.Fatalf("status %d:\n%s", r.status, r.body)
	}
	if strings.Contains(string(r.body), "response.completed") {
		t.Fatalf("a completed response in\n%s", r.body)
	}
}
