package main

import (
	"encoding/json"
	"testing"

	"github.com/hippocam/hippocam/internal/testenv"
)

// contextResults runs `hippocam bench context --quick --json` with extra flags and returns its
// result rows, each already checked for sane figures.
func contextResults(t *testing.T, flags ...string) (rows []contextRow) {
	t.Helper()
	stdout, stderr, code := runMain(t, append([]string{"bench", "context", "--quick", "--json"}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Results []contextRow `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		if r.Error != "" || r.Accuracy < 0 || r.Accuracy > 1 || r.InputTokens <= 0 || r.CostUSD <= 0 || r.Calls["agent"] == 0 {
			t.Errorf("%s/%s: %+v", r.Workload, r.Policy, r)
		}
	}
	return out.Results
}

// contextRow is one workload under one policy in bench context's JSON.
type contextRow struct {
	Workload, Policy, Error string
	Accuracy                float64 `json:"accuracy"`
	InputTokens             int64   `json:"input_tokens"`
	CostUSD                 float64 `json:"cost_usd"`
	Calls                   map[string]int
}

// The command line of `bench context` chooses workloads and policies and reports each pair as
// JSON; one small workload under two policies keeps it to seconds.
func TestBenchContextCommand(t *testing.T) {
	got := map[string]bool{}
	for _, r := range contextResults(t, "--workloads", "fact-stream", "--policies", "hippocam,truncate") {
		got[r.Workload+"/"+r.Policy] = true
	}
	if len(got) != 2 || !got["fact-stream/hippocam"] || !got["fact-stream/truncate"] {
		t.Fatalf("results for %v; want fact-stream under hippocam and truncate", got)
	}
}

// The command line of `bench overhead --provider-only` replays a few steps through the proxy and
// the bare reverse proxy and reports both.
func TestBenchOverheadCommand(t *testing.T) {
	stdout, stderr, code := runMain(t, "bench", "overhead", "--provider-only", "--steps", "3",
		"--ttft-ms", "10", "--tokens-per-second", "4000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Provider struct {
			Steps    int `json:"steps"`
			Requests []struct {
				TTFB     float64 `json:"ttfb_ms"`
				BareTTFB float64 `json:"bare_ttfb_ms"`
			} `json:"requests"`
		} `json:"provider"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Provider.Steps != 3 || len(out.Provider.Requests) != 3 {
		t.Fatalf("provider run: %s", stdout)
	}
	for i, r := range out.Provider.Requests {
		if r.TTFB < 10 || r.BareTTFB < 10 {
			t.Errorf("step %d: %+v, under the upstream's 10 ms", i+1, r)
		}
	}
}

// `hippocam bench context --quick --json` runs every policy on every workload and produces sane
// numbers (the figures themselves are reported in BENCHMARKS.md, not asserted). A whole
// benchmark: it runs in the long step; TestBenchContextCommand is its everyday part.
func TestLongBenchContextQuick(t *testing.T) {
	testenv.SkipUnlessLong(t)
	if testing.Short() {
		t.Skip("the quick context benchmark takes about a minute")
	}
	policies := map[string]bool{}
	for _, r := range contextResults(t) {
		policies[r.Policy] = true
	}
	for _, p := range []string{"hippocam", "hippocam-no-prefix", "hippocam-no-recall", "flat-summary", "truncate", "full", "retrieve-prepend"} {
		if !policies[p] {
			t.Errorf("no results for policy %s", p)
		}
	}
}

// `hippocam bench overhead --quick --json` measures the proxy and the stores with sane figures.
// A whole benchmark: it runs in the long step; TestBenchOverheadCommand is its everyday part.
func TestLongBenchOverheadQuick(t *testing.T) {
	testenv.SkipUnlessLong(t)
	if testing.Short() {
		t.Skip("the quick overhead benchmark takes about half a minute")
	}
	stdout, stderr, code := runMain(t, "bench", "overhead", "--quick", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Proxy []struct {
			SessionMessages int     `json:"session_messages"`
			P50             float64 `json:"p50_ms"`
			BareP50         float64 `json:"bare_p50_ms"`
		} `json:"proxy"`
		Throughput struct {
			RPS float64 `json:"requests_per_second"`
		} `json:"throughput"`
		Recall []struct {
			Store string  `json:"store"`
			P50   float64 `json:"p50_ms"`
		} `json:"recall"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Proxy) == 0 || out.Throughput.RPS <= 0 || len(out.Recall) == 0 {
		t.Fatalf("report: %s", stdout)
	}
	for _, p := range out.Proxy {
		if p.P50 <= 0 || p.BareP50 <= 0 {
			t.Errorf("proxy row %+v", p)
		}
	}
	for _, r := range out.Recall {
		if r.P50 <= 0 {
			t.Errorf("recall row %+v", r)
		}
	}
}

// bench overhead --learn routed times task starts through the serve command itself, learning,
// with the --route-wait it is given: every task records a routing decision.
func TestBenchOverheadTaskStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts serve and runs tasks through it")
	}
	stdout, stderr, code := runMain(t, "bench", "overhead", "--provider-only", "--learn", "routed", "--tasks", "6",
		"--route-wait", "-1s", "--ttft-ms", "10", "--tokens-per-second", "4000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		TaskStarts struct {
			Tasks     int            `json:"tasks"`
			Decisions map[string]int `json:"decisions"`
			Ratio     float64        `json:"ratio_ttfb_p50"`
		} `json:"task_starts"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	ts := out.TaskStarts
	if ts.Tasks != 6 || ts.Decisions["pending"] != 0 || ts.Decisions["create"]+ts.Decisions["reuse"]+ts.Decisions["match"] != 6 || ts.Ratio <= 0 {
		t.Fatalf("task starts %+v: the router, waited for without bound, decides every task", ts)
	}
}
