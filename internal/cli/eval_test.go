package cli

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/eval"
	"github.com/hippocam/hippocam/internal/servetest"
	"github.com/hippocam/hippocam/sim"
)

// startSimulated serves the simulated model on a free port until the test ends and returns its
// root URL.
func startSimulated(t *testing.T) string {
	t.Helper()
	addr := servetest.FreeAddr(t)
	startSim(t, addr, sim.Latency{})
	return "http://" + addr
}

// runEval runs the built binary's eval command and returns its stdout, stderr and the rows of
// its results.jsonl.
func runEval(t *testing.T, bin string, out string, args ...string) (string, string, []eval.Row) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"eval", "--out", out}, args...)...)
	cmd.Env = servetest.Env("HIPPOCAM_", "OPENAI_", "ANTHROPIC_")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hippocam eval: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	f, err := os.Open(filepath.Join(out, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []eval.Row
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		var r eval.Row
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("results.jsonl line %q: %v", sc.Text(), err)
		}
		rows = append(rows, r)
	}
	return stdout.String(), stderr.String(), rows
}

// forks counts the forks the in-process proxy logged.
func forks(t *testing.T, out string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "continuing in a fork")
}

// verdicts maps condition and question id to the verdict of every row.
func verdicts(rows []eval.Row) map[[2]string]string {
	v := map[[2]string]string{}
	for _, r := range rows {
		v[[2]string{r.Condition, r.QuestionID}] = r.Verdict
	}
	return v
}

// checkReport checks summary.md (also printed on stdout) and scores.svg.
func checkReport(t *testing.T, out, stdout string, categories []string) {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, string(md)) {
		t.Errorf("stdout does not hold summary.md:\n%s", stdout)
	}
	if !strings.Contains(string(md), "| category | questions | hippocam | full | truncate |") {
		t.Errorf("summary.md has no score table:\n%s", md)
	}
	for _, c := range append(categories, "**all**") {
		if !strings.Contains(string(md), "\n| "+c+" | ") {
			t.Errorf("summary.md has no row for category %s:\n%s", c, md)
		}
	}
	svg, err := os.ReadFile(filepath.Join(out, "scores.svg"))
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	bars, texts := 0, ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("scores.svg is not XML: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if x.Name.Local == "rect" {
				bars++
			}
		case xml.CharData:
			texts += string(x) + "\n"
		}
	}
	for _, want := range append(categories, "hippocam", "full", "truncate") {
		if !strings.Contains(texts, want) {
			t.Errorf("scores.svg does not name %q", want)
		}
	}
	if bars < 4 {
		t.Errorf("scores.svg has %d rects, want bars", bars)
	}
}

