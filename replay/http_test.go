package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/replay"
	"github.com/hippocam/hippocam/scenario"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// httpScenario exercises a greeting, parallel calls with arguments long enough to be streamed in
// several pieces, their results, and questions answered from the visible history. Blank lines
// keep the line numbers honest.
const httpScenario = `{"role":"user","content":"#open Read the files | both are read\n!say hello"}

{"role":"user","content":"!call read_file {\"path\":\"exports/a-very-long-file-name-that-takes-more-than-one-piece.csv\"}\n!call read_file {\"path\":\"exports/b.csv\"}"}
{"role":"tool","content":"size_a := 10\n(rows)"}
{"role":"tool","content":"size_b := 20"}
{"role":"user","content":"!ask size_a"}
{"role":"user","content":"size_b := 25\n!say noted\n!ask size_b"}
{"role":"user","content":"!ask size_c"}
{"role":"user","content":"#close Read the files\n!say done"}
`

// wantAnswers are httpScenario's answers to its !ask lines.
var wantAnswers = []string{"size_a := 10", "noted\nsize_b := 25", "size_c := unknown"}

// recorded is one request a recordingServer saw.
type recorded struct {
	header http.Header
	body   wire.ChatRequest
}

// recordingServer serves the simulated model over HTTP and records every request.
type recordingServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newRecordingServer(t *testing.T) *recordingServer {
	t.Helper()
	s := &recordingServer{}
	h := sim.New(tokenizer.MustDefault()).Handler()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read request: %v", err)
		}
		var req wire.ChatRequest
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("request body %s: %v", b, err)
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, recorded{header: r.Header.Clone(), body: req})
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests returns the requests seen so far.
func (s *recordingServer) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

func mustParse(t *testing.T, script string) []scenario.Line {
	t.Helper()
	lines, err := scenario.Parse(strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRunHTTP(t *testing.T) {
	lines := mustParse(t, httpScenario)
	modes := []struct {
		name     string
		stream   func(int) bool
		streamed int
	}{
		{"Plain", nil, 0},
		{"Streamed", func(int) bool { return true }, 7},
		// Step 2 (the parallel calls) streams; step 3 (answering the results) does not.
		{"Mixed", func(step int) bool { return step%2 == 0 }, 3},
	}
	var transcripts []string
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := newRecordingServer(t)
			tools := []wire.ToolDef{{Type: "function", Function: wire.FunctionDef{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}}}
			rep, err := replay.RunHTTP(context.Background(), replay.HTTPConfig{
				BaseURL: srv.URL + "/v1/", Session: "s-" + mode.name, APIKey: "k1", Model: "m1",
				Client: srv.Client(), Stream: mode.stream, Tools: tools,
			}, lines)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rep.Answers, wantAnswers) {
				t.Errorf("answers %q, want %q", rep.Answers, wantAnswers)
			}
			if rep.Steps != 7 || rep.Streamed != mode.streamed {
				t.Errorf("steps %d streamed %d, want 7 and %d", rep.Steps, rep.Streamed, mode.streamed)
			}
			if rep.Usage.PromptTokens == 0 || rep.Usage.CompletionTokens == 0 {
				t.Errorf("usage %+v, want the sums of what the model reported", rep.Usage)
			}
			checkTranscript(t, rep.Transcript)
			checkRequests(t, srv, rep, mode.stream, "s-"+mode.name)
			transcripts = append(transcripts, mustMarshal(t, rep.Transcript))
		})
	}
	// The simulation's ids do not depend on streaming, so neither does the history.
	for i := 1; i < len(transcripts); i++ {
		if transcripts[i] != transcripts[0] {
			t.Errorf("%s transcript differs from %s:\n%s\n%s", modes[i].name, modes[0].name, transcripts[i], transcripts[0])
		}
	}
}

