package sim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// TestToolsOfEveryKind posts requests carrying tools of every kind, in each format, to the
// simulated model: none is refused, and a call it makes of a namespaced or custom tool comes
// back in the form the tool was declared in.
func TestToolsOfEveryKind(t *testing.T) {
	srv := httptest.NewServer(sim.New(tokenizer.MustDefault()).Handler())
	defer srv.Close()
	for _, tc := range []struct{ name, path, body, want string }{
		{"ResponsesNamespace", "/v1/responses",
			`{"model":"m","input":"!call mcp__docs__search {\"query\":\"go\"}","tools":[{"type":"namespace","name":"mcp__docs__","description":"Docs.","tools":[{"type":"function","name":"search","parameters":{"type":"object"}}]},{"type":"web_search"}]}`,
			`"name":"search","namespace":"mcp__docs__"`},
		{"ResponsesCustom", "/v1/responses",
			`{"model":"m","input":"!call apply_patch {\"input\":\"*** Begin Patch\"}","tools":[{"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},{"type":"mcp","server_label":"x","server_url":"https://x"}]}`,
			`"type":"custom_tool_call","status":"completed","call_id":`},
		{"ChatCustom", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"!call apply_patch {\"input\":\"x\"}"}],"tools":[{"type":"custom","custom":{"name":"apply_patch"}}]}`,
			`"type":"custom","custom":{"name":"apply_patch","input":"x"}`},
		{"AnthropicServerTool", "/v1/messages",
			`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"!say hello"}],"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":3},{"type":"bash_20250124","name":"bash"}],"tool_choice":{"type":"auto"}}`,
			`hello`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			buf.ReadFrom(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, buf.String())
			}
			if !json.Valid(buf.Bytes()) || !strings.Contains(buf.String(), tc.want) {
				t.Errorf("answer lacks %s:\n%s", tc.want, buf.String())
			}
		})
	}
}