// Both dataset formats through the built binary, the simulated model upstream: the rows, the
// table and the plot are written, and with a window smaller than the conversation the truncate
// condition loses the facts of the first sessions while Hippocam's proxy still answers them.
func TestEvalEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := hippocamBuild.Bin(t)
	root := startSimulated(t)

	t.Run("locomo", func(t *testing.T) {
		out := t.TempDir()
		stdout, stderr, rows := runEval(t, bin, out, "--dataset", "../../eval/testdata/locomo-sim.json", "--upstream", root+"/v1",
			"--model", "hippocam-sim", "--context-window", "4000", "--answer-tokens", "64", "--prices", "0.3,0.03,1.2")
		if len(rows) != 3*6 {
			t.Fatalf("%d rows, want 18 (3 conditions × 6 questions, category 5 left out)", len(rows))
		}
		for _, r := range rows {
			if r.Category == eval.LoCoMoAdversarial || r.Error != "" || r.Verdict == eval.Unjudged || r.CostUSD == nil || r.JudgeCostUSD == nil || r.InputTokens == 0 {
				t.Errorf("row %+v", r)
			}
		}
		v := verdicts(rows)
		for _, q := range []string{"conv-sim-1/q1", "conv-sim-1/q2"} { // facts of sessions 1 and 2
			if v[[2]string{"truncate", q}] != eval.Wrong || v[[2]string{"hippocam", q}] != eval.Correct || v[[2]string{"full", q}] != eval.Correct {
				t.Errorf("%s: truncate %s, hippocam %s, full %s; want wrong, correct, correct", q, v[[2]string{"truncate", q}], v[[2]string{"hippocam", q}], v[[2]string{"full", q}])
			}
		}
		for _, c := range eval.Conditions {
			if got := [3]string{v[[2]string{c, "conv-sim-1/q3"}], v[[2]string{c, "conv-sim-1/q4"}], v[[2]string{c, "conv-sim-1/q5"}]}; got != [3]string{eval.Correct, eval.Partial, eval.Wrong} {
				t.Errorf("%s: the last session's fact, the half-known hobbies and the unknown cat are %v", c, got)
			}
		}
		// The conversation is larger than the window, truncate's requests fit it, and the hippocam
		// rows went through the proxy, whose own calls are accounted.
		for _, r := range rows {
			if r.Sample == "conv-sim-1" && (r.Condition == eval.CondTruncate && r.InputTokens > 4000 || r.Condition == eval.CondFull && r.InputTokens <= 4000) {
				t.Errorf("%s %s: %d input tokens for a window of 4000", r.Condition, r.QuestionID, r.InputTokens)
			}
		}
		var sum struct {
			Run struct {
				Usage map[string]struct{ Proxy map[string]json.RawMessage }
			}
		}
		if b, err := os.ReadFile(filepath.Join(out, "summary.json")); err != nil || json.Unmarshal(b, &sum) != nil {
			t.Fatalf("summary.json: %v", err)
		}
		if p := sum.Run.Usage[eval.CondHippocam].Proxy; p["agent"] == nil || p["janus"] == nil || (p["palim"] == nil && p["precip"] == nil) {
			t.Errorf("the proxy's usage by role lacks agent, janus or a consolidating role (precip, palim): %v", p)
		}
		checkReport(t, out, stdout, []string{"1", "2", "3", "4"})
		// Each question after a sample's first was asked in a fork of its own, so that none
		// saw another: 4 forks for the 5 questions of conv-sim-1, none for conv-sim-2's one.
		if n := forks(t, out); n != 4 {
			t.Errorf("%d forks, want 4", n)
		}
		if !strings.Contains(stdout, "questions left out: 1, adversarial (LoCoMo category 5)") {
			t.Errorf("the summary does not say category 5 was left out:\n%s", stdout)
		}
		if !strings.Contains(stderr, "eval: 30/30 (100%)") { // 10 + 2 sessions ingested, 3 × 6 answers
			t.Errorf("no progress lines on stderr:\n%s", stderr)
		}
	})

	t.Run("longmemeval", func(t *testing.T) {
		out := t.TempDir()
		stdout, _, rows := runEval(t, bin, out, "--dataset", "../../eval/testdata/longmemeval-sim.json", "--upstream", root,
			"--upstream-format", "anthropic", "--model", "hippocam-sim", "--context-window", "4000", "--answer-tokens", "64")
		if len(rows) != 3*3 {
			t.Fatalf("%d rows, want 9", len(rows))
		}
		v := verdicts(rows)
		want := map[string][3]string{ // hippocam, full, truncate
			"sim_early":    {eval.Correct, eval.Correct, eval.Wrong},
			"sim_late":     {eval.Correct, eval.Correct, eval.Correct},
			"sim_none_abs": {eval.Correct, eval.Correct, eval.Correct},
		}
		for q, w := range want {
			if got := [3]string{v[[2]string{"hippocam", q}], v[[2]string{"full", q}], v[[2]string{"truncate", q}]}; got != w {
				t.Errorf("%s: %v, want %v", q, got, w)
			}
		}
		for _, r := range rows {
			if r.CostUSD != nil {
				t.Errorf("a cost without --prices: %+v", r)
			}
		}
		checkReport(t, out, stdout, []string{"abstention", "multi-session", "single-session-user"})
	})

	t.Run("batch", func(t *testing.T) {
		out := t.TempDir()
		// Three lookups answered together need room for three recall chains at once: at 4000 the
		// later ones take the room of the earlier (engine giveRoom) and their values are gone.
		_, _, rows := runEval(t, bin, out, "--dataset", "../../eval/testdata/locomo-sim.json", "--upstream", root+"/v1",
			"--model", "hippocam-sim", "--context-window", "6000", "--answer-tokens", "64", "--batch", "3", "--conditions", "hippocam,truncate", "--limit", "4")
		if len(rows) != 2*4 {
			t.Fatalf("%d rows, want 8", len(rows))
		}
		v := verdicts(rows)
		for _, r := range rows {
			if r.Batch != map[string]int{"conv-sim-1/q1": 3, "conv-sim-1/q2": 3, "conv-sim-1/q3": 3, "conv-sim-1/q4": 1}[r.QuestionID] {
				t.Errorf("%s asked in a batch of %d", r.QuestionID, r.Batch)
			}
		}
		if n := forks(t, out); n != 1 {
			t.Errorf("%d forks for two batches, want 1", n)
		}
		if v[[2]string{"hippocam", "conv-sim-1/q1"}] != eval.Correct || v[[2]string{"truncate", "conv-sim-1/q1"}] != eval.Wrong || v[[2]string{"hippocam", "conv-sim-1/q3"}] != eval.Correct {
			t.Errorf("batched verdicts %v", v)
		}
	})
}
