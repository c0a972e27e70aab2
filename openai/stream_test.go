package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/openai/wire"
)

// writeEvents answers with the given SSE body, flushing after every event.
func writeEvents(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for _, e := range events {
		_, _ = io.WriteString(w, e)
		w.(http.Flusher).Flush()
	}
}

// parallelCalls streams some text and two parallel tool calls whose deltas interleave.
var parallelCalls = []string{
	`data: {"id":"s","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n",
	`data: {"id":"s","choices":[{"index":0,"delta":{"content":"Reading "},"finish_reason":null}]}` + "\n\n",
	": keep-alive comment\n\n",
	`data: {"id":"s","choices":[{"index":0,"delta":{"content":"both."},"finish_reason":null}]}` + "\r\n\r\n",
	`data: {"id":"s","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}]}` + "\n\n",
	`data: {"id":"s","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]},"finish_reason":null}]}` + "\n\n",
	`data: {"id":"s","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]},"finish_reason":null}]}` + "\n\n",
	`data: {"id":"s","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\"b.csv\"}"}}]},"finish_reason":null}]}` + "\n\n",
	"event: message\ndata: {\"id\":\"s\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"a.csv\\\"}\"}}]},\n" +
		"data: \"finish_reason\":null}]}\n\n", // one event split over two data lines
	`data: {"id":"s","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n",
	`data: {"id":"s","choices":[],"usage":{"prompt_tokens":900,"completion_tokens":40,"total_tokens":940,"prompt_tokens_details":{"cached_tokens":512}}}` + "\n\n",
	"data: [DONE]\n\n",
}

func TestStream(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		var body map[string]json.RawMessage
		var accept, role string
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			accept, role = r.Header.Get("Accept"), r.Header.Get(hippocam.RoleHeader)
			_ = json.NewDecoder(r.Body).Decode(&body)
			writeEvents(w, parallelCalls...)
		}, nil)
		var chunks []wire.ChatChunk
		resp, err := c.Stream(context.Background(), userRequest("read both"), func(ch wire.ChatChunk) error {
			chunks = append(chunks, ch)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if string(body["stream"]) != "true" || string(body["stream_options"]) != `{"include_usage":true}` {
			t.Errorf("body stream = %s, stream_options = %s", body["stream"], body["stream_options"])
		}
		if accept != "text/event-stream" || role != "agent" {
			t.Errorf("accept %q, role %q", accept, role)
		}
		if len(chunks) != 10 {
			t.Errorf("callback got %d chunks, want 10", len(chunks))
		}
		m := resp.Message
		if m.Role != hippocam.RoleAssistant || m.Kind != hippocam.KindRaw || m.Content != "Reading both." {
			t.Errorf("message = %+v", m)
		}
		want := []hippocam.ToolCall{
			{ID: "call_a", Name: "read_file", Arguments: `{"path":"a.csv"}`},
			{ID: "call_b", Name: "read_file", Arguments: `{"path":"b.csv"}`},
		}
		if len(m.ToolCalls) != 2 || m.ToolCalls[0] != want[0] || m.ToolCalls[1] != want[1] {
			t.Errorf("tool calls = %+v, want %+v", m.ToolCalls, want)
		}
		if resp.FinishReason != "tool_calls" || resp.Usage != (hippocam.CallUsage{Input: 900, CachedInput: 512, Output: 40}) {
			t.Errorf("finish %q, usage %+v", resp.FinishReason, resp.Usage)
		}
	})

	t.Run("OKWithoutIndexOrDone", func(t *testing.T) {
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			writeEvents(w,
				`data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]}}]}`+"\n\n",
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c2","function":{"name":"g","arguments":"{\"x\""}}]}}]}`+"\n\n",
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}]}`+"\n\n",
				`data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`+"\n\n")
		}, nil)
		resp, err := c.Stream(context.Background(), userRequest("x"), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Message.ToolCalls
		if len(got) != 2 || got[0] != (hippocam.ToolCall{ID: "c1", Name: "f", Arguments: "{}"}) ||
			got[1] != (hippocam.ToolCall{ID: "c2", Name: "g", Arguments: `{"x":1}`}) {
			t.Errorf("tool calls = %+v", got)
		}
		if resp.Message.Content != "" || resp.Usage != (hippocam.CallUsage{Input: 1, Output: 1}) {
			t.Errorf("response = %+v", resp)
		}
	})

	t.Run("OKSlowButSteady", func(t *testing.T) {
		// The whole stream takes longer than Timeout and IdleTimeout together, but no pause between
		// lines is longer than IdleTimeout.
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			events := []string{}
			for range 6 {
				events = append(events, `data: {"choices":[{"index":0,"delta":{"content":"x"}}]}`+"\n\n")
			}
			events = append(events, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n", "data: [DONE]\n\n")
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range events {
				time.Sleep(30 * time.Millisecond)
				_, _ = io.WriteString(w, e)
				w.(http.Flusher).Flush()
			}
		}, func(cfg *openai.Config) { cfg.Timeout, cfg.IdleTimeout = 100*time.Millisecond, 100*time.Millisecond })
		resp, err := c.Stream(context.Background(), userRequest("x"), nil)
		if err != nil || resp.Message.Content != "xxxxxx" || resp.FinishReason != "stop" {
			t.Fatalf("resp %+v, err %v", resp, err)
		}
	})

	t.Run("RetryBeforeFirstChunk", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				writeJSON(w, 503, `{"error":{"message":"warming up"}}`)
				return
			}
			writeEvents(w, `data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`+"\n\n", "data: [DONE]\n\n")
		}, nil)
		resp, err := c.Stream(context.Background(), userRequest("x"), nil)
		if err != nil || resp.Message.Content != "hi" || calls.Load() != 2 {
			t.Fatalf("resp %+v, err %v, attempts %d", resp, err, calls.Load())
		}
	})

	t.Run("ErrCallbackNotRetried", func(t *testing.T) {
		// A callback error that looks like a retryable failure must still end the stream.
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			writeEvents(w, parallelCalls...)
		}, nil)
		_, err := c.Stream(context.Background(), userRequest("x"), func(wire.ChatChunk) error {
			return &openai.StatusError{Status: 503}
		})
		var se *openai.StatusError
		if !errors.As(err, &se) || calls.Load() != 1 {
			t.Fatalf("err = %v after %d attempts, want the callback's error after 1", err, calls.Load())
		}
	})

	t.Run("ErrCallback", func(t *testing.T) {
		stop := errors.New("client went away")
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) { writeEvents(w, parallelCalls...) }, nil)
		n := 0
		_, err := c.Stream(context.Background(), userRequest("x"), func(wire.ChatChunk) error {
			if n++; n == 3 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || n != 3 {
			t.Fatalf("err = %v after %d chunks, want the callback's error after 3", err, n)
		}
	})

	for _, tt := range []struct {
		name, want string
		events     []string
	}{
		{"ErrTruncated", "ended before", []string{`data: {"choices":[{"index":0,"delta":{"content":"hal"}}]}` + "\n\n"}},
		// A stream that gave its finish reason, then ended without the usage chunk that follows
		// it or [DONE], was cut too.
		{"ErrNoDone", "without [DONE]", []string{
			`data: {"choices":[{"index":0,"delta":{"content":"hal"}}]}` + "\n\n",
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"}},
		{"ErrMalformedEvent", "unreadable", []string{`data: {"choices":[{"index":0,` + "\n\n"}},
		{"ErrErrorEvent", "out of memory", []string{
			`data: {"choices":[{"index":0,"delta":{"content":"a"}}]}` + "\n\n",
			`data: {"error":{"message":"out of memory","type":"server_error","code":500}}` + "\n\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				writeEvents(w, tt.events...)
			}, nil)
			_, err := c.Stream(context.Background(), userRequest("x"), nil)
			if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want unavailable mentioning %q", err, tt.want)
			}
			if cut := strings.HasPrefix(tt.name, "ErrTruncated") || tt.name == "ErrNoDone"; cut != errors.Is(err, hippocam.ErrStreamCut) {
				t.Errorf("errors.Is(err, ErrStreamCut) = %v, want %v", !cut, cut)
			}
			if calls.Load() != 1 {
				t.Errorf("attempts = %d, want 1", calls.Load())
			}
		})
	}

	t.Run("ErrStalled", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			_, _ = io.Copy(io.Discard, r.Body)
			writeEvents(w, `data: {"choices":[{"index":0,"delta":{"content":"a"}}]}`+"\n\n")
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, func(cfg *openai.Config) { cfg.Timeout, cfg.IdleTimeout = time.Second, 50*time.Millisecond })
		start := time.Now()
		_, err := c.Stream(context.Background(), userRequest("x"), nil)
		if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || !strings.Contains(err.Error(), "no progress within 50ms") || !errors.Is(err, hippocam.ErrTimeout) {
			t.Fatalf("err = %v, want unavailable after the idle timeout", err)
		}
		if calls.Load() != 1 || time.Since(start) > 2*time.Second {
			t.Errorf("attempts = %d in %v, want 1 and no retry after a chunk", calls.Load(), time.Since(start))
		}
	})

	t.Run("ErrCancelled", func(t *testing.T) {
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			writeEvents(w, `data: {"choices":[{"index":0,"delta":{"content":"a"}}]}`+"\n\n")
			<-r.Context().Done()
		}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		_, err := c.Stream(ctx, userRequest("x"), func(wire.ChatChunk) error { cancel(); return nil })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}
