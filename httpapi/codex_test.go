package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/openai/wire"
)

// codexScript is the JavaScript Codex's exec tool runs in the tests: one nested shell command,
// then the text the tool gives back.
const codexScript = "await tools.exec_command({cmd: \"echo hi > made.txt\"});\ntext(\"done\");"

// codexExecCall is a chat answer calling Codex's exec tool under the name a chat upstream knows
// it by, its JavaScript in the one string parameter of a custom tool.
var codexExecCall = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
	`{"id":"call_1","type":"function","function":{"name":"functions__exec","arguments":` + quote(`{"input":`+quote(codexScript)+`}`) + `}}]},"finish_reason":"tool_calls"}],` +
	`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`

// codexExecToolUse is the same call from a Messages upstream.
var codexExecToolUse = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[` +
	`{"type":"tool_use","id":"call_1","name":"functions__exec","input":{"input":` + quote(codexScript) + `}}],` +
	`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`

// TestCodexCodeMode sends the request of Codex with its default model (code mode: no "tools",
// its tools in an additional_tools input item, shell commands run from JavaScript in the custom
// tool exec of the namespace functions) through both upstream formats. The upstream is offered
// the item's tools, flattened, and gets neither the item as a message nor a Responses-only
// setting; the call comes back to Codex as a custom_tool_call of exec in functions; Codex's
// next request, with the call and its custom_tool_call_output, continues the session; and the
// item stays in the session byte for byte, as framing.
func TestCodexCodeMode(t *testing.T) {
	first, err := os.ReadFile("testdata/codex_code_mode.json")
	if err != nil {
		t.Fatal(err)
	}
	first = bytes.TrimSpace(first)
	var req map[string]json.RawMessage
	if err := json.Unmarshal(first, &req); err != nil {
		t.Fatal(err)
	}
	req["stream"] = json.RawMessage("false")
	oneShot, _ := json.Marshal(req)
	json.Unmarshal(oneShot, &req) // as sent (json.Marshal escapes some characters)
	var input []json.RawMessage
	json.Unmarshal(req["input"], &input)
	item := input[0]

	for _, tc := range []struct {
		format     hippocam.Format
		call, done string
		tools      string   // the upstream's tools, as toolNames lists them
		keys       []string // the upstream body's members
	}{
		{hippocam.FormatChat, codexExecCall, `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Made."},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`,
			"functions__exec,functions__wait,clock__sleep,collaboration__list_agents,recall,search",
			[]string{"messages", "model", "parallel_tool_calls", "prompt_cache_key", "reasoning_effort", "tool_choice", "tools", "verbosity"}},
		{hippocam.FormatAnthropic, codexExecToolUse, okMessage,
			"functions__exec,functions__wait,clock__sleep,collaboration__list_agents,recall,search",
			[]string{"max_tokens", "messages", "model", "system", "tool_choice", "tools"}},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			up := newScripted(t, tc.call, tc.done)
			s := newFormatServer(t, up, tc.format)
			rep := s.do(t, "POST", "/v1/responses", "", "codex", oneShot,
				"X-Openai-Internal-Codex-Responses-Lite", "true", "Session-Id", "thread-1")
			if rep.status != http.StatusOK {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			for _, h := range []string{httpapi.OmittedItemsHeader, httpapi.OmittedToolsHeader} {
				if got := rep.header.Get(h); got != "" {
					t.Errorf("%s = %q, want nothing left out", h, got)
				}
			}
			sent := up.body(t, 0)
			if got := strings.Join(toolNames(t, sent["tools"]), ","); got != tc.tools {
				t.Errorf("upstream tools %s, want %s", got, tc.tools)
			}
			var keys []string
			for k := range sent {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tc.keys) {
				t.Errorf("upstream body members %v, want %v", keys, tc.keys)
			}
			body := string(up.bodies[0])
			for _, leak := range []string{"additional_tools", "at_01a24571", "client_metadata", "all_turns", "encrypted_content", `"namespace"`} {
				if strings.Contains(body, leak) {
					t.Errorf("the upstream request holds %q:\n%.2000s", leak, body)
				}
			}
			for _, empty := range []string{`"content":""`, `"content":null`, `"content":[]`} {
				if strings.Contains(string(sent["messages"]), empty) {
					t.Errorf("the upstream got a message with %s: the item went as an empty message", empty)
				}
			}
			if !strings.Contains(body, "You are Codex, an agent based on GPT-6.") {
				t.Errorf("the developer messages after the item did not reach the upstream:\n%.2000s", body)
			}

			var resp wire.Response
			rep.json(t, &resp)
			if len(resp.Output) != 1 {
				t.Fatalf("output %s", rep.body)
			}
			call := resp.Output[0]
			if call.Type != "custom_tool_call" || call.Name != "exec" || call.Namespace != "functions" || call.Input != codexScript || call.CallID != "call_1" {
				t.Errorf("the call came back as %+v, want a custom_tool_call of exec in functions", call)
			}

			// Codex runs the script and sends the call back with its output.
			next := append(slices.Clone(input),
				json.RawMessage(`{"type":"custom_tool_call","status":"completed","call_id":"call_1","namespace":"functions","name":"exec","input":`+quote(codexScript)+`}`),
				json.RawMessage(`{"type":"custom_tool_call_output","call_id":"call_1","output":[{"type":"input_text","text":"Script completed\nOutput:\n\ndone"}]}`))
			req2 := map[string]json.RawMessage{}
			for k, v := range req {
				req2[k] = v
			}
			req2["input"], _ = json.Marshal(next)
			second, _ := json.Marshal(req2)
			rep = s.do(t, "POST", "/v1/responses", "", "codex", second, "Session-Id", "thread-1")
			if rep.status != http.StatusOK {
				t.Fatalf("second request: status %d: %s", rep.status, rep.body)
			}
			if ev := rep.header.Get(httpapi.EventHeader); ev != "continued" {
				t.Errorf("second request: event %q, want continued", ev)
			}
			history := string(up.bodies[1])
			for _, want := range []string{"functions__exec", `Script completed\nOutput:\n\ndone`} {
				if !strings.Contains(history, want) {
					t.Errorf("the upstream history lacks %s:\n%.3000s", want, history)
				}
			}
			if strings.Contains(history, "additional_tools") {
				t.Errorf("the item reached the upstream with the history")
			}

			var exp struct {
				Messages []struct {
					Role    string           `json:"role"`
					Framing int              `json:"framing"`
					Origin  *hippocam.Origin `json:"origin"`
				} `json:"messages"`
			}
			s.do(t, "GET", "/api/sessions/codex/expand", "", "", nil).json(t, &exp)
			if len(exp.Messages) == 0 || exp.Messages[0].Origin == nil || exp.Messages[0].Origin.Raw != string(item) || exp.Messages[0].Framing != 1 {
				t.Fatalf("the expansion does not start with the item, byte for byte, as framing: %+v", exp.Messages)
			}
			var roles []string
			for _, m := range exp.Messages {
				roles = append(roles, m.Role)
			}
			if got := strings.Join(roles, " "); got != "system system system system system user user assistant tool assistant" {
				t.Errorf("the session holds %s", got)
			}
		})
	}
}

