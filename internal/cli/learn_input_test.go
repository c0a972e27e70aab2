package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/sim"
)

// Learning under bad input, through serve as a user runs it: a file that is not a lessons file,
// random bytes or an HTML error page is a 400 that leaves the lessons as they were; a dry run
// of the export reports no change and writes nothing; an outcome with an absurd number of
// attempts is a 400 naming the bound, and the task can still end properly.
func TestServeLearningUnderBadInput(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte("acme k-acme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	simAddr, addr := freeAddr(t), freeAddr(t)
	startSim(t, simAddr, sim.Latency{})
	start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", filepath.Join(dir, "h.db"),
		"--upstream", "http://"+simAddr+"/v1", "--context-window", "8000", "--model", "hippocam-sim",
		"--learn", "routed", "--keys", keys, "--janus", "gate")
	api := &restClient{t: t, base: "http://" + addr}

	const task = "#route lessons | shop visits\nVisit the shop\ntags: shop weekly\ndecide greeting: formal | casual | brief"
	choice := api.shopTask("k-acme", "visit-a", task, "QX-A17")
	if got := api.status("k-acme", "POST", "/api/sessions/visit-a/outcome?wait=1", `{"feedback": "feedback: greeting = `+choice+` wrong"}`); !strings.HasPrefix(got, "200 ") {
		t.Fatalf("the outcome: %s", got)
	}
	api.waitJobs("k-acme")
	export := api.get("k-acme", "/api/lessons/export")
	if !strings.Contains(export, "greeting") {
		t.Fatalf("no lesson learned:\n%s", export)
	}

	random := make([]byte, 3000)
	for i := range random {
		random[i] = byte(i*7919 + i/3)
	}
	for name, body := range map[string]string{
		"text":   "hello world",
		"random": string(random),
		"html":   "<!DOCTYPE html>\n<html><body><h1>502 Bad Gateway</h1></body></html>\n",
		"empty":  "# Lessons\n",
	} {
		if got := api.status("k-acme", "POST", "/api/lessons/import", body); !strings.HasPrefix(got, "400 ") || !strings.Contains(got, "replace=all") {
			t.Errorf("importing %s: %.200s, want a 400 naming replace=all", name, got)
		}
	}
	if got := api.status("k-acme", "POST", "/api/lessons/import?dry_run=1", export); !strings.HasPrefix(got, "200 ") ||
		!strings.Contains(got, `"dry_run":true`) || !strings.Contains(got, `"changed":false`) {
		t.Errorf("a dry run of the export: %s", got)
	}
	if after := api.get("k-acme", "/api/lessons/export"); after != export {
		t.Fatalf("the bad imports changed the lessons:\n%s\nwas:\n%s", after, export)
	}

	api.shopTask("k-acme", "visit-b", task, "QX-B29")
	if got := api.status("k-acme", "POST", "/api/sessions/visit-b/outcome", `{"feedback": "done", "attempts": 1000000000000}`); !strings.HasPrefix(got, "400 ") || !strings.Contains(got, "1000") {
		t.Errorf("an outcome with 10^12 attempts: %s, want a 400 naming the bound", got)
	}
	if got := api.status("k-acme", "POST", "/api/sessions/visit-b/outcome?wait=1", `{"feedback": "done"}`); !strings.HasPrefix(got, "200 ") {
		t.Errorf("the outcome after the refused one: %s", got)
	}
}
