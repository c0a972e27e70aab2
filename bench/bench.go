// Package bench measures context management side by side: generated workloads (workload*.go)
// run through several context policies (policies.go, policy_*.go: Hippocam, its ablations and the
// baselines users would pick instead) with the simulated model; run.go drives them, score.go
// judges the answers and report.go and svg.go write tables and plots. `hippocam bench context`
// runs it; `hippocam bench overhead` measures the proxy and the stores (overhead*.go).
package bench

import (
	"context"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/scenario"
)

// Workload is one generated session: client messages in the docs/sim.md scenario protocol and the
// questions asked in it, in order.
type Workload struct {
	Name    string // "agentic", "fact-stream", "interleaved"
	Variant string // e.g. "64k" for a fact stream of 64k tokens
	// LengthTokens is the size of all content the workload feeds in (user and tool messages).
	LengthTokens int
	Lines        []scenario.Line
	// Questions line up with the user lines holding an `!ask` directive, in order.
	Questions []Question
}

// Question is one `!ask` and how to score its answer.
type Question struct {
	Key string
	// Want is the right answer, "KEY := VALUE" ("KEY := unknown" when nothing names the key).
	Want string
	// Stale lists superseded answers ("KEY := OLD"): giving one counts as stale, not invented.
	Stale []string
	// Detail marks a question about a detail fact that consolidation leaves in the archive.
	Detail bool
}

// Env is what a policy runs with: the model (the simulated model, in-process, speaking the real
// wire protocol), the tokenizer, the window and the price schedule.
type Env struct {
	Model  hippocam.Model
	Tok    hippocam.Tokenizer
	Window int
	Prices hippocam.Prices
}

// Policy is a way of managing an agent's context. New starts one session of it.
type Policy struct {
	Name string
	New  func(env Env) (Agent, error)
}

// Agent is one session under a policy. Step takes the new client messages of one step (a user
// message, or the tool results answering every call of the last answer) and returns the answer.
type Agent interface {
	Step(ctx context.Context, in []hippocam.Message) (*Turn, error)
}

// Turn is what one step cost and produced.
type Turn struct {
	Answer hippocam.Message
	// Usage is this step's model usage by call role (priced with Env.Prices).
	Usage hippocam.Usage
	// MaxRequestTokens is the largest main-model request of the step; Overflow is set when a
	// request exceeded the window (only the `full` policy lets that happen).
	MaxRequestTokens int
	Overflow         bool
	RecallCalls      int
	// PrefixConsolidations counts the prefix consolidations the engine committed (0 for
	// policies without one).
	PrefixConsolidations int
	// Verdict is what the engine's step did with a JANUS verdict (engine.VerdictApplied…), or
	// "" (none, or not the engine).
	Verdict string
	// EngineTime is the policy's own time in the step, model calls excluded.
	EngineTime time.Duration
}
