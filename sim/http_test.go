package sim_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
)

// endpoint is a way to reach a simulated model over HTTP: a real server or the in-process
// transport.
type endpoint struct {
	client *http.Client
	base   string
}

// endpoints returns both ways to reach m.
func endpoints(t *testing.T, m *sim.Model) map[string]endpoint {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return map[string]endpoint{
		"Server":    {client: srv.Client(), base: srv.URL + "/v1"},
		"Transport": {client: &http.Client{Transport: m.Transport()}, base: "http://sim.invalid/v1"},
	}
}

// post sends body to path with the role header (none if role is "") and returns the status and
// body of the response.
func (e endpoint) post(t *testing.T, path string, role hippocam.CallRole, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if role != "" {
		req.Header.Set(hippocam.RoleHeader, string(role))
	}
	return e.do(t, req)
}

func (e endpoint) do(t *testing.T, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readStream parses server-sent events and reassembles the message they carry. It fails the
// test unless the stream ends with [DONE].
func readStream(t *testing.T, body []byte) (wire.ChatMessage, string, *wire.Usage, []wire.ChatChunk) {
	t.Helper()
	var chunks []wire.ChatChunk
	done := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || done {
			t.Fatalf("unexpected stream line %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c wire.ChatChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks = append(chunks, c)
	}
	if !done {
		t.Fatal("the stream does not end with [DONE]")
	}
	msg := wire.ChatMessage{}
	var content strings.Builder
	finish := ""
	var usage *wire.Usage
	for _, c := range chunks {
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Role != "" {
				msg.Role = ch.Delta.Role
			}
			if ch.Delta.Content != nil {
				content.WriteString(*ch.Delta.Content)
			}
			for _, d := range ch.Delta.ToolCalls {
				if d.Index == nil {
					t.Fatalf("tool call delta without index: %s", show(d))
				}
				for len(msg.ToolCalls) <= *d.Index {
					msg.ToolCalls = append(msg.ToolCalls, wire.ToolCall{})
				}
				tc := &msg.ToolCalls[*d.Index]
				if d.ID != "" {
					tc.ID, tc.Type = d.ID, d.Type
				}
				tc.Function.Name += d.Function.Name
				tc.Function.Arguments += d.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	msg.Content = wire.StringContent(content.String())
	return msg, finish, usage, chunks
}

func TestHTTPChat(t *testing.T) {
	requests := []struct {
		name string
		role hippocam.CallRole
		req  *wire.ChatRequest
	}{
		{"Text", "", agentChat(user("!say hello, world"))},
		{"LongText", hippocam.CallAgent, agentChat(user("!say " + strings.Repeat("ünïcode text ", 40) + "\n!pad 300"))},
		{"ParallelCalls", hippocam.CallAgent, agentChat(user("!say reading\n!call read_file {\"path\":\"exports/shop.csv\"}\n!call read_file {\"path\":\"" + strings.Repeat("deep/", 30) + "x\"}"))},
		{"Janus", hippocam.CallJanus, componentChat(engine.JanusToolSpec, janusInstruction, user("#open A | a holds"))},
	}
	for name, e := range endpoints(t, mustModel(t)) {
		t.Run(name, func(t *testing.T) {
			for _, tt := range requests {
				t.Run(tt.name, func(t *testing.T) {
					status, body := e.post(t, "/chat/completions", tt.role, mustJSON(t, tt.req))
					if status != http.StatusOK {
						t.Fatalf("status %d: %s", status, body)
					}
					var plain wire.ChatResponse
					if err := json.Unmarshal(body, &plain); err != nil {
						t.Fatal(err)
					}
					if plain.Object != "chat.completion" || plain.Model != "test-model" || plain.Usage == nil || plain.Usage.PromptTokensDetails == nil {
						t.Fatalf("response %s", body)
					}
					if tt.role == hippocam.CallJanus {
						onlyCall(t, &plain, engine.JanusTool)
					}

					streamed := *tt.req
					streamed.Stream = true
					streamed.StreamOptions = &wire.StreamOptions{IncludeUsage: true}
					status, body = e.post(t, "/chat/completions", tt.role, mustJSON(t, &streamed))
					if status != http.StatusOK {
						t.Fatalf("stream status %d: %s", status, body)
					}
					msg, finish, usage, chunks := readStream(t, body)
					want := plain.Choices[0].Message
					wantText, _ := want.Text()
					gotText, _ := msg.Text()
					if msg.Role != want.Role || gotText != wantText || !reflect.DeepEqual(msg.ToolCalls, want.ToolCalls) {
						t.Fatalf("streamed message %s\nwant %s", show(msg), show(want))
					}
					if finish != plain.Choices[0].FinishReason {
						t.Fatalf("streamed finish %q, want %q", finish, plain.Choices[0].FinishReason)
					}
					if usage == nil || usage.PromptTokens != plain.Usage.PromptTokens || usage.CompletionTokens != plain.Usage.CompletionTokens {
						t.Fatalf("streamed usage %s, want %s", show(usage), show(plain.Usage))
					}
					if last := chunks[len(chunks)-1]; last.Usage == nil || len(last.Choices) != 0 {
						t.Fatalf("the last chunk %s should carry the usage and no choices", show(last))
					}
					for _, c := range chunks {
						if c.ID != plain.ID {
							t.Fatalf("chunk id %q, want %q", c.ID, plain.ID)
						}
					}

					streamed.StreamOptions = nil
					_, body = e.post(t, "/chat/completions", tt.role, mustJSON(t, &streamed))
					if _, _, usage, _ := readStream(t, body); usage != nil {
						t.Fatalf("usage sent without include_usage")
					}
				})
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	good := mustJSON(t, agentChat(user("hi")))
	tests := []struct {
		name   string
		method string
		path   string
		role   hippocam.CallRole
		body   []byte
		status int
	}{
		{"MalformedJSON", http.MethodPost, "/chat/completions", "", []byte(`{"messages": [`), http.StatusBadRequest},
		{"WrongShape", http.MethodPost, "/chat/completions", "", []byte(`{"messages": "hi"}`), http.StatusBadRequest},
		{"NoMessages", http.MethodPost, "/chat/completions", "", []byte(`{"model":"x","messages":[]}`), http.StatusBadRequest},
		{"UnknownRole", http.MethodPost, "/chat/completions", "oracle", good, http.StatusBadRequest},
		{"UnknownMessageRole", http.MethodPost, "/chat/completions", "", []byte(`{"messages":[{"role":"robot","content":"hi"}]}`), http.StatusBadRequest},
		{"ComponentWithoutInstruction", http.MethodPost, "/chat/completions", hippocam.CallPrecip, mustJSON(t, chat(system("p"), assistant("x"))), http.StatusBadRequest},
		{"WrongMethod", http.MethodGet, "/chat/completions", "", nil, http.StatusMethodNotAllowed},
		{"UnknownPath", http.MethodPost, "/audio/speech", "", good, http.StatusNotFound},
	}
	for name, e := range endpoints(t, mustModel(t)) {
		t.Run(name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					req, _ := http.NewRequest(tt.method, e.base+tt.path, bytes.NewReader(tt.body))
					if tt.role != "" {
						req.Header.Set(hippocam.RoleHeader, string(tt.role))
					}
					status, body := e.do(t, req)
					if status != tt.status {
						t.Fatalf("status %d, want %d: %s", status, tt.status, body)
					}
					var er wire.ErrorResponse
					if err := json.Unmarshal(body, &er); err != nil || er.Error.Message == "" || er.Error.Type == "" {
						t.Fatalf("error body %s is not an OpenAI error (%v)", body, err)
					}
				})
			}
		})
	}
}

func TestHTTPModels(t *testing.T) {
	for name, e := range endpoints(t, mustModel(t)) {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.base+"/models", nil)
			status, body := e.do(t, req)
			var list struct {
				Object string `json:"object"`
				Data   []struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			if status != http.StatusOK || json.Unmarshal(body, &list) != nil || list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != sim.ModelID {
				t.Fatalf("status %d, body %s", status, body)
			}
		})
	}
}

// TestDeterminism replays one sequence of requests, long enough to use the prompt cache, on two
// fresh models, over both endpoints, and expects the same bytes.
func TestDeterminism(t *testing.T) {
	long := system("You are a helpful agent.\n" + strings.Repeat("Keep every invoice row; rows are evidence. ", 250))
	seq := []struct {
		role hippocam.CallRole
		req  *wire.ChatRequest
	}{
		{"", withTools(chat(long, user("!call read_file {\"path\":\"a\"}\n!say reading")), engine.RecallToolSpec)},
		{hippocam.CallAgent, withTools(chat(long, user("!ask revenue")), engine.RecallToolSpec)},
		{hippocam.CallAgent, withTools(chat(long, user("[ref:r1] Memory.\ndetail revenue (in the archive)"), user("!ask revenue")), engine.RecallToolSpec)},
		{hippocam.CallPalim, componentChat(engine.PalimToolSpec, palimInstruction, long, user("a := 1\ndetail b := 2"))},
		{hippocam.CallJanus, componentChat(engine.JanusToolSpec, janusInstruction, long, user("#open A | a holds"))},
	}
	run := func(e endpoint) [][]byte {
		var out [][]byte
		for _, stream := range []bool{false, true} {
			for _, r := range seq {
				c := *r.req
				c.Stream = stream
				status, body := e.post(t, "/chat/completions", r.role, mustJSON(t, &c))
				if status != http.StatusOK {
					t.Fatalf("status %d: %s", status, body)
				}
				out = append(out, body)
			}
		}
		return out
	}
	first := run(endpoints(t, mustModel(t))["Server"])
	second := run(endpoints(t, mustModel(t))["Transport"])
	for i := range first {
		if !bytes.Equal(first[i], second[i]) {
			t.Fatalf("response %d differs:\n%s\n%s", i, first[i], second[i])
		}
	}
	var cached int
	for _, b := range first[len(seq):] {
		if !bytes.HasPrefix(b, []byte("data: ")) {
			t.Fatalf("a streamed response is not an event stream: %.80s", b)
		}
	}
	for _, b := range first[:len(seq)] {
		var r wire.ChatResponse
		json.Unmarshal(b, &r)
		cached += r.Usage.PromptTokensDetails.CachedTokens
	}
	if cached == 0 {
		t.Fatal("the sequence never hit the prompt cache; the test does not cover it")
	}
}

// TestConcurrentUse runs many requests at once on one model; run with -race.
func TestConcurrentUse(t *testing.T) {
	m := mustModel(t)
	client := &http.Client{Transport: m.Transport()}
	long := system(rows("policy", 1500))
	type result struct {
		want, got string
		err       error
	}
	done := make(chan result, 16)
	for i := 0; i < 16; i++ {
		go func() {
			value := itoa(i % 4)
			body, _ := json.Marshal(withTools(chat(long, user("k := "+value+"\n!ask k")), engine.RecallToolSpec))
			resp, err := client.Post("http://sim.invalid/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				done <- result{err: err}
				return
			}
			defer resp.Body.Close()
			var r wire.ChatResponse
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
				done <- result{err: err}
				return
			}
			got, err := r.Choices[0].Message.Text()
			done <- result{want: "k := " + value, got: got, err: err}
		}()
	}
	for i := 0; i < 16; i++ {
		if r := <-done; r.err != nil || r.got != r.want {
			t.Errorf("answer %q, want %q (%v)", r.got, r.want, r.err)
		}
	}
}
