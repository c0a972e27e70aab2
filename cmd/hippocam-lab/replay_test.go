package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/scenario"
)

type replayOutput struct {
	Answers          []string `json:"answers"`
	MaxRequestTokens int      `json:"max_request_tokens"`
	ContextWindow    int      `json:"context_window"`
	Expanded         []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
		Kind    string `json:"kind"`
	} `json:"expanded"`
	LLMCalls map[string]int `json:"llm_calls"`
	Usage    map[string]struct {
		Input       int64   `json:"input"`
		CachedInput int64   `json:"cached_input"`
		Output      int64   `json:"output"`
		CostUSD     float64 `json:"cost_usd"`
	} `json:"usage"`
	Consolidations struct{ Intent, Prefix int } `json:"consolidations"`
}

func runMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// Every bundled scenario replays through the real binary's code at W = 8000 with every answer
// right, no request over the window, and an expansion that holds every scenario message in order.
func TestReplayBundledScenarios(t *testing.T) {
	files, _ := filepath.Glob("../../scenarios/*.jsonl")
	if len(files) < 2 {
		t.Fatalf("found %d bundled scenarios", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "h.db")
			stdout, stderr, code := runMain(t, "replay", "--scenario", file, "--context-window", "8000", "--db", db, "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var r replayOutput
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(file, ".jsonl") + ".expected")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(r.Answers, "\n") + "\n"; got != string(want) {
				t.Errorf("answers:\n%s\nwant:\n%s", got, want)
			}
			if r.ContextWindow != 8000 || r.MaxRequestTokens > 8000 || r.MaxRequestTokens == 0 {
				t.Errorf("max request %d tokens, window %d", r.MaxRequestTokens, r.ContextWindow)
			}
			if r.Consolidations.Intent == 0 || r.Consolidations.Prefix == 0 {
				t.Errorf("consolidations %+v: the scenario should fold", r.Consolidations)
			}
			for _, role := range []string{"agent", "janus", "precip", "palim"} {
				if r.LLMCalls[role] == 0 || r.Usage[role].Input == 0 {
					t.Errorf("no %s calls or usage recorded", role)
				}
			}
			lines, err := scenario.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			j := 0
			for _, m := range r.Expanded {
				if j < len(lines) && m.Role == string(lines[j].Role) && m.Content == lines[j].Content {
					j++
				}
			}
			if j != len(lines) {
				t.Fatalf("expanded holds the scenario's messages only up to line %d of %d", j, len(lines))
			}
		})
	}
}

func TestReplayBadScenario(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"role\":\"user\",\"content\":\"!say hi\"}\n{\"role\":\"user\",\"content\":\"x\"\n"), 0o644)
	_, stderr, code := runMain(t, "replay", "--scenario", bad)
	if code == 0 || !strings.Contains(stderr, "line 2") {
		t.Fatalf("exit %d, stderr %q; want a failure naming line 2", code, stderr)
	}
	orphan := filepath.Join(dir, "orphan.jsonl")
	os.WriteFile(orphan, []byte("{\"role\":\"user\",\"content\":\"!say hi\"}\n{\"role\":\"tool\",\"content\":\"x\"}\n"), 0o644)
	_, stderr, code = runMain(t, "replay", "--scenario", orphan)
	if code == 0 || !strings.Contains(stderr, "line 2") {
		t.Fatalf("exit %d, stderr %q; want a failure naming line 2", code, stderr)
	}
	_, _, code = runMain(t, "replay")
	if code != 2 {
		t.Fatalf("missing --scenario: exit %d, want 2", code)
	}
}

func TestReplaySummary(t *testing.T) {
	stdout, stderr, code := runMain(t, "replay", "--scenario", "../../scenarios/invoice.jsonl", "--context-window", "8000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"revenue_shop := 1250", "Consolidations:", "Lossless archive", "palim"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

// Through the binary: a detail reached through the archive and used (!use) is reinforced, so a
// later question about it is answered with no recall or search (answer_recalls), and a detail
// nothing names is searched for once.
func TestReplayUseReinforces(t *testing.T) {
	rows := func(tag string) string {
		var b strings.Builder
		for i := 0; i < 60; i++ {
			fmt.Fprintf(&b, "row %04d | %s | item-%d | qty %d\n", i, tag, 1000+i*7, i%9+1)
		}
		return b.String()
	}
	msg := func(role, content string) string {
		b, _ := json.Marshal(map[string]string{"role": role, "content": content})
		return string(b) + "\n"
	}
	script := msg("user", "#open Read the exports | the exports are read\nStart.") +
		msg("user", "!call read_file {\"path\":\"shop.csv\"}") +
		msg("tool", "detail shop_owner := Dana\n"+rows("shop")) +
		msg("user", "#close Read the exports\n!say read") +
		msg("user", "later := 1\n!say noted") + // JANUS's close applies at this step: the span is consolidated after it
		msg("user", "!use shop_owner") +
		msg("user", "!ask shop_owner") +
		msg("user", "!ask shop_manager")
	file := filepath.Join(t.TempDir(), "use.jsonl")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runMain(t, "replay", "--scenario", file, "--context-window", "8000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Answers       []string `json:"answers"`
		AnswerRecalls []int    `json:"answer_recalls"`
		Reinforced    int      `json:"reinforced"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Answers, "|") != "shop_owner := Dana|shop_manager := unknown" || r.Reinforced < 1 {
		t.Fatalf("answers %q, reinforced %d", r.Answers, r.Reinforced)
	}
	if len(r.AnswerRecalls) != 2 || r.AnswerRecalls[0] != 0 || r.AnswerRecalls[1] != 1 {
		t.Fatalf("answer_recalls %v, want [0 1]: the used detail needs no recall, the unknown one a search", r.AnswerRecalls)
	}
}