// TestCodexCompactionHandoff: after Codex compacts a conversation itself, its next request is a
// new history (the earlier prompts without their answers, then the summary under "Another
// language model started to solve this problem…"). It becomes a session of its own, in the
// conversation's group, since it names the same session-id.
func TestCodexCompactionHandoff(t *testing.T) {
	first, err := os.ReadFile("testdata/codex_code_mode.json")
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]json.RawMessage
	json.Unmarshal(bytes.TrimSpace(first), &req)
	req["stream"] = json.RawMessage("false")
	answer := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello from sim"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`
	up := newScripted(t, answer, answer)
	s := newFormatServer(t, up, hippocam.FormatChat)
	send := func(body []byte) string {
		t.Helper()
		rep := s.do(t, "POST", "/v1/responses", "", "", body, "Session-Id", "thread-1")
		if rep.status != http.StatusOK {
			t.Fatalf("status %d: %s", rep.status, rep.body)
		}
		if ev := rep.header.Get(httpapi.EventHeader); ev != "created" {
			t.Errorf("event %q, want created", ev)
		}
		return rep.header.Get(httpapi.SessionHeader)
	}
	before, _ := json.Marshal(req)
	a := send(before)

	var input []json.RawMessage
	json.Unmarshal(req["input"], &input)
	handoff := append(slices.Clone(input[:6]),
		json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"!say hello from sim"}]}`),
		json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"Another language model started to solve this problem and produced a summary of its thinking process.\n\nThe user asked for a greeting; it was given."}]}`),
		json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"!say next"}]}`))
	req["input"], _ = json.Marshal(handoff)
	after, _ := json.Marshal(req)
	b := send(after)
	if a == b {
		t.Fatalf("the handoff continued session %s", a)
	}
	var list struct {
		Sessions []struct {
			ID    string `json:"id"`
			Group string `json:"group"`
		} `json:"sessions"`
	}
	s.do(t, "GET", "/api/sessions?group=thread-1", "", "", nil).json(t, &list)
	var ids []string
	for _, in := range list.Sessions {
		ids = append(ids, in.ID)
	}
	slices.Sort(ids)
	want := []string{a, b}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("group thread-1 holds %v, want %v", ids, want)
	}
}
