package cli

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/sim"
)

// TestServeToolsOfEveryKind runs the real binary's serve in front of the real binary's sim, once
// per upstream format, with Claude Code's web search and Codex's namespace and web_search: no
// request fails, a server tool reaches the Messages upstream and is named as left out of the
// chat one, a namespaced call comes back with its namespace.
func TestServeToolsOfEveryKind(t *testing.T) {
	simAddr := freeAddr(t)
	startSim(t, simAddr, sim.Latency{})
	claude := `{"model":"m","max_tokens":200,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":2},{"name":"Read","input_schema":{"type":"object"}}],` +
		`"messages":[{"role":"user","content":"!say looked it up"}]}`
	codex := `{"model":"m","input":"!call mcp__docs__search {\"query\":\"x\"}","tools":[{"type":"namespace","name":"mcp__docs__","description":"Docs.",` +
		`"tools":[{"type":"function","name":"search","parameters":{"type":"object"}}]},{"type":"web_search"},{"type":"custom","name":"apply_patch"}]}`
	for _, tc := range []struct {
		format, upstream        string
		claudeOmits, codexOmits string
	}{
		{"openai", "http://" + simAddr + "/v1", "web_search", "web_search"},
		{"anthropic", "http://" + simAddr, "", "web_search"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			addr := freeAddr(t)
			start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "s.db"),
				"--upstream", tc.upstream, "--upstream-format", tc.format, "--context-window", "8000", "--model", "hippocam-sim")
			for _, r := range []struct{ path, body, omits, want string }{
				{"/v1/messages", claude, tc.claudeOmits, "looked it up"},
				{"/v1/responses", codex, tc.codexOmits, `"name":"search","namespace":"mcp__docs__"`},
			} {
				resp, err := http.Post("http://"+addr+r.path, "application/json", strings.NewReader(r.body))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: status %d: %s", r.path, resp.StatusCode, b)
				}
				if got := resp.Header.Get("Hippocam-Omitted-Tools"); got != r.omits {
					t.Errorf("%s: Hippocam-Omitted-Tools %q, want %q", r.path, got, r.omits)
				}
				if !strings.Contains(string(b), r.want) {
					t.Errorf("%s: answer lacks %s: %s", r.path, r.want, b)
				}
			}
		})
	}
}
