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
	"syscall"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
)

// BenchmarkProxyCPU times Hippocam's own work on one chat request of an agent session of the
// given length: the handler is called in process (no loopback), the upstream answers in process
// at once without reading the JSON (JANUS skips, the main model says "ok"), and the store is
// SQLite in a temporary directory. What remains is the proxy itself: reading the body, hashing
// the transcript, finding the session, the step, encoding the two upstream requests, the
// commit and the answer. Reported besides ns/op: cpu-ms/op, the process CPU (user and system,
// garbage collection included) spent while the handler ran, and up-KB/op, the bytes sent
// upstream per request.
func BenchmarkProxyCPU(b *testing.B) {
	for _, size := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("messages=%d", size), func(b *testing.B) {
			rig := newCPURig(b)
			history := rig.grow(b, "cpu", size)
			// One untimed request first: it records the framing and warms the session cache.
			history = rig.send(b, "cpu", history, nil)
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				history = rig.send(b, "cpu", history, &cpu)
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(rig.upBytes.Load())/1024/float64(rig.upCalls.Load())*2, "up-KB/op")
			s, err := rig.store.Session(context.Background(), "", "cpu")
			if err != nil {
				b.Fatal(err)
			}
			if c := s.Consolidations; c.Intent+c.Prefix > 0 {
				b.Fatalf("the session was consolidated (%d intent, %d prefix): the figures are for plain steps", c.Intent, c.Prefix)
			}
		})
	}
}

// cpuRig is the proxy of BenchmarkProxyCPU with its instant upstream.
type cpuRig struct {
	srv              http.Handler
	store            *sqlite.DB
	tok              hippocam.Tokenizer
	upCalls, upBytes atomic.Int64
	// head is the request body up to the end of the last message sent so far (sent of the
	// history), tail what follows the messages: the harness encodes each message once, so
	// that its own garbage does not set off the collections it measures.
	head, tail []byte
	sent       int
	buf        []byte // the last body, reused for the next
}

// instantJanus and instantAnswer are the upstream's two answers.
var (
	instantJanus  = fmt.Sprintf(`{"id":"j","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":%q,"arguments":"{\"close\":[],\"open\":[],\"guidance\":\"\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, engine.JanusTool)
	instantAnswer = `{"id":"a","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
)

// handlerTransport serves a client's requests with a handler in the same process.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

func newCPURig(tb testing.TB) *cpuRig {
	tb.Helper()
	r := &cpuRig{tok: tokenizer.MustDefault()}
	up := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n, _ := io.Copy(io.Discard, req.Body)
		r.upCalls.Add(1)
		r.upBytes.Add(n)
		w.Header().Set("Content-Type", "application/json")
		if req.Header.Get(hippocam.RoleHeader) == string(hippocam.CallJanus) {
			io.WriteString(w, instantJanus)
			return
		}
		io.WriteString(w, instantAnswer)
	})
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.MaxRetries = "http://upstream.invalid/v1", "m", 0
	cfg.HTTPClient = &http.Client{Transport: handlerTransport{up}}
	model, err := openai.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := engine.New(engine.ForWindow(1<<24), model, r.tok, nil)
	if err != nil {
		tb.Fatal(err)
	}
	r.store = sqlite.New(tb.TempDir() + "/h.db")
	if err := r.store.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.store.Close() })
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: r.store, Upstream: model})
	if err != nil {
		tb.Fatal(err)
	}
	r.srv = srv
	return r
}

// cpuFraming is the agent's system prompt in every request.
var cpuFraming = wire.ChatMessage{Role: "system", Content: wire.StringContent("You are a coding agent. Use the tools to read and change files.")}

