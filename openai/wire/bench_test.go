package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
)

// benchRequest is a proxied agent session of n messages: a system prompt, user turns, assistant
// turns that call tools (arguments are escaped JSON), tool results with quotes and newlines,
// tool definitions, and unknown fields on the request, on some messages and on a tool.
func benchRequest(n int) ChatRequest {
	req := ChatRequest{
		Model:      "gpt-4o",
		ToolChoice: json.RawMessage(`"auto"`),
		Stream:     true,
		Extra: Extra{
			"temperature": json.RawMessage(`0.2`),
			"metadata":    json.RawMessage(`{"session":"s-42","user":"u-7"}`),
			"user":        json.RawMessage(`"u-7"`),
		},
	}
	for _, name := range []string{"read_file", "write_file", "search", "run", "recall"} {
		req.Tools = append(req.Tools, ToolDef{Type: "function", Function: FunctionDef{
			Name: name, Description: "Does " + name + " on the workspace.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}`),
		}})
	}
	req.Tools[0].Extra = Extra{"cache_control": json.RawMessage(`{"type":"ephemeral"}`)}
	req.Messages = append(req.Messages, ChatMessage{Role: "system", Content: StringContent("You are a coding agent. Use the tools to read and change files.")})
	call := 0
	for len(req.Messages) < n {
		i := len(req.Messages)
		switch i % 6 {
		case 1, 4:
			m := ChatMessage{Role: "user", Content: StringContent(fmt.Sprintf("Step %d", i))}
			if i%30 == 1 {
				m.Extra = Extra{"cache_control": json.RawMessage(`{"type":"ephemeral"}`)}
			}
			req.Messages = append(req.Messages, m)
		case 2:
			call++
			req.Messages = append(req.Messages, ChatMessage{Role: "assistant", ToolCalls: []ToolCall{{
				ID: fmt.Sprintf("c%d", call), Type: "function", Function: FunctionCall{Name: "read_file", Arguments: fmt.Sprintf(`{"path":"m%d"}`, call)},
			}}})
		case 3:
			req.Messages = append(req.Messages, ChatMessage{Role: "tool", ToolCallID: fmt.Sprintf("c%d", call),
				Content: StringContent(fmt.Sprintf("f%d:\n\"ok\"", call))})
		default:
			req.Messages = append(req.Messages, ChatMessage{Role: "assistant", Content: StringContent("Done <ok>.")})
		}
	}
	return req
}

var benchBody = sync.OnceValue(func() []byte {
	b, err := json.Marshal(benchRequest(10000))
	if err != nil {
		panic(err)
	}
	return b
})

// BenchmarkDecodeChatRequest decodes a 10k-message request as the proxy does (json.Unmarshal),
// and with UnmarshalJSON alone.
func BenchmarkDecodeChatRequest(b *testing.B) {
	body := benchBody()
	b.Run("Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var req ChatRequest
			if err := json.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("UnmarshalJSON", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var req ChatRequest
			if err := req.UnmarshalJSON(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadChatRequest reads a 10k-message request the way the proxy does (checks, the
// fast decoder, the raw bytes of every message, the conversation), beside the decode alone.
func BenchmarkReadChatRequest(b *testing.B) {
	body := benchBody()
	b.Run("UnmarshalJSON", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var req ChatRequest
			if err := req.UnmarshalJSON(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ReadChatRequest", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, _, err := ReadChatRequest(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RawMessagesStd", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var raw struct {
				Messages []json.RawMessage `json:"messages"`
			}
			if err := json.Unmarshal(body, &raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEncodeChatRequest encodes a 10k-message request as the model client does
// (json.Marshal), and with MarshalJSON alone.
func BenchmarkEncodeChatRequest(b *testing.B) {
	var req ChatRequest
	if err := json.Unmarshal(benchBody(), &req); err != nil {
		b.Fatal(err)
	}
	b.Run("Marshal", func(b *testing.B) {
		b.SetBytes(int64(len(benchBody())))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MarshalJSON", func(b *testing.B) {
		b.SetBytes(int64(len(benchBody())))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := req.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRequestWriter writes the body of a 10k-message domain request: as the model client
// did before RequestWriter (FromRequest, then json.Marshal), with a writer that keeps nothing,
// and with one that keeps the previous request of the session, which the next one resends with
// one more message (the steady state of a session: every step's two calls).
func BenchmarkRequestWriter(b *testing.B) {
	wr := benchRequest(10000)
	msgs, tools, err := ToRequest(&wr)
	if err != nil {
		b.Fatal(err)
	}
	req := &hippocam.Request{Messages: msgs, Tools: tools, ToolChoice: "auto", Extra: json.RawMessage(`{"temperature":0.2}`)}
	b.Run("FromRequest+Marshal", func(b *testing.B) {
		b.SetBytes(int64(len(benchBody())))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := refBody("m", req, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Body", func(b *testing.B) {
		b.SetBytes(int64(len(benchBody())))
		b.ReportAllocs()
		w := NewRequestWriter(0)
		for b.Loop() {
			if _, err := w.Body("m", req, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("BodyResent", func(b *testing.B) {
		b.SetBytes(int64(len(benchBody())))
		b.ReportAllocs()
		w := NewRequestWriter(64 << 20)
		var next [2]hippocam.Request
		for i := range next {
			next[i] = *req
			next[i].Messages = append(msgs[:len(msgs):len(msgs)], hippocam.Message{Role: hippocam.RoleUser, Content: fmt.Sprint("one more ", i)})
		}
		i := 0
		for b.Loop() {
			i++
			if _, err := w.Body("m", &next[i%2], false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkChatReader reads a 10k-message request with ReadChatRequest, and with a ChatReader
// that remembers the request before it, which the one read resends with two more messages
// (read alternately with it, so that each read finds the other).
func BenchmarkChatReader(b *testing.B) {
	short := benchBody()
	long := bytes.Replace(short, []byte(`],"tools"`), []byte(`,{"role":"user","content":"more"},{"role":"assistant","content":"ok"}],"tools"`), 1)
	if len(long) == len(short) {
		b.Fatal("no messages array end found")
	}
	b.Run("ReadChatRequest", func(b *testing.B) {
		b.SetBytes(int64(len(short)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := ReadChatRequest(short); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ChatReaderResent", func(b *testing.B) {
		b.SetBytes(int64(len(short)))
		b.ReportAllocs()
		r := NewChatReader(1 << 20)
		i := 0
		for b.Loop() {
			body := short
			if i%2 == 1 {
				body = long
			}
			i++
			if _, _, err := r.Read(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// plainRequest is ChatRequest without Extra: what encoding/json alone costs, for comparison.
type plainRequest struct {
	Model      string          `json:"model"`
	Messages   []plainMessage  `json:"messages"`
	Tools      []plainToolDef  `json:"tools,omitempty"`
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	Stream     bool            `json:"stream,omitempty"`
}

type plainMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type plainToolDef struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// BenchmarkPlainStruct decodes and encodes the same request as plain structs.
func BenchmarkPlainStruct(b *testing.B) {
	body := benchBody()
	var req plainRequest
	b.Run("Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			req = plainRequest{}
			if err := json.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Marshal", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestBenchRequestShape(t *testing.T) {
	body := string(benchBody())
	if len(body) < 500_000 || len(body) > 700_000 || !strings.Contains(body, `"cache_control"`) {
		t.Errorf("bench body is %d bytes", len(body))
	}
	checkDecode(t, kinds[0], benchBody())
}
