package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
)

// scripted is an upstream whose main-model calls get the next scripted body (JSON, or a stream
// when the request asks for one and the script gives an event stream) and are recorded; the
// calls of Hippocam's components go to the simulated model.
type scripted struct {
	*httptest.Server
	mu      sync.Mutex
	replies []string
	bodies  [][]byte
}

func newScripted(t *testing.T, replies ...string) *scripted {
	u := &scripted{replies: replies}
	h := sim.New(tokenizer.MustDefault()).Handler()
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if role := r.Header.Get(hippocam.RoleHeader); r.Method != http.MethodPost || (role != "" && role != "agent") {
			h.ServeHTTP(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		n := len(u.bodies)
		u.bodies = append(u.bodies, b)
		u.mu.Unlock()
		if n >= len(u.replies) {
			http.Error(w, `{"error":{"message":"no more replies"}}`, http.StatusTeapot)
			return
		}
		if strings.HasPrefix(u.replies[n], "event:") || strings.HasPrefix(u.replies[n], "data:") {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		io.WriteString(w, u.replies[n])
	}))
	t.Cleanup(u.Close)
	return u
}

// body returns the n-th main-model request the upstream got, decoded.
func (u *scripted) body(t *testing.T, n int) map[string]json.RawMessage {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if n >= len(u.bodies) {
		t.Fatalf("the upstream got %d main-model requests, not %d", len(u.bodies), n+1)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(u.bodies[n], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// newFormatServer serves the proxy in front of up, which speaks format.
func newFormatServer(t *testing.T, up *scripted, format hippocam.Format) *testServer {
	t.Helper()
	var model hippocam.Model
	var lister httpapi.Upstream
	if format == hippocam.FormatAnthropic {
		m, err := anthropic.New(anthropic.Config{BaseURL: up.URL, APIKey: "k", Model: "claude-test", MaxRetries: 0,
			Timeout: 10 * time.Second, MaxTokens: 1000})
		if err != nil {
			t.Fatal(err)
		}
		model = m
	} else {
		cfg := openai.DefaultConfig()
		cfg.BaseURL, cfg.Model, cfg.MaxRetries = up.URL+"/v1", "hippocam-sim", 0
		m, err := openai.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		model, lister = m, m
	}
	e, err := engine.New(engine.ForWindow(60000), model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sqlite.New(t.TempDir() + "/h.db")
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: db, Upstream: lister, UpstreamFormat: format})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &testServer{Server: ts, store: db}
}

// toolNames lists the names of a chat or Messages request's tools ("type:NAME" for a tool
// that is not a function or a plain Anthropic tool).
func toolNames(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var tools []struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range tools {
		switch {
		case tl.Type == "function":
			out = append(out, tl.Function.Name)
		case tl.Type == "" || tl.Type == "custom":
			out = append(out, tl.Name)
		default:
			out = append(out, tl.Type+":"+tl.Name)
		}
	}
	return out
}

// codexCalls is a chat answer calling a tool of Codex's namespace and its custom apply_patch
// tool, under the names the chat upstream was given.
const codexCalls = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
	`{"id":"call_1","type":"function","function":{"name":"mcp__docs__search","arguments":"{\"query\":\"go\"}"}},` +
	`{"id":"call_2","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n*** End Patch\\n\"}"}}]},"finish_reason":"tool_calls"}],` +
	`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`

// codexCallsStream is codexCalls, streamed.
const codexCallsStream = `data: {"id":"c3","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[` +
	`{"index":0,"id":"call_1","type":"function","function":{"name":"mcp__docs__search","arguments":"{\"query\":\"go\"}"}},` +
	`{"index":1,"id":"call_2","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n*** End Patch\\n\"}"}}]},"finish_reason":null}]}` + "\n\n" +
	`data: {"id":"c3","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
	`data: {"id":"c3","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}` + "\n\n" +
	"data: [DONE]\n\n"

// TestCodexToolsToChatUpstream sends Codex's first request (functions, a custom apply_patch, a
// namespace of MCP tools, web_search) through a chat-completions upstream: it is answered;
// the upstream gets the namespace's functions under flat names, apply_patch as a function and
// no web_search, which the response header names; the calls come back as Codex declared the
// tools, whole and streamed; and the next request, carrying those calls and a web_search_call
// in its history, continues the session.
func TestCodexToolsToChatUpstream(t *testing.T) {
	first, err := os.ReadFile("testdata/codex_first.json")
	if err != nil {
		t.Fatal(err)
	}
	done := `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Patched."},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`
	up := newScripted(t, codexCalls, done, codexCallsStream)
	s := newFormatServer(t, up, hippocam.FormatChat)

	rep := s.do(t, "POST", "/v1/responses", "", "codex", first)
	if rep.status != http.StatusOK {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	if got := rep.header.Get(httpapi.OmittedToolsHeader); got != "web_search" {
		t.Errorf("%s = %q, want web_search", httpapi.OmittedToolsHeader, got)
	}
	sent := up.body(t, 0)
	names := strings.Join(toolNames(t, sent["tools"]), ",")
	if want := "shell_command,update_plan,apply_patch,view_image,mcp__docs__search,mcp__docs__fetch,recall,search"; names != want {
		t.Errorf("upstream tools %s, want %s", names, want)
	}
	if strings.Contains(string(sent["tools"]), "web_search") || strings.Contains(string(sent["tools"]), `"namespace"`) {
		t.Errorf("upstream tools hold what a chat upstream refuses: %s", sent["tools"])
	}
	var resp wire.Response
	rep.json(t, &resp)
	if len(resp.Output) != 2 {
		t.Fatalf("output %s", rep.body)
	}
	call, patch := resp.Output[0], resp.Output[1]
	if call.Type != "function_call" || call.Name != "search" || call.Namespace != "mcp__docs__" || call.Arguments != `{"query":"go"}` {
		t.Errorf("namespaced call came back as %+v", call)
	}
	if patch.Type != "custom_tool_call" || patch.Name != "apply_patch" || patch.Input != "*** Begin Patch\n*** End Patch\n" {
		t.Errorf("custom call came back as %+v", patch)
	}
	if !bytes.Contains(rep.body, []byte(`{"type":"web_search","external_web_access":false}`)) {
		t.Errorf("the response does not echo the web_search tool as sent: %s", rep.body)
	}

	// The next request: Codex's history with the calls, their outputs and a web search.
	var req map[string]json.RawMessage
	json.Unmarshal(first, &req)
	var input []json.RawMessage
	json.Unmarshal(req["input"], &input)
	input = append(input,
		json.RawMessage(`{"type":"function_call","name":"search","namespace":"mcp__docs__","arguments":"{\"query\":\"go\"}","call_id":"call_1"}`),
		json.RawMessage(`{"type":"custom_tool_call","status":"completed","call_id":"call_2","name":"apply_patch","input":"*** Begin Patch\n*** End Patch\n"}`),
		json.RawMessage(`{"type":"function_call_output","call_id":"call_1","output":"go.dev"}`),
		json.RawMessage(`{"type":"custom_tool_call_output","call_id":"call_2","output":"Success."}`),
		json.RawMessage(`{"type":"web_search_call","status":"completed","action":{"type":"search","query":"go"}}`),
		json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"thanks"}]}`))
	req["input"], _ = json.Marshal(input)
	second, _ := json.Marshal(req)
	rep = s.do(t, "POST", "/v1/responses", "", "codex", second)
	if rep.status != http.StatusOK {
		t.Fatalf("second request: status %d: %s", rep.status, rep.body)
	}
	if ev := rep.header.Get(httpapi.EventHeader); ev != "continued" {
		t.Errorf("second request: event %q, want continued", ev)
	}
	if got := rep.header.Get(httpapi.OmittedItemsHeader); got != "web_search_call" {
		t.Errorf("%s = %q, want web_search_call", httpapi.OmittedItemsHeader, got)
	}
	msgs := string(up.body(t, 1)["messages"])
	for _, want := range []string{
		`{"id":"call_1","type":"function","function":{"name":"mcp__docs__search","arguments":"{\"query\":\"go\"}"}}`,
		`{"id":"call_2","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n*** End Patch\\n\"}"}}`,
		`{"role":"tool","content":"Success.","tool_call_id":"call_2"}`,
	} {
		if !strings.Contains(msgs, want) {
			t.Errorf("upstream history lacks %s:\n%s", want, msgs)
		}
	}
	if strings.Contains(msgs, "web_search_call") {
		t.Errorf("a web_search_call reached the chat upstream:\n%s", msgs)
	}

	// Streamed, the calls come as their own item types with their events.
	req["stream"] = json.RawMessage("true")
	req["input"], _ = json.Marshal(input[:3])
	streamed, _ := json.Marshal(req)
	rep = s.do(t, "POST", "/v1/responses", "", "codex-stream", streamed)
	if rep.status != http.StatusOK {
		t.Fatalf("streamed: status %d: %s", rep.status, rep.body)
	}
	events, err := wire.ReadResponseEvents(bytes.NewReader(rep.body))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, ev := range events {
		if ev.Type == "response.output_item.done" {
			seen = append(seen, ev.Item.Type+":"+ev.Item.Namespace+":"+ev.Item.Name)
		}
		if ev.Type == "response.custom_tool_call_input.done" {
			seen = append(seen, "input:"+*ev.Input)
		}
	}
	if got := strings.Join(seen, " "); got != "function_call:mcp__docs__:search input:*** Begin Patch\n*** End Patch\n custom_tool_call::apply_patch" {
		t.Errorf("streamed items %q", got)
	}
}

// webSearchRequest is Claude Code asking with its WebSearch tool, a server tool.
const webSearchRequest = `{"model":"claude-sonnet-4-5","max_tokens":1024,"tools":[{"name":"Read","description":"Read a file","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}},` +
	`{"type":"web_search_20250305","name":"web_search","max_uses":8}],"tool_choice":{"type":"tool","name":"web_search"},` +
	`"messages":[{"role":"user","content":"What is the weather in Paris?"}]}`

// TestServerToolToAnthropicUpstream passes Claude Code's web_search_20250305 byte for byte to a
// Messages upstream, and gives the client the server tool's blocks of the answer.
func TestServerToolToAnthropicUpstream(t *testing.T) {
	answer := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[` +
		`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"weather Paris"}},` +
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://weather.example/paris","title":"Paris","encrypted_content":"abc","page_age":null}]},` +
		`{"type":"text","text":"It is "},{"type":"text","text":"sunny.","citations":[{"type":"web_search_result_location","url":"https://weather.example/paris","title":"Paris","encrypted_index":"x","cited_text":"sun"}]}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":5,"server_tool_use":{"web_search_requests":1}}}`
	up := newScripted(t, answer, okMessage)
	s := newFormatServer(t, up, hippocam.FormatAnthropic)
	rep := s.do(t, "POST", "/v1/messages", "", "claude", []byte(webSearchRequest))
	if rep.status != http.StatusOK {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	if got := rep.header.Get(httpapi.OmittedToolsHeader); got != "" {
		t.Errorf("%s = %q, want nothing left out", httpapi.OmittedToolsHeader, got)
	}
	sent := up.body(t, 0)
	if !strings.Contains(string(sent["tools"]), `{"type":"web_search_20250305","name":"web_search","max_uses":8}`) {
		t.Errorf("the server tool did not reach the upstream as sent: %s", sent["tools"])
	}
	if string(sent["tool_choice"]) != `{"type":"tool","name":"web_search"}` {
		t.Errorf("tool_choice %s", sent["tool_choice"])
	}
	for _, want := range []string{`"type":"server_tool_use"`, `"type":"web_search_tool_result"`, `It is `, `sunny.`} {
		if !bytes.Contains(rep.body, []byte(want)) {
			t.Errorf("answer lacks %s: %s", want, rep.body)
		}
	}

	// The next request resends the answer as Claude Code keeps it: the session continues, and
	// the server tool's blocks go back upstream in their order.
	var got struct {
		Content json.RawMessage `json:"content"`
	}
	rep.json(t, &got)
	var req map[string]json.RawMessage
	json.Unmarshal([]byte(webSearchRequest), &req)
	var msgs []json.RawMessage
	json.Unmarshal(req["messages"], &msgs)
	msgs = append(msgs, json.RawMessage(`{"role":"assistant","content":`+string(got.Content)+`}`), json.RawMessage(`{"role":"user","content":"thanks"}`))
	req["messages"], _ = json.Marshal(msgs)
	next, _ := json.Marshal(req)
	rep = s.do(t, "POST", "/v1/messages", "", "claude", next)
	if rep.status != http.StatusOK {
		t.Fatalf("next request: status %d: %s", rep.status, rep.body)
	}
	if ev := rep.header.Get(httpapi.EventHeader); ev != "continued" {
		t.Errorf("next request: event %q, want continued", ev)
	}
	history := string(up.body(t, 1)["messages"])
	if i, j := strings.Index(history, `"web_search_tool_result"`), strings.Index(history, `"cited_text":"sun"`); i < 0 || j < i {
		t.Errorf("the server tool's turn went upstream out of order:\n%s", history)
	}
}

// okMessage is a plain Messages answer.
const okMessage = `{"id":"msg_2","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"You are welcome."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":4}}`

// TestServerToolToChatUpstream leaves the server tool out of a chat-completions upstream's
// request, names it in the header, and turns the choice of it into "auto".
func TestServerToolToChatUpstream(t *testing.T) {
	answer := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"I cannot search."},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}`
	up := newScripted(t, answer)
	s := newFormatServer(t, up, hippocam.FormatChat)
	rep := s.do(t, "POST", "/v1/messages", "", "claude", []byte(webSearchRequest))
	if rep.status != http.StatusOK {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	if got := rep.header.Get(httpapi.OmittedToolsHeader); got != "web_search" {
		t.Errorf("%s = %q, want web_search", httpapi.OmittedToolsHeader, got)
	}
	sent := up.body(t, 0)
	if names := strings.Join(toolNames(t, sent["tools"]), ","); names != "Read,recall,search" {
		t.Errorf("upstream tools %s", names)
	}
	if string(sent["tool_choice"]) != `"auto"` {
		t.Errorf("tool_choice %s, want \"auto\"", sent["tool_choice"])
	}
	if !bytes.Contains(rep.body, []byte("I cannot search.")) {
		t.Errorf("answer %s", rep.body)
	}
}

// TestNamespacedCallThroughSim has the simulated model (a chat upstream) call a tool of a
// Responses namespace by its flat name: the client gets the call under the tool's own name
// with its namespace.
func TestNamespacedCallThroughSim(t *testing.T) {
	s := newServer(t, 60000, nil)
	body := `{"model":"m","input":"!call mcp__docs__search {\"query\":\"x\"}","tools":[{"type":"namespace","name":"mcp__docs__","description":"Docs.",` +
		`"tools":[{"type":"function","name":"search","parameters":{"type":"object","properties":{"query":{"type":"string"}}}}]},{"type":"web_search"}]}`
	rep := s.do(t, "POST", "/v1/responses", "", "sim-ns", []byte(body))
	if rep.status != http.StatusOK {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	var resp wire.Response
	rep.json(t, &resp)
	last := resp.Output[len(resp.Output)-1]
	if last.Type != "function_call" || last.Name != "search" || last.Namespace != "mcp__docs__" || last.Arguments != `{"query":"x"}` {
		t.Errorf("the call came back as %+v", last)
	}
}

// TestChatCustomToolThroughChatUpstream offers a chat client's custom tool to a chat upstream as
// a function and gives the call back to the client as a custom call, whole and streamed.
func TestChatCustomToolThroughChatUpstream(t *testing.T) {
	call := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"call_1","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\"}"}}]},"finish_reason":"tool_calls"}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	up := newScripted(t, call)
	s := newFormatServer(t, up, hippocam.FormatChat)
	body := `{"model":"m","messages":[{"role":"user","content":"patch it"}],"tools":[{"type":"custom","custom":{"name":"apply_patch","description":"Edit files."}}]}`
	rep := s.do(t, "POST", "/v1/chat/completions", "", "chat-custom", []byte(body))
	if rep.status != http.StatusOK {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	if want := `{"id":"call_1","type":"custom","custom":{"name":"apply_patch","input":"*** Begin Patch"}}`; !bytes.Contains(rep.body, []byte(want)) {
		t.Errorf("answer lacks %s: %s", want, rep.body)
	}
	if tools := string(up.body(t, 0)["tools"]); !strings.Contains(tools, `{"type":"function","function":{"name":"apply_patch","description":"Edit files.`) {
		t.Errorf("upstream tools %s", tools)
	}
}
