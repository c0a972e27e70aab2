package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
)

// sse answers with a stream of events written as given.
func sse(events ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for _, e := range events {
			var typ struct {
				Type string `json:"type"`
			}
			json.Unmarshal([]byte(e), &typ)
			io.WriteString(w, "event: "+typ.Type+"\ndata: "+e+"\n\n")
		}
	}
}

const (
	evStart = `{"type":"message_start","message":{"id":"msg_s","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_read_input_tokens":30,"cache_creation_input_tokens":4,"output_tokens":1}}}`
	evPing  = `{"type":"ping"}`
	evStop  = `{"type":"message_stop"}`
)

func TestClientStream(t *testing.T) {
	up := newUpstream(t, sse(evStart, evPing,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"let me "}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":", world"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": "}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"a.go\"}"}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":25}}`,
		evStop))
	var pieces []string
	resp, err := newClient(t, up.srv.URL).Stream(context.Background(), userRequest("go"), func(s string) { pieces = append(pieces, s) })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(pieces, "|") != "Hello|, world" {
		t.Errorf("pieces %q", pieces)
	}
	m := resp.Message
	if m.Content != "Hello, world" || resp.FinishReason != "tool_calls" {
		t.Errorf("content %q, finish %q", m.Content, resp.FinishReason)
	}
	if len(m.ToolCalls) != 1 || m.ToolCalls[0] != (hippocam.ToolCall{ID: "toolu_1", Name: "read", Arguments: `{"path": "a.go"}`}) {
		t.Errorf("calls %+v", m.ToolCalls)
	}
	if len(m.Parts) != 1 || hippocam.CanonicalJSON(m.Parts[0].Raw) != `{"signature":"SIG","thinking":"let me think","type":"thinking"}` {
		t.Errorf("parts %+v", m.Parts)
	}
	if resp.Usage != (hippocam.CallUsage{Input: 46, CachedInput: 30, Output: 25}) {
		t.Errorf("usage %+v", resp.Usage)
	}
	var body struct {
		Stream bool `json:"stream"`
	}
	json.Unmarshal(up.bodies[0], &body)
	if !body.Stream || up.got[0].Header.Get("Accept") != "text/event-stream" {
		t.Errorf("request %s, accept %q", up.bodies[0], up.got[0].Header.Get("Accept"))
	}
}

// TestStreamRoundTrip reads what WriteStream writes with the client's stream reader.
func TestStreamRoundTrip(t *testing.T) {
	text := strings.Repeat("ünïcode text, ", 20)
	answer := &hippocam.Message{Role: hippocam.RoleAssistant, Content: text,
		ToolCalls: []hippocam.ToolCall{{ID: "c1", Name: "find", Arguments: `{"q":"` + strings.Repeat("x", 150) + `"}`}},
		Parts:     []hippocam.Part{{Type: "thinking", Format: hippocam.FormatAnthropic, Raw: `{"type":"thinking","thinking":"` + strings.Repeat("t", 100) + `","signature":"S"}`}}}
	usage := hippocam.CallUsage{Input: 200, CachedInput: 150, Output: 40}
	up := newUpstream(t, func(w http.ResponseWriter) { anthropic.WriteStream(w, "m", "msg_r", answer, "tool_calls", usage) })
	var got strings.Builder
	resp, err := newClient(t, up.srv.URL).Stream(context.Background(), userRequest("go"), func(s string) { got.WriteString(s) })
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != text || resp.Message.Content != text {
		t.Errorf("text %q / %q", got.String(), resp.Message.Content)
	}
	if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0] != answer.ToolCalls[0] {
		t.Errorf("calls %+v", resp.Message.ToolCalls)
	}
	if len(resp.Message.Parts) != 1 || hippocam.CanonicalJSON(resp.Message.Parts[0].Raw) != hippocam.CanonicalJSON(answer.Parts[0].Raw) {
		t.Errorf("parts %+v", resp.Message.Parts)
	}
	if resp.Usage != usage || resp.FinishReason != "tool_calls" {
		t.Errorf("usage %+v, finish %q", resp.Usage, resp.FinishReason)
	}
}

func TestClientStreamFailures(t *testing.T) {
	textStart := `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	textDelta := `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	good := sse(evStart, textStart, textDelta, `{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`, evStop)

	t.Run("ErrorBeforeTextIsRetried", func(t *testing.T) {
		up := newUpstream(t, sse(evStart, evPing, overloaded), good)
		resp, err := newClient(t, up.srv.URL).Stream(context.Background(), userRequest("x"), nil)
		if err != nil || resp.Message.Content != "Hi" || up.calls() != 2 {
			t.Fatalf("calls %d, resp %+v, %v", up.calls(), resp, err)
		}
	})
	t.Run("ErrorAfterText", func(t *testing.T) {
		up := newUpstream(t, sse(evStart, textStart, textDelta, overloaded), good)
		var n int
		_, err := newClient(t, up.srv.URL).Stream(context.Background(), userRequest("x"), func(string) { n++ })
		if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || !strings.Contains(hippocam.ErrorMessage(err), "overloaded_error") || up.calls() != 1 || n != 1 {
			t.Errorf("calls %d, texts %d, error %v", up.calls(), n, err)
		}
	})
	t.Run("NoMessageStop", func(t *testing.T) {
		up := newUpstream(t, sse(evStart, textStart, textDelta))
		_, err := newClient(t, up.srv.URL).Stream(context.Background(), userRequest("x"), nil)
		if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || !strings.Contains(hippocam.ErrorMessage(err), "message_stop") || !errors.Is(err, hippocam.ErrStreamCut) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("Malformed", func(t *testing.T) {
		up := newUpstream(t, func(w http.ResponseWriter) {
			w.WriteHeader(200)
			io.WriteString(w, "event: message_start\ndata: {nope\n\n")
		})
		_, err := newClient(t, up.srv.URL).Stream(context.Background(), userRequest("x"), nil)
		if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || up.calls() != 1 {
			t.Errorf("calls %d, error %v", up.calls(), err)
		}
	})
	t.Run("StatusBeforeStream", func(t *testing.T) {
		up := newUpstream(t, reply(529, overloaded), good)
		resp, err := newClient(t, up.srv.URL).Stream(context.Background(), userRequest("x"), nil)
		if err != nil || resp.Message.Content != "Hi" {
			t.Errorf("resp %+v, %v", resp, err)
		}
	})
}
