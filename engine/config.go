package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/hippocam/hippocam"
)

// Config holds the engine's parameters. The consolidation defaults are the paper's Table 5
// (the Hippocam paper, appendix A):
//
//	K      = 2        minimum interaction rounds in the working tail
//	B_min  = 4,096    working-tail token floor                 (3.2 % of W)
//	α      = 0.20     ceiling on the working tail, as a share of W
//	q      = 0.95     quantile of observed round sizes
//	E_min  = 2        new intent memories a prefix needs for an ordinary fold
//	T_min  = 16,384   prefix size for an ordinary fold          (12.8 % of W)
//	W      = 128,000  context capacity (input and output)
//	ρ      = 0.80     predicted occupancy that starts a pressure sweep
//	Δmin   = 8,192    minimum saving of a prefix fold           (6.4 % of W)
//	J      = 2        concise retries when a fold saves too little
//
// ForWindow scales the three token thresholds with W when only the window is given.
type Config struct {
	Window        int     // W: context capacity in tokens, input and output together
	TailRounds    int     // K
	TailMinTokens int     // B_min
	TailCap       float64 // α
	Quantile      float64 // q
	MinIntentMems int     // E_min
	MinPrefix     int     // T_min
	Pressure      float64 // ρ
	MinSaving     int     // Δmin
	ConciseTries  int     // J

	// Corrections bounds how often a component whose output breaks its contract is asked to
	// repair it (quoting the validation error) before the engine gives up safely.
	Corrections int
	// MaxDepth bounds the intent stack: a JANUS answer that would leave more intents open is a
	// contract violation, explained back to JANUS like any other (default DefaultMaxDepth).
	MaxDepth int
	// RecallLimit bounds the recall calls of one step; at the limit the model is called once
	// more without the recall tool and must answer.
	RecallLimit int
	// Prices prices every call (default: the Hippocam paper §A.9).
	Prices hippocam.Prices
	// SharedPrompts puts the role prompts of PRECIP and PALIM into the system message that their
	// requests share with the main model's, so that a provider's prompt cache serves them; their
	// requests then end with a short instruction only. It costs about 3,200 tokens of every
	// request's window (the three prompts with every rule of B.2), so ForWindow turns it on from
	// W = SharedPromptsFrom. JANUS's prompt is never there: its requests carry it (janusView).
	SharedPrompts bool
	// Structured is how JANUS, PRECIP and PALIM are asked for their JSON answers: natively
	// (hippocam.Structured), falling back to the schema in prose for an upstream that refuses
	// (auto, the default, also ""), natively only, or in prose only.
	Structured hippocam.StructuredMode
	// MinAnswer is the least room kept for the main model's answer (Table 5's W holds input
	// and output): the reserve is the largest of the request's own limit (Input.MaxTokens), MinAnswer and
	// the quantile of the answers in context. ForWindow sets W/16, at most 4,096.
	MinAnswer int
	// Janus is when JANUS runs against the main model's answer (verdict.go): JanusBeside (the
	// default, also "") asks it at the same time as the main call, over the same context, and
	// applies its verdict at the start of the session's next step; JanusGate asks it first and
	// makes the main call after its verdict is applied, the paper's order.
	Janus JanusMode
	// JanusWait bounds how long a step waits for the verdict its session's previous step left
	// (JanusBeside). A verdict not in by then is applied at a later step, and no new JANUS call
	// starts until it is: nothing is skipped, the stack only moves later. 0 (ForWindow's, so
	// that a run in one process is the same every time) waits as long as the call takes;
	// `serve` sets DefaultJanusWait.
	JanusWait time.Duration
	// MaxLag bounds how far consolidation left for after the answer may fall behind: the most
	// steps that answer while work an earlier step left is still pending (Pending.Lag). The next
	// step runs that work first, unless a job is at it (Input.Consolidating). Whatever the lag,
	// a step runs the pending work first when its context would not fit the window without it
	// (docs/architecture.md §7). 0: every step that finds work pending runs it first. ForWindow sets
	// DefaultMaxLag.
	MaxLag int
	// Ablations switch parts of the method off, for the experiments of the Hippocam paper Table 4.
	Ablations Ablations
}

// Ablations are the switches of the Hippocam paper's ablation study (Table 4), each one part of the method
// taken away. The zero value is the whole method.
type Ablations struct {
	// NoIntentConditioning sends PRECIP the closed span without the chain of intents it served.
	NoIntentConditioning bool `json:"no_intent_conditioning,omitempty"`
	// NoPrefix replaces prefix consolidation by truncation: under pressure the oldest eligible
	// messages are moved to the archive beneath a bare marker, with no PALIM call; the ordinary
	// check never folds.
	NoPrefix bool `json:"no_prefix,omitempty"`
	// NoRecall removes the recall and search tools and the part of the memory instructions
	// that teaches them; consolidated messages keep their refs but nothing can open them.
	NoRecall bool `json:"no_recall,omitempty"`
	// FlatSummary keeps no intents and no hierarchy: JANUS is not asked, and under pressure
	// the whole eligible prefix, earlier summaries included, is folded into one summary.
	FlatSummary bool `json:"flat_summary,omitempty"`
}

