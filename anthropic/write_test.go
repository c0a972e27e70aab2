package anthropic_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data string
	ev   anthropic.Event
}

// parseSSE parses a stream of "event: NAME\ndata: JSON\n\n" events, failing the test when one
// is malformed or its name differs from its type.
func parseSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("stream does not end with a blank line: %q", body)
	}
	var out []sseEvent
	for _, chunk := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		lines := strings.Split(chunk, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("malformed event %q", chunk)
		}
		e := sseEvent{name: strings.TrimPrefix(lines[0], "event: "), data: strings.TrimPrefix(lines[1], "data: ")}
		if err := json.Unmarshal([]byte(e.data), &e.ev); err != nil {
			t.Fatalf("event %q: %v", chunk, err)
		}
		if e.ev.Type != e.name {
			t.Fatalf("event %q has type %q", e.name, e.ev.Type)
		}
		out = append(out, e)
	}
	return out
}

// replay reassembles the message a parsed stream carries, checking the block discipline
// (every delta inside a started block, indices in order) and the size of the pieces.
func replay(t *testing.T, events []sseEvent) (text string, calls []hippocam.ToolCall, stop string, u anthropic.Usage) {
	t.Helper()
	open, next := -1, 0
	var args strings.Builder
	var call hippocam.ToolCall
	for i, e := range events {
		switch e.name {
		case anthropic.EventMessageStart:
			if i != 0 || e.ev.Message == nil || len(e.ev.Message.Content) != 0 || e.ev.Message.StopReason != nil {
				t.Fatalf("message_start %d: %s", i, e.data)
			}
			u = e.ev.Message.Usage
		case anthropic.EventContentBlockStart:
			if open != -1 || e.ev.Index != next {
				t.Fatalf("block %d starts while %d is open (next %d)", e.ev.Index, open, next)
			}
			open = e.ev.Index
			if b := e.ev.ContentBlock; b.Type == anthropic.BlockToolUse {
				if string(b.Input) != "{}" {
					t.Errorf("tool_use starts with input %s", b.Input)
				}
				call, args = hippocam.ToolCall{ID: b.ID, Name: b.Name}, strings.Builder{}
			}
		case anthropic.EventContentBlockDelta:
			if e.ev.Index != open {
				t.Fatalf("delta for block %d while %d is open", e.ev.Index, open)
			}
			d := e.ev.Delta
			piece := d.Text + d.PartialJSON + d.Thinking
			if len(piece) > 64 || !utf8.ValidString(piece) {
				t.Errorf("piece %q: %d bytes", piece, len(piece))
			}
			switch d.Type {
			case "text_delta":
				text += d.Text
			case "input_json_delta":
				args.WriteString(d.PartialJSON)
			}
		case anthropic.EventContentBlockStop:
			if e.ev.Index != open {
				t.Fatalf("stop for block %d while %d is open", e.ev.Index, open)
			}
			if call.ID != "" {
				call.Arguments = args.String()
				calls = append(calls, call)
				call = hippocam.ToolCall{}
			}
			open, next = -1, next+1
		case anthropic.EventMessageDelta:
			stop = *e.ev.Delta.StopReason
			u.OutputTokens = e.ev.Usage.OutputTokens
		case anthropic.EventMessageStop:
			if i != len(events)-1 {
				t.Fatalf("message_stop is event %d of %d", i, len(events))
			}
		}
	}
	if len(events) == 0 || events[len(events)-1].name != anthropic.EventMessageStop {
		t.Fatal("the stream does not end with message_stop")
	}
	return text, calls, stop, u
}

