package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"

	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// The events of an answer with text in three pieces and one tool call.
var (
	evTextStart = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	evTexts     = []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Ope"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ning "}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"the file."}}`,
	}
	evRest = []string{
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_9","name":"open","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\":\"x\"}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":12,"cache_read_input_tokens":30,"cache_creation_input_tokens":4,"output_tokens":17}}`,
		evStop,
	}
)

// toolAnswer is the whole event stream of that answer.
func toolAnswer() []string {
	return append(append([]string{evStart, evPing, evTextStart}, evTexts...), evRest...)
}

// broken writes events, then breaks the connection.
func broken(events ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		sse(events...)(w)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}

func TestClientCompleteStream(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		up := newUpstream(t, sse(toolAnswer()...))
		var pieces []string
		resp, err := newClient(t, up.srv.URL).CompleteStream(context.Background(), userRequest("go"), func(s string) error {
			pieces = append(pieces, s)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(pieces, "|") != "Ope|ning |the file." || resp.Message.Content != "Opening the file." {
			t.Errorf("pieces %q, content %q", pieces, resp.Message.Content)
		}
		if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0] != (hippocam.ToolCall{ID: "toolu_9", Name: "open", Arguments: `{"path":"x"}`}) {
			t.Errorf("calls %+v", resp.Message.ToolCalls)
		}
		// message_delta's usage replaces message_start's: 12 + 30 + 4 prompt tokens, 30 cached.
		if resp.Usage != (hippocam.CallUsage{Input: 46, CachedInput: 30, Output: 17}) || resp.FinishReason != "tool_calls" {
			t.Errorf("usage %+v, finish %q", resp.Usage, resp.FinishReason)
		}
		var body struct {
			Stream bool `json:"stream"`
		}
		if json.Unmarshal(up.bodies[0], &body) != nil || !body.Stream {
			t.Errorf("request %s, want stream: true", up.bodies[0])
		}
	})

	t.Run("BreakBeforeTextIsRetried", func(t *testing.T) {
		up := newUpstream(t, broken(evStart, evPing, evTextStart), sse(toolAnswer()...))
		var got strings.Builder
		resp, err := newClient(t, up.srv.URL).CompleteStream(context.Background(), userRequest("go"), func(s string) error {
			got.WriteString(s)
			return nil
		})
		if err != nil || up.calls() != 2 || got.String() != "Opening the file." || resp.Message.Content != got.String() {
			t.Fatalf("calls %d, text %q, err %v", up.calls(), got.String(), err)
		}
	})

	t.Run("ErrBreakAfterText", func(t *testing.T) {
		up := newUpstream(t, broken(evStart, evTextStart, evTexts[0]), sse(toolAnswer()...))
		var got strings.Builder
		_, err := newClient(t, up.srv.URL).CompleteStream(context.Background(), userRequest("go"), func(s string) error {
			got.WriteString(s)
			return nil
		})
		if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || up.calls() != 1 || got.String() != "Ope" {
			t.Fatalf("calls %d, text %q, err %v; want EUNAVAILABLE after one attempt", up.calls(), got.String(), err)
		}
	})

	t.Run("ErrCallback", func(t *testing.T) {
		up := newUpstream(t, sse(toolAnswer()...), sse(toolAnswer()...))
		stop := errors.New("client gone")
		n := 0
		_, err := newClient(t, up.srv.URL).CompleteStream(context.Background(), userRequest("go"), func(string) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 || up.calls() != 1 {
			t.Fatalf("err %v after %d pieces, %d calls; want the callback's error at once, no retry", err, n, up.calls())
		}
	})
}

// The simulated model's streamed Messages endpoint gives, piece by piece, what its plain one
// gives whole.
func TestClientCompleteStreamSim(t *testing.T) {
	srv := httptest.NewServer(sim.New(tokenizer.MustDefault()).Handler())
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	req := &hippocam.Request{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!say Reading it now.\n!pad 120\n!call read {\"path\":\"a.go\"}"}}}
	whole, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	streamed, err := c.CompleteStream(context.Background(), req, func(s string) error {
		pieces = append(pieces, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Message.Content) <= 64 || len(pieces) < 2 || strings.Join(pieces, "") != whole.Message.Content || streamed.Message.Content != whole.Message.Content {
		t.Errorf("streamed %q in %d pieces, whole %q", streamed.Message.Content, len(pieces), whole.Message.Content)
	}
	if len(streamed.Message.ToolCalls) != 1 || streamed.Message.ToolCalls[0] != whole.Message.ToolCalls[0] {
		t.Errorf("calls %+v, whole %+v", streamed.Message.ToolCalls, whole.Message.ToolCalls)
	}
	if streamed.Usage != whole.Usage || streamed.FinishReason != whole.FinishReason {
		t.Errorf("usage %+v finish %q, whole %+v %q", streamed.Usage, streamed.FinishReason, whole.Usage, whole.FinishReason)
	}
}

var _ hippocam.StreamModel = (*anthropic.Client)(nil)