// checkTranscript checks the shape of httpScenario's history.
func checkTranscript(t *testing.T, tr []wire.ChatMessage) {
	t.Helper()
	roles := make([]string, len(tr))
	for i, m := range tr {
		roles[i] = m.Role
	}
	want := "user assistant user assistant tool tool assistant user assistant user assistant user assistant user assistant"
	if got := strings.Join(roles, " "); got != want {
		t.Fatalf("roles %q, want %q", got, want)
	}
	text := func(m wire.ChatMessage) string {
		s, err := m.Text()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := text(tr[1]); got != "hello" {
		t.Errorf("first answer %q, want hello", got)
	}
	calls := tr[3]
	if string(calls.Content) != "null" || len(calls.ToolCalls) != 2 {
		t.Fatalf("call answer %s, want null content and two calls", mustMarshal(t, calls))
	}
	wantArgs := []string{`{"path":"exports/a-very-long-file-name-that-takes-more-than-one-piece.csv"}`, `{"path":"exports/b.csv"}`}
	for i, tc := range calls.ToolCalls {
		if tc.ID == "" || tc.Type != "function" || tc.Function.Name != "read_file" || tc.Function.Arguments != wantArgs[i] || tc.Index != nil {
			t.Errorf("call %d: %s", i, mustMarshal(t, tc))
		}
		if res := tr[4+i]; res.ToolCallID != tc.ID {
			t.Errorf("tool result %d answers %q, want %q", i, res.ToolCallID, tc.ID)
		}
	}
	if calls.ToolCalls[0].ID == calls.ToolCalls[1].ID {
		t.Errorf("parallel calls share the id %q", calls.ToolCalls[0].ID)
	}
	if got := text(tr[4]); got != "size_a := 10\n(rows)" {
		t.Errorf("tool result %q, want the scenario line", got)
	}
	if got := text(tr[6]); got != "ok" {
		t.Errorf("answer to the results %q, want ok", got)
	}
	if got := text(tr[len(tr)-1]); got != "done" {
		t.Errorf("last answer %q, want done", got)
	}
}

// checkRequests checks what the server saw: the headers, the tools, whether each step streamed,
// and that each request carried the whole history up to it.
func checkRequests(t *testing.T, srv *recordingServer, rep *replay.HTTPReport, stream func(int) bool, session string) {
	t.Helper()
	reqs := srv.requests()
	if len(reqs) != rep.Steps {
		t.Fatalf("the server saw %d requests, want %d", len(reqs), rep.Steps)
	}
	var answers []int // indices of the answers in the transcript
	for i, m := range rep.Transcript {
		if m.Role == "assistant" {
			answers = append(answers, i)
		}
	}
	for i, r := range reqs {
		if got := r.header.Get("Hippocam-Session"); got != session {
			t.Errorf("request %d: session %q, want %q", i, got, session)
		}
		if got := r.header.Get("Authorization"); got != "Bearer k1" {
			t.Errorf("request %d: authorization %q", i, got)
		}
		if r.body.Model != "m1" || len(r.body.Tools) != 1 || r.body.Tools[0].Function.Name != "read_file" {
			t.Errorf("request %d: model %q tools %s", i, r.body.Model, mustMarshal(t, r.body.Tools))
		}
		wantStream := stream != nil && stream(i+1)
		if r.body.Stream != wantStream || (r.body.StreamOptions != nil) != wantStream {
			t.Errorf("request %d: stream %v options %v, want %v", i, r.body.Stream, r.body.StreamOptions, wantStream)
		}
		if got, want := mustMarshal(t, r.body.Messages), mustMarshal(t, rep.Transcript[:answers[i]]); got != want {
			t.Errorf("request %d sent\n%s\nwant the history before its answer\n%s", i, got, want)
		}
	}
}

func TestRunHTTP_ErrLines(t *testing.T) {
	srv := newRecordingServer(t)
	cfg := replay.HTTPConfig{BaseURL: srv.URL + "/v1", Client: srv.Client()}
	for _, tc := range []struct {
		name, script, want string
	}{
		{"ErrToolWithoutCall", `{"role":"user","content":"!say hi"}` + "\n\n" + `{"role":"tool","content":"x := 1"}`, "line 3: a tool result"},
		{"ErrUserWhilePending", `{"role":"user","content":"!call a {}\n!call b {}"}` + "\n" + `{"role":"tool","content":"x := 1"}` + "\n" + `{"role":"user","content":"!say hi"}`, "line 3: a user message, but 1 tool call(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := replay.RunHTTP(context.Background(), cfg, mustParse(t, tc.script))
			if hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(hippocam.ErrorMessage(err), tc.want) {
				t.Fatalf("error %v, want EINVALID with %q", err, tc.want)
			}
		})
	}
}

// fakeServer answers every chat completion with handler.
func fakeServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) replay.HTTPConfig {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(handler))
	t.Cleanup(srv.Close)
	return replay.HTTPConfig{BaseURL: srv.URL + "/v1", Client: srv.Client(), Stream: func(int) bool { return true }}
}

