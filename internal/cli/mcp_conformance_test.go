package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam/sim"
)

// conformanceExpected are the conformance suite's server scenarios Hippocam fails on purpose,
// each with a piece of the failure it must give (so that a failure for another reason still
// fails the test) and why. Most of the suite's scenarios call tools, prompts and resources by
// the names of the suite's own reference server ("test_simple_text", "test://static-text"…):
// Hippocam has its own tools and resources, and no prompts. docs/mcp.md lists them.
var conformanceExpected = map[string]struct{ failure, why string }{
	// Completion itself is offered (TestCompleteSessionIDs); the scenario asks for the
	// arguments of a prompt of the reference server, and a prompt Hippocam does not have is
	// invalid params, as the protocol asks.
	"completion-complete": {`unknown prompt "test_prompt_with_arguments"`, "no prompts"},

	"tools-call-simple-text":       {`unknown tool "test_simple_text"`, "the reference server's tool"},
	"tools-call-image":             {`unknown tool "test_image_content"`, "the reference server's tool"},
	"tools-call-audio":             {`unknown tool "test_audio_content"`, "the reference server's tool"},
	"tools-call-embedded-resource": {`unknown tool "test_embedded_resource"`, "the reference server's tool"},
	"tools-call-mixed-content":     {`unknown tool "test_multiple_content_types"`, "the reference server's tool"},
	"tools-call-with-logging":      {`unknown tool "test_tool_with_logging"`, "the reference server's tool; Hippocam sends no log messages"},
	"tools-call-error":             {`unknown tool "test_error_handling"`, "the reference server's tool"},
	"tools-call-with-progress":     {`unknown tool "test_tool_with_progress"`, "the reference server's tool"},
	"tools-call-sampling":          {`unknown tool "test_sampling"`, "the reference server's tool; Hippocam asks its clients for no sampling"},
	"tools-call-elicitation":       {`unknown tool "test_elicitation"`, "the reference server's tool; Hippocam elicits nothing"},
	"elicitation-sep1034-defaults": {`unknown tool "test_elicitation_sep1034_defaults"`, "the reference server's tool; Hippocam elicits nothing"},
	"elicitation-sep1330-enums":    {`unknown tool "test_elicitation_sep1330_enums"`, "the reference server's tool; Hippocam elicits nothing"},

	"resources-read-text":      {"Resource not found", "the reference server's resource test://static-text"},
	"resources-read-binary":    {"Resource not found", "the reference server's resource test://static-binary"},
	"resources-templates-read": {"Resource not found", "the reference server's template test://template/{id}/data"},

	"prompts-get-simple":            {`unknown prompt "test_simple_prompt"`, "no prompts"},
	"prompts-get-with-args":         {`unknown prompt "test_prompt_with_arguments"`, "no prompts"},
	"prompts-get-embedded-resource": {`unknown prompt "test_prompt_with_embedded_resource"`, "no prompts"},
	"prompts-get-with-image":        {`unknown prompt "test_prompt_with_image"`, "no prompts"},

	// A warning: /mcp is stateless (each request served as the tenant its key names), so it
	// gives no Mcp-Session-Id.
	"server-sse-multiple-streams": {"", "stateless: no session id"},
}

// conformanceMust are scenarios that must pass: what the suite once found missing among them.
var conformanceMust = []string{"server-initialize", "ping", "tools-list", "resources-list", "resources-subscribe",
	"resources-unsubscribe", "prompts-list", "dns-rebinding-protection"}

// The official MCP conformance suite (@modelcontextprotocol/conformance, at the version
// mcp/testdata/conformance/package-lock.json locks) runs every server scenario against serve's
// /mcp over Streamable HTTP, after a proxied task; the suite has no stdio mode for servers. Any
// failed or warned check fails the test, but for the scenarios of conformanceExpected, which
// must fail in the way they name. Without node or the suite it is skipped, unless CI is set.
func TestMCPConformance(t *testing.T) {
	node, suite := conformanceSuite(t)
	dir := t.TempDir()
	simAddr, addr := freeAddr(t), freeAddr(t)
	upstream := "http://" + simAddr + "/v1"
	startSim(t, simAddr, sim.Latency{})
	start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", filepath.Join(dir, "h.db"), "--upstream", upstream,
		"--model", "hippocam-sim")
	api := &restClient{t: t, base: "http://" + addr}
	if _, err := api.chat("", "visit", []map[string]string{{"role": "user", "content": "!say hello"}}); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "results")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "server", "--url", api.base+"/mcp", "-o", out)
	log, err := cmd.CombinedOutput()
	t.Logf("conformance suite (%v):\n%s", err, tail(string(log), 40))

	results, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if len(results) == 0 {
		t.Fatalf("the conformance suite wrote no results (%v)", err)
	}
	scenarioOf := regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT`)
	ran := map[string]bool{}
	for _, path := range results {
		m := scenarioOf.FindStringSubmatch(filepath.Base(filepath.Dir(path)))
		if m == nil {
			t.Fatalf("a result directory the test cannot read: %s", path)
		}
		scenario := m[1]
		ran[scenario] = true
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct{ ID, Status, ErrorMessage string }
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, c := range checks {
			if c.Status != "FAILURE" && c.Status != "WARNING" {
				continue
			}
			exp, ok := conformanceExpected[scenario]
			switch {
			case !ok:
				t.Errorf("%s: check %s: %s %s", scenario, c.ID, c.Status, c.ErrorMessage)
			case !strings.Contains(c.ErrorMessage, exp.failure):
				t.Errorf("%s: check %s: %s %q, expected to fail with %q (%s)", scenario, c.ID, c.Status, c.ErrorMessage, exp.failure, exp.why)
			default:
				t.Logf("%s: expected %s (%s)", scenario, strings.ToLower(c.Status), exp.why)
			}
		}
	}
	for _, s := range conformanceMust {
		if !ran[s] {
			t.Errorf("the suite ran no scenario %s", s)
		}
	}
	for s := range conformanceExpected {
		if !ran[s] {
			t.Errorf("the suite ran no scenario %s, which the test expects to fail: is the allow-list stale?", s)
		}
	}
	if t.Failed() {
		names := slices.Sorted(func(yield func(string) bool) {
			for s := range ran {
				if !yield(s) {
					return
				}
			}
		})
		t.Logf("scenarios run: %s", strings.Join(names, " "))
	}
}

// conformanceSuite returns node and the suite's entry point, installed by `npm ci` in
// mcp/testdata/conformance. Without them the test is skipped, or fails when CI is set.
func conformanceSuite(t *testing.T) (node, suite string) {
	t.Helper()
	dir, _ := filepath.Abs("../../mcp/testdata/conformance")
	suite = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(suite)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the MCP conformance suite needs node and `npm ci` in %s: %v", dir, err)
		}
		t.Skipf("MCP conformance suite skipped (%v); run `npm ci` in %s", err, dir)
	}
	return node, suite
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
