package learnstream

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

func bundled(tb testing.TB) []Task {
	tb.Helper()
	f, err := os.Open("testdata/small.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	tasks, err := Read(f)
	if err != nil {
		tb.Fatal(err)
	}
	return tasks
}

func run(tb testing.TB, tasks []Task, cfg Config) *Result {
	tb.Helper()
	res, err := Run(context.Background(), tasks, cfg)
	if err != nil {
		tb.Fatalf("Run(%s): %v", cfg.Condition, err)
	}
	return res
}

func TestEveryConditionProducesNumbers(t *testing.T) {
	tasks := bundled(t)
	for _, cond := range Conditions() {
		t.Run(cond, func(t *testing.T) {
			progress := 0
			res := run(t, tasks, Config{Condition: cond, Attempts: 2, Progress: func(done, total int) {
				if total != len(tasks) || done != progress+1 {
					t.Errorf("progress %d of %d after %d", done, total, progress)
				}
				progress = done
			}})
			if progress != len(tasks) || res.Tasks != len(tasks) || res.ScoredTasks != 12 || len(res.Rewards) != 12 || len(res.Entries) != len(tasks) {
				t.Fatalf("tasks %d, scored %d, rewards %d, entries %d, progress %d", res.Tasks, res.ScoredTasks, len(res.Rewards), len(res.Entries), progress)
			}
			for i, r := range res.Rewards {
				if r < 0 || r > 1 || res.BestRewards[i] < r {
					t.Fatalf("task %d: reward %v, best %v", i, r, res.BestRewards[i])
				}
			}
			if res.MeanReward < 0 || res.MeanReward > 1 || res.BestReward < res.MeanReward || res.CostUSD <= 0 || res.Calls[hippocam.CallAgent] < len(tasks) {
				t.Fatalf("mean %v, best %v, cost %v, calls %v", res.MeanReward, res.BestReward, res.CostUSD, res.Calls)
			}
			if res.UncachedInputTokens > res.InputTokens || res.OutputTokens <= 0 {
				t.Fatalf("tokens: input %d, uncached %d, output %d", res.InputTokens, res.UncachedInputTokens, res.OutputTokens)
			}
			withMemory := cond != Stateless && cond != BestOfN
			if withMemory != (res.Routing != nil) || withMemory != (res.Clusters > 0) {
				t.Fatalf("clusters %d, routing %+v", res.Clusters, res.Routing)
			}
			if want := map[bool]int{true: 2, false: 1}[conditions[cond].many]; res.Attempts != want || res.Calls[hippocam.CallAgent] < want*len(tasks) {
				t.Fatalf("attempts %d, agent calls %d", res.Attempts, res.Calls[hippocam.CallAgent])
			}
		})
	}
}

func TestRunIsDeterministic(t *testing.T) {
	tasks := bundled(t)
	for _, cond := range []string{RoutedCL, Lessons} {
		a, b := run(t, tasks, Config{Condition: cond, Attempts: 2}), run(t, tasks, Config{Condition: cond, Attempts: 2})
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("%s: two runs differ\n%s\n%s", cond, ja, jb)
		}
	}
}

func TestGroundTruthHasOneClusterPerSource(t *testing.T) {
	res := run(t, bundled(t), Config{Condition: GroundTruth})
	if res.Clusters != 4 || res.Routing.Agreement != 1 || res.Routing.OverSplit != 0 || res.Routing.Merged != 0 {
		t.Fatalf("clusters %d, routing %+v", res.Clusters, res.Routing)
	}
	global := run(t, bundled(t), Config{Condition: GlobalICL})
	if global.Clusters != 1 || global.Routing.Merged != 3 || global.Routing.Agreement >= 1 {
		t.Fatalf("global: clusters %d, routing %+v", global.Clusters, global.Routing)
	}
}

// family is n tasks of one kind: the same request but for a numbered line, one decision whose
// only right value is right.
func family(n int, right string) []Task {
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("r%02d", i+1), Source: "revenue", Messages: []hippocam.Message{
			{Role: hippocam.RoleSystem, Content: "You are a reporting agent."},
			{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: fmt.Sprintf("Weekly sales report\nBatch %d\ntags: revenue weekly\ndecide status_filter: shipped | all | pending", i+1)},
		}, Env: Env{Decide: map[string]Decision{"status_filter": {Right: []string{right}, Reference: right}}}}
	}
	return tasks
}

func TestMemoryKeepsWhatWorked(t *testing.T) {
	tasks := family(12, "shipped")
	stateless := run(t, tasks, Config{Condition: Stateless})
	for _, cond := range []string{GlobalRB, GlobalICL} {
		res := run(t, tasks, Config{Condition: cond})
		// Once a task is right, the feedback it leaves makes every later one right.
		first := -1
		for i, r := range res.Rewards {
			if r == 1 && first < 0 {
				first = i
			}
			if first >= 0 && r != 1 {
				t.Fatalf("%s: task %d right, then task %d wrong: %v", cond, first+1, i+1, res.Rewards)
			}
		}
		if first < 0 || res.MeanReward <= stateless.MeanReward {
			t.Fatalf("%s: rewards %v (mean %.3f), stateless mean %.3f", cond, res.Rewards, res.MeanReward, stateless.MeanReward)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for name, cfg := range map[string]Config{
		"ErrCondition":   {Condition: "global-vector"},
		"ErrAttempts":    {Condition: BestOfN, Attempts: -1},
		"ErrBudget":      {Condition: GlobalICL, Window: 8000, AdvisoryBudget: 9000},
		"ErrSmallWindow": {Condition: GlobalICL, Window: 100},
	} {
		t.Run(name, func(t *testing.T) {
			if err := cfg.Validate(); hippocam.ErrorCode(err) != hippocam.EINVALID {
				t.Fatalf("Validate = %v, want EINVALID", err)
			}
		})
	}
	if err := (Config{Condition: RoutedCL}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTaskThatDoesNotFitAConversation(t *testing.T) {
	tasks := []Task{{ID: "x", Messages: []hippocam.Message{{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "hello"}, {Role: hippocam.RoleTool, Kind: hippocam.KindRaw, Content: "a result"}}}}
	_, err := Run(context.Background(), tasks, Config{Condition: Stateless})
	if hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(err.Error(), "task x") {
		t.Fatalf("error %v, want EINVALID naming the task", err)
	}
}

func TestAttemptsDifferBySeed(t *testing.T) {
	tasks := family(12, "shipped")
	res := run(t, tasks, Config{Condition: BestOfN, Attempts: 3})
	once := run(t, tasks, Config{Condition: Stateless})
	if res.MeanReward != once.MeanReward || res.BestReward <= res.MeanReward {
		t.Fatalf("best-of-3: attempt 1 %.3f (stateless %.3f), best %.3f: later attempts must be able to do better", res.MeanReward, once.MeanReward, res.BestReward)
	}
	if res.Calls[hippocam.CallAgent] != 3*len(tasks) || res.Routing != nil || res.Clusters != 0 {
		t.Fatalf("calls %v, routing %+v, clusters %d", res.Calls, res.Routing, res.Clusters)
	}
}