func TestRunHTTP_ErrStatus(t *testing.T) {
	cfg := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"no such key","type":"invalid_request_error","param":null,"code":null}}`)
	})
	_, err := replay.RunHTTP(context.Background(), cfg, mustParse(t, "\n"+`{"role":"user","content":"hi"}`))
	var se *replay.HTTPStatusError
	if !errors.As(err, &se) || se.Status != 401 || se.Body.Error.Message != "no such key" {
		t.Fatalf("error %v, want a 401 status error with the server's message", err)
	}
	if hippocam.ErrorCode(err) != hippocam.EUNAUTHORIZED || !strings.Contains(err.Error(), "line 2: ") || !strings.Contains(err.Error(), "401 Unauthorized: no such key") {
		t.Errorf("error %q (code %s)", err, hippocam.ErrorCode(err))
	}
}

func TestRunHTTP_ErrStatusText(t *testing.T) {
	cfg := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream down", http.StatusBadGateway)
	})
	_, err := replay.RunHTTP(context.Background(), cfg, mustParse(t, `{"role":"user","content":"hi"}`))
	if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || !strings.Contains(err.Error(), "502 Bad Gateway: upstream down") {
		t.Fatalf("error %v, want EUNAVAILABLE with the status and the text", err)
	}
}

// sse writes events as server-sent events.
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
	}
}

func TestRunHTTP_Stream(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		// Deltas of two calls interleaved, the second index first, with no space after "data:"
		// in one event and a comment line, as servers may send them.
		cfg := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, ": keep-alive\n\n")
			io.WriteString(w, `data:{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}`+"\n\n")
			sse(w,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c1","type":"function","function":{"name":"b","arguments":""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"a","arguments":"{\"x\":"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":3}}}`,
				`[DONE]`)
		})
		rep, err := replay.RunHTTP(context.Background(), cfg, mustParse(t, `{"role":"user","content":"go"}`))
		if err != nil {
			t.Fatal(err)
		}
		got := mustMarshal(t, rep.Transcript[1])
		want := `{"role":"assistant","content":null,"tool_calls":[{"id":"c0","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}},{"id":"c1","type":"function","function":{"name":"b","arguments":"{}"}}]}`
		if got != want {
			t.Errorf("answer\n%s\nwant\n%s", got, want)
		}
		if rep.Usage.PromptTokens != 5 || rep.Usage.PromptTokensDetails == nil || rep.Usage.PromptTokensDetails.CachedTokens != 3 {
			t.Errorf("usage %s", mustMarshal(t, rep.Usage))
		}
	})
	for _, tc := range []struct {
		name   string
		events []string
		want   string
	}{
		{"ErrNoDone", []string{`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`}, "without data: [DONE]"},
		{"ErrNoFinish", []string{`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`, `[DONE]`}, "without a finish reason"},
		{"ErrEvent", []string{`{"error":{"message":"engine failed","type":"server_error"}}`, `[DONE]`}, "engine failed"},
		{"ErrMalformed", []string{`{"choices":`, `[DONE]`}, "event {\"choices\":"},
		{"ErrNoIndex", []string{`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c","function":{"name":"a","arguments":"{}"}}]}}]}`, `[DONE]`}, "without an index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeServer(t, func(w http.ResponseWriter, r *http.Request) { sse(w, tc.events...) })
			_, err := replay.RunHTTP(context.Background(), cfg, mustParse(t, `{"role":"user","content":"go"}`))
			if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line 1: ") {
				t.Fatalf("error %v, want EUNAVAILABLE naming line 1 and %q", err, tc.want)
			}
		})
	}
}

func TestRunHTTP_ErrCancelled(t *testing.T) {
	srv := newRecordingServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := replay.RunHTTP(ctx, replay.HTTPConfig{BaseURL: srv.URL + "/v1", Client: srv.Client()}, mustParse(t, `{"role":"user","content":"hi"}`))
	if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want EUNAVAILABLE matching context.Canceled", err)
	}
}

func TestRunHTTP_ErrConfig(t *testing.T) {
	for _, base := range []string{"", "127.0.0.1:8080/v1", "ftp://host/v1"} {
		_, err := replay.RunHTTP(context.Background(), replay.HTTPConfig{BaseURL: base}, nil)
		if hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("base URL %q: error %v, want EINVALID", base, err)
		}
	}
}
