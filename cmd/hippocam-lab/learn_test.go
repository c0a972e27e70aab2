package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/bench/learnstream"
	"github.com/hippocam/hippocam/memory/lessons"
)

// learnStream is the small stream bundled for the runner's own tests.
const learnStream = "../../bench/learnstream/testdata/small.jsonl"

type learnOutput struct {
	Results []struct {
		Condition           string             `json:"condition"`
		Tasks               int                `json:"tasks"`
		MeanReward          *float64           `json:"mean_reward"`
		BestReward          *float64           `json:"best_reward"`
		CostUSD             float64            `json:"cost_usd"`
		Calls               map[string]int     `json:"calls"`
		InputTokens         int64              `json:"input_tokens"`
		UncachedInputTokens *int64             `json:"uncached_input_tokens"`
		OutputTokens        int64              `json:"output_tokens"`
		Clusters            *int               `json:"clusters"`
		MemoryEntries       *int               `json:"memory_entries"`
		BySource            map[string]float64 `json:"by_source"`
	} `json:"results"`
}

func TestLearnEveryCondition(t *testing.T) {
	stdout, stderr, code := runMain(t, "learn", "--stream", learnStream, "--attempts", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out learnOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("output: %v\n%s", err, stdout)
	}
	var got []string
	for _, r := range out.Results {
		got = append(got, r.Condition)
		if r.Tasks != 13 || r.MeanReward == nil || r.BestReward == nil || r.UncachedInputTokens == nil || r.Clusters == nil || r.MemoryEntries == nil {
			t.Fatalf("%s: a field is missing: %+v", r.Condition, r)
		}
		if *r.MeanReward < 0 || *r.MeanReward > 1 || *r.BestReward < *r.MeanReward || *r.BestReward > 1 {
			t.Fatalf("%s: reward %v, best %v", r.Condition, *r.MeanReward, *r.BestReward)
		}
		if r.CostUSD <= 0 || r.Calls["agent"] == 0 || r.InputTokens <= 0 || r.OutputTokens <= 0 || len(r.BySource) != 4 {
			t.Fatalf("%s: cost %v, calls %v, tokens %d/%d, sources %v", r.Condition, r.CostUSD, r.Calls, r.InputTokens, r.OutputTokens, r.BySource)
		}
		for src, v := range r.BySource {
			if v < 0 || v > 1 {
				t.Fatalf("%s: source %s reward %v", r.Condition, src, v)
			}
		}
	}
	if !slices.Equal(got, learnstream.Conditions()) {
		t.Fatalf("conditions %v, want %v", got, learnstream.Conditions())
	}
}

func TestLearnTable(t *testing.T) {
	stdout, stderr, code := runMain(t, "learn", "--stream", learnStream, "--conditions", "stateless,routed-cl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"13 tasks", "stateless", "routed-cl", "agreement"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("the table lacks %q:\n%s", want, stdout)
		}
	}
}

func TestLearnBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	good, err := os.ReadFile(learnStream)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(good), "\n")
	if err := os.WriteFile(bad, []byte(first+"\n{\"id\": \"t99\", \"messages\": [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runMain(t, "learn", "--stream", bad, "--json"); code != 1 || !strings.Contains(stderr, "line 2") {
		t.Fatalf("a stream with a broken line 2: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runMain(t, "learn", "--stream", learnStream, "--conditions", "stateless,global-vector"); code != 2 || !strings.Contains(stderr, "global-vector") {
		t.Fatalf("an unknown condition: exit %d, %q", code, stderr)
	}
	if _, _, code := runMain(t, "learn"); code != 2 {
		t.Fatalf("no --stream: exit %d, want 2", code)
	}
}

// --lessons-out writes the lessons the lessons condition learned as a Markdown file that the
// lessons package reads; importing it again then changes nothing.
func TestLearnLessonsOut(t *testing.T) {
	out := filepath.Join(t.TempDir(), "lessons.md")
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"learn", "--stream", "../../bench/learnstream/testdata/small.jsonl", "--conditions", "lessons", "--lessons-out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(md, []byte("# Lessons")) || !bytes.Contains(md, []byte("\n## L1: ")) {
		t.Fatalf("lessons file:\n%s", md)
	}
	state, err := lessons.Import(nil, md)
	if err != nil {
		t.Fatal(err)
	}
	md2, err := lessons.Export(state)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(md2, []byte("\n## L1: ")) {
		t.Fatalf("the imported lessons exported as:\n%s", md2)
	}
	state2, err := lessons.Import(state, md2)
	if err != nil || !bytes.Equal(state2, state) {
		t.Fatalf("importing the export again changed the state (%v)", err)
	}
	if code := Main(context.Background(), []string{"learn", "--stream", "../../bench/learnstream/testdata/small.jsonl", "--conditions", "stateless", "--lessons-out", out}, &stdout, &stderr); code == 0 {
		t.Fatal("--lessons-out without the lessons condition succeeded")
	}
}