func TestWriteResponse(t *testing.T) {
	rec := httptest.NewRecorder()
	answer := &hippocam.Message{Role: hippocam.RoleAssistant, Content: "a <b> & c",
		ToolCalls: []hippocam.ToolCall{{ID: "t1", Name: "go", Arguments: `{"x":[1, 2]}`}, {ID: "t2", Name: "bad", Arguments: "not json"}},
		Parts: []hippocam.Part{{Type: "thinking", Format: hippocam.FormatAnthropic, Raw: `{"type":"thinking","thinking":"hm","signature":"s","cache_control":{"type":"ephemeral"}}`},
			{Type: hippocam.PartImage, Format: hippocam.FormatChat, Raw: `{"type":"image_url"}`}}}
	if err := anthropic.WriteResponse(rec, "claude-x", "msg_1", answer, "tool_calls", hippocam.CallUsage{Input: 100, CachedInput: 60, Output: 7}); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	want := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[` +
		`{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"a <b> & c","citations":null},` +
		`{"type":"tool_use","id":"t1","name":"go","input":{"x":[1, 2]},"caller":{"type":"direct"}},` +
		`{"type":"tool_use","id":"t2","name":"bad","input":{},"caller":{"type":"direct"}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"stop_details":null,"container":null,"diagnostics":null,` +
		`"usage":{"input_tokens":40,"cache_creation_input_tokens":0,"cache_read_input_tokens":60,` +
		`"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":7,` +
		`"output_tokens_details":null,"server_tool_use":null,"service_tier":"standard","inference_geo":null,"speed":null}}` + "\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("body:\n got %s\nwant %s", got, want)
	}
}

func TestStopReason(t *testing.T) {
	calls := &hippocam.Message{ToolCalls: []hippocam.ToolCall{{ID: "a"}}}
	for _, c := range []struct {
		finish string
		answer *hippocam.Message
		want   string
	}{
		{"tool_calls", nil, "tool_use"}, {"stop", nil, "end_turn"}, {"length", nil, "max_tokens"},
		{"content_filter", nil, "refusal"}, {"stop_sequence", nil, "stop_sequence"}, {"", nil, "end_turn"},
		{"", calls, "tool_use"}, {"weird", nil, "end_turn"},
	} {
		if got := anthropic.StopReason(c.finish, c.answer); got != c.want {
			t.Errorf("StopReason(%q) = %q, want %q", c.finish, got, c.want)
		}
	}
	for stop, want := range map[string]string{"tool_use": "tool_calls", "end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "pause_turn": "pause_turn"} {
		if got := anthropic.FinishReason(stop); got != want {
			t.Errorf("FinishReason(%q) = %q, want %q", stop, got, want)
		}
	}
}

func TestWriteStream(t *testing.T) {
	text := strings.Repeat("héllo wörld 👋 ", 12) // 216 bytes with multi-byte characters across 64-byte cuts
	args := `{"path":"` + strings.Repeat("ü", 50) + `"}`
	answer := &hippocam.Message{Role: hippocam.RoleAssistant, Content: text,
		ToolCalls: []hippocam.ToolCall{{ID: "t1", Name: "read", Arguments: args}, {ID: "t2", Name: "list", Arguments: ""}}}
	rec := httptest.NewRecorder()
	if err := anthropic.WriteStream(rec, "m", "msg_s", answer, "tool_calls", hippocam.CallUsage{Input: 50, CachedInput: 20, Output: 9}); err != nil {
		t.Fatal(err)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	events := parseSSE(t, rec.Body.String())
	if events[1].name != anthropic.EventPing {
		t.Errorf("second event %q, want ping", events[1].name)
	}
	gotText, calls, stop, u := replay(t, events)
	if gotText != text {
		t.Errorf("text %q, want %q", gotText, text)
	}
	want := []hippocam.ToolCall{{ID: "t1", Name: "read", Arguments: args}, {ID: "t2", Name: "list", Arguments: "{}"}}
	if len(calls) != 2 || calls[0] != want[0] || calls[1] != want[1] {
		t.Errorf("calls %+v, want %+v", calls, want)
	}
	if stop != "tool_use" {
		t.Errorf("stop %q", stop)
	}
	if u != (anthropic.Usage{InputTokens: 30, CacheReadInputTokens: 20, OutputTokens: 9}) {
		t.Errorf("usage %+v", u)
	}
	if n := strings.Count(rec.Body.String(), "event: content_block_delta"); n < 4+2 {
		t.Errorf("only %d deltas for 216 bytes of text and 100 of arguments", n)
	}
}

func TestStreamWriter(t *testing.T) {
	t.Run("Incremental", func(t *testing.T) {
		rec := httptest.NewRecorder()
		s := anthropic.NewStreamWriter(rec, "m", "msg_i")
		for _, d := range []string{"Hel", "", "lo, ", "world"} {
			if err := s.Text(d); err != nil {
				t.Fatal(err)
			}
		}
		s.Part(hippocam.Part{Type: "thinking", Format: hippocam.FormatAnthropic, Raw: `{"type":"thinking","thinking":"why","signature":"sg"}`})
		s.Text("again")
		s.ToolCall(hippocam.ToolCall{ID: "c", Name: "n", Arguments: `{"a":1}`})
		if err := s.Finish("", hippocam.CallUsage{Input: 10, Output: 3}); err != nil {
			t.Fatal(err)
		}
		if err := s.Text("late"); err == nil {
			t.Error("Text after Finish did not fail")
		}
		events := parseSSE(t, rec.Body.String())
		text, calls, stop, _ := replay(t, events)
		if text != "Hello, worldagain" || len(calls) != 1 || stop != "tool_use" {
			t.Errorf("text %q, calls %+v, stop %q", text, calls, stop)
		}
		var names []string
		for _, e := range events {
			if e.name == anthropic.EventContentBlockStart {
				names = append(names, e.ev.ContentBlock.Type)
			}
		}
		if strings.Join(names, ",") != "text,thinking,text,tool_use" {
			t.Errorf("blocks %v", names)
		}
		var sig bool
		for _, e := range events {
			sig = sig || (e.ev.Delta != nil && e.ev.Delta.Type == "signature_delta" && e.ev.Delta.Signature == "sg")
		}
		if !sig {
			t.Error("no signature_delta for the thinking block")
		}
	})
	t.Run("Fail", func(t *testing.T) {
		rec := httptest.NewRecorder()
		s := anthropic.NewStreamWriter(rec, "m", "msg_f")
		s.Text("partial")
		if err := s.Fail(anthropic.ErrorOverloaded, "Overloaded"); err != nil {
			t.Fatal(err)
		}
		events := parseSSE(t, rec.Body.String())
		last := events[len(events)-1]
		if last.name != anthropic.EventError || last.ev.Error == nil || last.ev.Error.Type != "overloaded_error" {
			t.Errorf("last event %s %s", last.name, last.data)
		}
	})
}

func TestWriteError(t *testing.T) {
	rec := httptest.NewRecorder()
	anthropic.WriteError(rec, http.StatusTooManyRequests, anthropic.StatusType(429), "slow down")
	want := `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}` + "\n"
	if rec.Code != 429 || rec.Body.String() != want {
		t.Errorf("%d %s", rec.Code, rec.Body.String())
	}
	for status, want := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 422: "invalid_request_error", 500: "api_error", 529: "overloaded_error"} {
		if got := anthropic.StatusType(status); got != want {
			t.Errorf("StatusType(%d) = %q, want %q", status, got, want)
		}
	}
}

// TestWriteThenRead sends an answer written by WriteResponse back as the assistant turn of the
// next request: the agent's echo must read into the same domain message.
func TestWriteThenRead(t *testing.T) {
	answer := &hippocam.Message{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, Content: "line one\nline two",
		ToolCalls: []hippocam.ToolCall{{ID: "t1", Name: "go", Arguments: `{"x":1}`}}}
	rec := httptest.NewRecorder()
	anthropic.WriteResponse(rec, "m", "msg", answer, "tool_calls", hippocam.CallUsage{})
	var resp struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	conv := mustRead(t, `{"max_tokens":5,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":`+string(resp.Content)+`}]}`)
	got := conv.Messages[1]
	if got.Content != answer.Content || len(got.ToolCalls) != 1 || got.ToolCalls[0] != answer.ToolCalls[0] {
		t.Errorf("read back %+v", got)
	}
}

// Every event of a stream carries the members the official SDKs' types require, null where
// Hippocam has nothing to report.
func TestWriteStreamMembers(t *testing.T) {
	rec := httptest.NewRecorder()
	answer := &hippocam.Message{Content: "hi", ToolCalls: []hippocam.ToolCall{{ID: "t1", Name: "read", Arguments: `{}`}}}
	if err := anthropic.WriteStream(rec, "m", "msg_k", answer, "tool_calls", hippocam.CallUsage{Input: 5, Output: 2}); err != nil {
		t.Fatal(err)
	}
	usage := []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens", "output_tokens_details", "server_tool_use"}
	checks := []struct {
		event, block string // block: the content block's type, for content_block_start
		path         []string
		members      []string
	}{
		{"message_start", "", []string{"message"}, []string{"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "stop_details", "container", "diagnostics", "usage"}},
		{"message_start", "", []string{"message", "usage"}, append([]string{"cache_creation", "service_tier", "inference_geo", "speed"}, usage...)},
		{"content_block_start", "text", []string{"content_block"}, []string{"type", "text", "citations"}},
		{"content_block_start", "tool_use", []string{"content_block"}, []string{"type", "id", "name", "input", "caller"}},
		{"message_delta", "", []string{"delta"}, []string{"stop_reason", "stop_sequence", "stop_details", "container"}},
		{"message_delta", "", []string{"usage"}, usage},
	}
	seen := make([]bool, len(checks))
	for _, e := range parseSSE(t, rec.Body.String()) {
		var v map[string]any
		if err := json.Unmarshal([]byte(e.data), &v); err != nil {
			t.Fatal(err)
		}
		for i, c := range checks {
			if c.event != e.name {
				continue
			}
			obj := v
			for _, k := range c.path {
				obj, _ = obj[k].(map[string]any)
			}
			if c.block != "" && obj["type"] != c.block {
				continue
			}
			seen[i] = true
			for _, m := range c.members {
				if _, ok := obj[m]; !ok {
					t.Errorf("%s %s has no %q: %s", c.event, strings.Join(c.path, "."), m, e.data)
				}
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			t.Errorf("no %s event with %s", checks[i].event, strings.Join(checks[i].path, "."))
		}
	}
}