// cpuTools are the agent's own tools.
var cpuTools = []wire.ToolDef{
	{Type: "function", Function: wire.FunctionDef{Name: "read_file", Description: "Reads a file of the workspace.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}},
	{Type: "function", Function: wire.FunctionDef{Name: "run", Description: "Runs a command.", Parameters: json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}`)}},
}

// grow stores a session of at least n messages after the framing, committed straight to the
// store with the transcript the proxy would have recorded: rounds of a user message, a tool
// call, its result (quotes and newlines) and a short answer. It returns the history as the
// client resends it.
func (r *cpuRig) grow(tb testing.TB, name string, n int) []wire.ChatMessage {
	tb.Helper()
	ctx := context.Background()
	s := engine.NewSession("", name, time.Now().UTC())
	if err := r.store.CreateSession(ctx, s); err != nil {
		tb.Fatal(err)
	}
	history := make([]wire.ChatMessage, 0, n+8)
	var ops []hippocam.Op
	hash, prev := "", ""
	add := func(c wire.ChatMessage) *hippocam.Message {
		m, err := wire.ToMessage(c)
		if err != nil {
			tb.Fatal(err)
		}
		raw, _ := c.MarshalJSON()
		m.ID, m.Origin = s.NextID("m"), &hippocam.Origin{Format: hippocam.FormatChat, Raw: string(raw)}
		m.Tokens = hippocam.MessageTokens(r.tok, &m)
		prev, hash = hash, hippocam.TranscriptHash(hash, &m)
		ops = append(ops, hippocam.AppendOp(m))
		history = append(history, c)
		return &m
	}
	for k := 0; len(history) < n; k++ {
		add(wire.ChatMessage{Role: "user", Content: wire.StringContent(fmt.Sprintf("Step %d: look at file %d", k, k))})
		id := fmt.Sprintf("call_%d", k)
		call := add(wire.ChatMessage{Role: "assistant", ToolCalls: []wire.ToolCall{{ID: id, Type: "function",
			Function: wire.FunctionCall{Name: "read_file", Arguments: fmt.Sprintf(`{"path":"src/f%d.go"}`, k)}}}})
		result := add(wire.ChatMessage{Role: "tool", ToolCallID: id, Content: wire.StringContent(fmt.Sprintf("package f%d\n\nconst name = \"f%d\" // <ok>\n", k, k))})
		answer := add(wire.ChatMessage{Role: "assistant", Content: wire.StringContent(fmt.Sprintf("File %d read; nothing to change.", k))})
		s.AddRound(call.Tokens + result.Tokens)
		s.AddRound(answer.Tokens)
		s.Transcript = hippocam.Transcript{Count: len(history), Hash: hash, PrevCount: len(history) - 1, PrevHash: prev, Answer: answer.ID}
		if len(ops) >= 1000 || len(history) >= n {
			if err := r.store.Commit(ctx, s, hippocam.Change{From: s.Version, Ops: ops}); err != nil {
				tb.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	return history
}

// send posts the history and one new user message as session name and returns the history
// with Hippocam's answer. When cpu is set, the process CPU spent in the handler is added to it;
// the body is built with the timer stopped.
func (r *cpuRig) send(tb testing.TB, name string, history []wire.ChatMessage, cpu *time.Duration) []wire.ChatMessage {
	tb.Helper()
	b, _ := tb.(*testing.B)
	if b != nil && cpu != nil {
		b.StopTimer()
	}
	msgs := append(history, wire.ChatMessage{Role: "user", Content: wire.StringContent(fmt.Sprintf("Step %d: what next?", len(history)))})
	body := r.body(tb, msgs)
	if r.sent == len(history) && len(history) > 0 && cpu == nil {
		// The untimed request checks that the body is the one json.Marshal writes.
		want, err := json.Marshal(wire.ChatRequest{Model: "m", Messages: append([]wire.ChatMessage{cpuFraming}, msgs...), Tools: cpuTools})
		if err != nil {
			tb.Fatal(err)
		}
		if !bytes.Equal(body, want) {
			tb.Fatalf("the body built message by message is not json.Marshal's")
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(httpapi.SessionHeader, name)
	rec := httptest.NewRecorder()
	if b != nil && cpu != nil {
		b.StartTimer()
	}
	t0 := processCPU()
	r.srv.ServeHTTP(rec, req)
	if cpu != nil {
		*cpu += processCPU() - t0
	}
	var out wire.ChatResponse
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil || len(out.Choices) == 0 {
		tb.Fatalf("status %d: %.300s", rec.Code, rec.Body.String())
	}
	if got := rec.Header().Get(httpapi.SessionHeader); got != name {
		tb.Fatalf("the proxy answered in session %q, not %q: the prebuilt transcript does not match", got, name)
	}
	if text, _ := out.Choices[0].Message.Text(); !strings.Contains(text, "ok") {
		tb.Fatalf("answer %q", text)
	}
	return append(msgs, out.Choices[0].Message)
}

// body returns the request body for msgs, which extend those of the previous call by at most
// their last one: the messages not sent before are encoded and kept, the last one too when it
// is not the new user message. The body is valid until the next call (the proxy keeps nothing
// of a body once it has answered).
func (r *cpuRig) body(tb testing.TB, msgs []wire.ChatMessage) []byte {
	tb.Helper()
	encode := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	if r.head == nil {
		// Split json.Marshal's body of a request with the framing alone around its messages' end.
		only := encode(wire.ChatRequest{Model: "m", Messages: []wire.ChatMessage{cpuFraming}, Tools: cpuTools})
		end := bytes.Index(only, encode(cpuFraming)) + len(encode(cpuFraming))
		r.head, r.tail = only[:end:end], only[end:]
	}
	for ; r.sent < len(msgs)-1; r.sent++ {
		r.head = append(append(r.head, ','), encode(msgs[r.sent])...)
	}
	last := encode(msgs[len(msgs)-1])
	r.buf = append(append(append(append(r.buf[:0], r.head...), ','), last...), r.tail...)
	return r.buf
}

// processCPU returns the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
