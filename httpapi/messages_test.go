package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/httpapi"
)

// anthropicReply is the part of a Messages response the tests read.
type anthropicReply struct {
	Type    string `json:"type"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      struct {
		InputTokens     int `json:"input_tokens"`
		CacheReadTokens int `json:"cache_read_input_tokens"`
	} `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// A tool loop over the Anthropic Messages API, streamed and not, in one session; bad input gets
// Anthropic's error JSON and changes nothing.
func TestMessagesToolLoop(t *testing.T) {
	s := newServer(t, 8000, nil)
	tools := `"tools":[{"name":"read_file","description":"reads","input_schema":{"type":"object"}}]`
	u1 := `{"role":"user","content":"Read it.\n!call read_file {\"path\":\"a.txt\"}"}`
	r := s.do(t, "POST", "/v1/messages", "", "claude", []byte(`{"model":"claude-x","max_tokens":256,"system":"Be brief.",`+tools+`,"messages":[`+u1+`]}`))
	var first anthropicReply
	r.json(t, &first)
	if r.status != 200 || first.StopReason != "tool_use" || len(first.Content) != 1 || first.Content[0].Name != "read_file" {
		t.Fatalf("first answer: %d %s", r.status, r.body)
	}
	use := first.Content[0]
	a1 := `{"role":"assistant","content":[{"type":"tool_use","id":"` + use.ID + `","name":"read_file","input":` + string(use.Input) + `}]}`
	u2 := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + use.ID + `","content":"text of a\n!say read it"}]}`
	r = s.do(t, "POST", "/v1/messages", "", "claude", []byte(`{"model":"claude-x","max_tokens":256,"system":"Be brief.",`+tools+`,"messages":[`+u1+`,`+a1+`,`+u2+`]}`))
	var second anthropicReply
	r.json(t, &second)
	if r.status != 200 || second.StopReason != "end_turn" || len(second.Content) != 1 || second.Content[0].Text != "read it" || r.header.Get(httpapi.EventHeader) != "continued" {
		t.Fatalf("second answer: %d %s (%s)", r.status, r.body, r.header.Get(httpapi.EventHeader))
	}
	a2 := `{"role":"assistant","content":"read it"}`
	u3 := `{"role":"user","content":[{"type":"text","text":"!say streamed"}]}`
	r = s.do(t, "POST", "/v1/messages", "", "claude", []byte(`{"model":"claude-x","max_tokens":256,"stream":true,"system":[{"type":"text","text":"Be brief."}],`+tools+`,"messages":[`+u1+`,`+a1+`,`+u2+`,`+a2+`,`+u3+`]}`))
	body := string(r.body)
	if r.status != 200 || !strings.Contains(body, "event: message_start") || !strings.Contains(body, `"text":"streamed"`) && !strings.Contains(body, `streamed`) || !strings.Contains(body, "event: message_stop") || r.header.Get(httpapi.SessionHeader) != "claude" {
		t.Fatalf("stream: %d %s", r.status, body)
	}
	before := s.do(t, "GET", "/api/sessions/claude", "", "", nil).body
	for _, bad := range []string{
		`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"nonsense"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		"{\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
		`{"model":"m","max_tokens":10,"tools":[{"name":"","input_schema":{}}],"messages":[{"role":"user","content":"hi"}]}`,
	} {
		r := s.do(t, "POST", "/v1/messages", "", "claude", []byte(bad))
		var e anthropicReply
		if r.status != 400 || json.Unmarshal(r.body, &e) != nil || e.Type != "error" || e.Error == nil || e.Error.Type != "invalid_request_error" {
			t.Errorf("%q: %d %s, want 400 with Anthropic error JSON", bad, r.status, r.body)
		}
	}
	if after := s.do(t, "GET", "/api/sessions/claude", "", "", nil).body; string(after) != string(before) {
		t.Fatal("a refused request changed the session")
	}
	if r := s.do(t, "GET", "/v1/messages", "", "", nil); r.status != 405 || !strings.Contains(string(r.body), `"type":"error"`) {
		t.Errorf("GET /v1/messages: %d %s", r.status, r.body)
	}
}