// SharedPromptsFrom is the smallest window for which ForWindow shares the role prompts.
const SharedPromptsFrom = 32000

// Paper defaults (Table 5) and the engine's own.
const (
	DefaultWindow       = 128000
	DefaultCorrections  = 2
	DefaultRecallLimit  = 64
	DefaultMaxDepth     = 8
	DefaultMaxLag       = 4
	tailMinShare        = 0.032 // B_min / W at the paper's defaults
	minPrefixShare      = 0.128 // T_min / W
	minSavingShare      = 0.064 // Δmin / W
	defaultTailRounds   = 2
	defaultTailCap      = 0.20
	defaultQuantile     = 0.95
	defaultMinIntentMem = 2
	defaultPressure     = 0.80
	defaultConciseTries = 2
)

// DefaultConfig returns Table 5's configuration for W = 128,000 tokens.
func DefaultConfig() Config { return ForWindow(DefaultWindow) }

// ForWindow returns the defaults for a window of w tokens: Table 5's ratios, with B_min, T_min
// and Δmin scaled to 3.2 %, 12.8 % and 6.4 % of w (exactly Table 5 at w = 128,000).
func ForWindow(w int) Config {
	return Config{
		Window:        w,
		TailRounds:    defaultTailRounds,
		TailMinTokens: int(math.Round(tailMinShare * float64(w))),
		TailCap:       defaultTailCap,
		Quantile:      defaultQuantile,
		MinIntentMems: defaultMinIntentMem,
		MinPrefix:     int(math.Round(minPrefixShare * float64(w))),
		Pressure:      defaultPressure,
		MinSaving:     int(math.Round(minSavingShare * float64(w))),
		ConciseTries:  defaultConciseTries,
		Corrections:   DefaultCorrections,
		RecallLimit:   DefaultRecallLimit,
		MaxDepth:      DefaultMaxDepth,
		Prices:        hippocam.DefaultPrices,
		SharedPrompts: w >= SharedPromptsFrom,
		MinAnswer:     min(w/16, 4096),
		MaxLag:        DefaultMaxLag,
	}
}

// Validate reports the first parameter out of range as EINVALID.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return hippocam.Errorf(hippocam.EINVALID, "config: "+format, args...)
	}
	switch {
	case c.Janus != "" && c.Janus != JanusBeside && c.Janus != JanusGate:
		return bad("JANUS mode must be beside or gate, got %q", c.Janus)
	case c.JanusWait < 0:
		return bad("JANUS wait must be ≥ 0, got %v", c.JanusWait)
	case c.Structured != "" && c.Structured != hippocam.StructuredAuto && c.Structured != hippocam.StructuredNative && c.Structured != hippocam.StructuredProse:
		return bad("structured mode must be auto, native or prose, got %q", c.Structured)
	case c.Window < 512:
		return bad("context window %d is too small (at least 512 tokens)", c.Window)
	case c.TailRounds < 0:
		return bad("tail rounds K must be ≥ 0, got %d", c.TailRounds)
	case c.TailMinTokens < 0:
		return bad("tail token floor B_min must be ≥ 0, got %d", c.TailMinTokens)
	case c.TailCap < 0 || c.TailCap > 1:
		return bad("tail cap α must be within [0,1], got %g", c.TailCap)
	case c.Quantile < 0 || c.Quantile > 1:
		return bad("round quantile q must be within [0,1], got %g", c.Quantile)
	case c.MinIntentMems < 0 || c.MinPrefix < 0 || c.MinSaving < 0:
		return bad("E_min, T_min and Δmin must be ≥ 0")
	case c.Pressure <= 0 || c.Pressure > 1:
		return bad("pressure threshold ρ must be within (0,1], got %g", c.Pressure)
	case c.ConciseTries < 0 || c.Corrections < 0:
		return bad("retry bounds must be ≥ 0")
	case c.MaxDepth < 1:
		return bad("intent stack depth bound must be ≥ 1, got %d", c.MaxDepth)
	case c.RecallLimit < 0:
		return bad("recall limit must be ≥ 0, got %d", c.RecallLimit)
	case c.MaxLag < 0:
		return bad("consolidation lag bound must be ≥ 0, got %d", c.MaxLag)
	case c.MinAnswer < 0 || c.MinAnswer >= c.Window/2:
		return bad("answer room %d must be ≥ 0 and less than half the window", c.MinAnswer)
	}
	return nil
}

// String summarises the configuration for logs and reports.
func (c Config) String() string {
	return fmt.Sprintf("W=%d K=%d B_min=%d α=%.2f q=%.2f E_min=%d T_min=%d ρ=%.2f Δmin=%d J=%d",
		c.Window, c.TailRounds, c.TailMinTokens, c.TailCap, c.Quantile, c.MinIntentMems, c.MinPrefix, c.Pressure, c.MinSaving, c.ConciseTries)
}
