package bench

import (
	"strings"

	"github.com/hippocam/hippocam"
)

// Verdict is how one answer scores.
type Verdict string

// The verdicts. Every answer gets exactly one.
const (
	// Right: the answer is the question's Want.
	Right Verdict = "right"
	// Stale: the answer gives a value the key had before it was superseded.
	Stale Verdict = "stale"
	// Missed: the answer gives no value: "KEY := unknown" for a key the session did name, or no
	// line about the key at all.
	Missed Verdict = "missed"
	// Invented: the answer gives a value the key never had (or any value for a key nothing named).
	Invented Verdict = "invented"
)

// Answer is one question with the answer given and its verdict.
type Answer struct {
	Key  string `json:"key"`
	Want string `json:"want"`
	// Got is the answer's line about the key ("KEY := VALUE"), or the whole answer, trimmed, when
	// no line of it states the key.
	Got     string  `json:"got"`
	Verdict Verdict `json:"verdict"`
	Detail  bool    `json:"detail,omitempty"`
}

// Tally counts verdicts.
type Tally struct {
	Questions int `json:"questions"`
	Right     int `json:"right"`
	Stale     int `json:"stale"`
	Invented  int `json:"invented"`
	Missed    int `json:"missed"`
}

// Accuracy is the share of right answers, in [0,1]; 0 when there were no questions.
func (t Tally) Accuracy() float64 {
	if t.Questions == 0 {
		return 0
	}
	return float64(t.Right) / float64(t.Questions)
}

// Score judges answers[i] against qs[i]. An answer's value is read from its last line that states
// the question's key as a fact or a detail (as docs/sim.md reads lines); the value "unknown" means no
// value. Answers beyond the questions are ignored; a question without an answer is missed.
func Score(qs []Question, answers []string) ([]Answer, Tally) {
	out := make([]Answer, len(qs))
	var t Tally
	for i, q := range qs {
		got := ""
		if i < len(answers) {
			got = answers[i]
		}
		a := Judge(q, got)
		out[i] = a
		t.Questions++
		switch a.Verdict {
		case Right:
			t.Right++
		case Stale:
			t.Stale++
		case Invented:
			t.Invented++
		default:
			t.Missed++
		}
	}
	return out, t
}

// Judge scores one answer to q.
func Judge(q Question, answer string) Answer {
	a := Answer{Key: q.Key, Want: q.Want, Got: strings.TrimSpace(answer), Detail: q.Detail}
	value, found := "", false
	for _, l := range strings.Split(answer, "\n") {
		if k, v, _, ok := factLine(l); ok && k == q.Key {
			value, found = v, true
		}
	}
	if found {
		a.Got = q.Key + " := " + value
	}
	want := wantValue(q)
	switch {
	case found && value == want:
		a.Verdict = Right
	case !found || value == "unknown":
		a.Verdict = Missed
	case staleValue(q, value):
		a.Verdict = Stale
	default:
		a.Verdict = Invented
	}
	return a
}

// wantValue is the value of q.Want ("unknown" when nothing names the key).
func wantValue(q Question) string {
	if _, v, _, ok := factLine(q.Want); ok {
		return v
	}
	return strings.TrimSpace(q.Want)
}

// staleValue reports whether value is one of q's superseded values.
func staleValue(q Question, value string) bool {
	for _, s := range q.Stale {
		if _, v, _, ok := factLine(s); ok && v == value {
			return true
		}
	}
	return false
}

// Result is one workload run under one policy, scored. Its JSON is one element of
// `hippocam bench context --json`'s "results".
type Result struct {
	Workload     string `json:"workload"`
	Variant      string `json:"variant"`
	Policy       string `json:"policy"`
	LengthTokens int    `json:"length_tokens"`
	Window       int    `json:"window"`
	// Error is set, and the figures are empty, when the run failed.
	Error string `json:"error,omitempty"`

	Questions int `json:"questions"`
	Right     int `json:"right"`
	// Accuracy is Right / Questions, in [0,1].
	Accuracy float64 `json:"accuracy"`
	// Stale, Invented and Missed count the wrong answers by kind (see Verdict).
	Stale    int `json:"stale"`
	Invented int `json:"invented"`
	Missed   int `json:"missed"`

	// MaxRequestTokens is the largest main-model request. Overflowed is set when a request
	// exceeded the window (only `full` lets that happen); OverflowStep is the first such step.
	MaxRequestTokens int  `json:"max_request_tokens"`
	Overflowed       bool `json:"overflowed"`
	OverflowStep     int  `json:"overflow_step,omitempty"`

	// Token figures are summed over every role.
	InputTokens         int64 `json:"input_tokens"`
	CachedInputTokens   int64 `json:"cached_input_tokens"`
	UncachedInputTokens int64 `json:"uncached_input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	// NewContentTokens is the size of every user and tool message that entered the session, as
	// part of a request (text and framing): the least that some call has to read uncached once.
	NewContentTokens int64 `json:"new_content_tokens"`
	// UncachedPerNewContent is UncachedInputTokens / NewContentTokens (the floor is 1).
	UncachedPerNewContent float64 `json:"uncached_per_new_content"`
	CostUSD               float64 `json:"cost_usd"`
	// CostPerCorrectUSD is CostUSD / Right; null when no answer was right.
	CostPerCorrectUSD *float64 `json:"cost_per_correct_usd"`

	// Calls counts model calls by role.
	Calls map[hippocam.CallRole]int `json:"calls"`
	// Usage is the usage by call role: calls, input, cached input, output, cost.
	Usage       hippocam.Usage `json:"usage"`
	RecallCalls int            `json:"recall_calls"`
	// PrefixConsolidations counts the engine's committed prefix consolidations (PALIM folds and
	// recessions), so that PALIM's calls per consolidation can be read beside Calls.
	PrefixConsolidations int     `json:"prefix_consolidations"`
	RecallPerQuestion    float64 `json:"recall_per_question"`
	// VerdictsDropped counts the JANUS verdicts the engine dropped because the session had moved
	// on before the next step (engine/verdict.go): 0 in a run where every step committed.
	VerdictsDropped int `json:"verdicts_dropped,omitempty"`
	// EngineMillis is the policy's own time, model calls excluded.
	EngineMillis float64 `json:"engine_ms"`
	Steps        int     `json:"steps"`
	// UncachedByStep is the uncached input of every role, summed from the first step to each.
	UncachedByStep []int64 `json:"uncached_by_step"`
	// Answers are the questions with the answers given and their verdicts, in order.
	Answers []Answer `json:"answers"`
}

// score fills the figures derived from the usage and the answers.
func (r *Result) score(qs []Question, answers []string) {
	var t Tally
	r.Answers, t = Score(qs, answers)
	r.Questions, r.Right, r.Stale, r.Invented, r.Missed = t.Questions, t.Right, t.Stale, t.Invented, t.Missed
	r.Accuracy = t.Accuracy()
	total := r.Usage.Total()
	r.InputTokens, r.CachedInputTokens, r.OutputTokens = total.Input, total.CachedInput, total.Output
	r.UncachedInputTokens = total.Input - total.CachedInput
	r.CostUSD = total.CostUSD
	if r.Right > 0 {
		c := r.CostUSD / float64(r.Right)
		r.CostPerCorrectUSD = &c
	}
	if r.NewContentTokens > 0 {
		r.UncachedPerNewContent = float64(r.UncachedInputTokens) / float64(r.NewContentTokens)
	}
	for role, u := range r.Usage {
		r.Calls[role] = u.Calls
	}
	if r.Questions > 0 {
		r.RecallPerQuestion = float64(r.RecallCalls) / float64(r.Questions)
	}
}
