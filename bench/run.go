package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hippocam/hippocam"
)

// DefaultWindow is the context window W of `hippocam bench context` unless one is given: small
// enough that the workloads overflow it many times over, and large enough (engine.SharedPromptsFrom)
// that Hippocam's auxiliary calls share the main model's cached system message, as they would in
// a deployment with a real model's window.
const DefaultWindow = 16000

// Config says which workloads a context benchmark generates.
type Config struct {
	// Window is the context window W in tokens; workload sizes are multiples of it.
	Window int `json:"context_window"`
	// Seed drives every random choice of the generators.
	Seed int64 `json:"seed"`
	// Quick picks small sizes, for CI: the whole run takes seconds.
	Quick bool `json:"quick"`
	// Prices is the schedule every run is priced with.
	Prices hippocam.Prices `json:"prices"`
}

// DefaultConfig is the full run at W = DefaultWindow, seed 1, with the §A.9 prices.
func DefaultConfig() Config {
	return Config{Window: DefaultWindow, Seed: 1, Prices: hippocam.DefaultPrices}
}

// Validate returns EINVALID when the window is below 6,000 tokens (an agentic round of tool
// results reaches 3,000 tokens, and every fact of a session lives on in its memories) or a
// price is negative.
func (c Config) Validate() error {
	switch {
	case c.Window < 6000:
		return hippocam.Errorf(hippocam.EINVALID, "context window %d is too small for the benchmark's workloads (at least 6000 tokens)", c.Window)
	case c.Prices.Input < 0 || c.Prices.CachedInput < 0 || c.Prices.Output < 0:
		return hippocam.Errorf(hippocam.EINVALID, "prices must not be negative")
	}
	return nil
}

// Size is one workload to generate: its name and its length in content tokens.
type Size struct {
	Name   string `json:"name"`
	Tokens int    `json:"tokens"`
}

// Sizes lists the workloads of a run. The full run has agentic and interleaved at 16 W and the
// fact stream at 2, 4, 8 and 16 W; the quick run has agentic and interleaved at 4 W and the fact
// stream at 1, 2 and 4 W, which still makes every policy but `full` manage its window.
func (c Config) Sizes() []Size {
	w := c.Window
	if c.Quick {
		return []Size{{NameAgentic, 4 * w}, {NameFactStream, w}, {NameFactStream, 2 * w}, {NameFactStream, 4 * w}, {NameInterleaved, 4 * w}}
	}
	return []Size{{NameAgentic, 16 * w}, {NameFactStream, 2 * w}, {NameFactStream, 4 * w}, {NameFactStream, 8 * w}, {NameFactStream, 16 * w}, {NameInterleaved, 16 * w}}
}

// Generate returns the workload name of about tokens content tokens; EINVALID for an unknown
// name.
func Generate(name string, seed int64, tokens int, tok hippocam.Tokenizer) (*Workload, error) {
	switch name {
	case NameAgentic:
		return Agentic(seed, tokens, tok), nil
	case NameFactStream:
		return FactStream(seed, tokens, tok), nil
	case NameInterleaved:
		return Interleaved(seed, tokens, tok), nil
	}
	return nil, hippocam.Errorf(hippocam.EINVALID, "unknown workload %q (agentic, fact-stream or interleaved)", name)
}

// Workloads generates every workload of c's Sizes.
func (c Config) Workloads(tok hippocam.Tokenizer) ([]*Workload, error) {
	var out []*Workload
	for _, sz := range c.Sizes() {
		w, err := Generate(sz.Name, c.Seed, sz.Tokens, tok)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// Run drives w through one new session of p, one step per user line and one per complete set of
// tool results (tool lines answer the calls of the last answer, in order, as in replay.Run), and
// scores the answers to the workload's questions. An error names the workload line whose step
// failed; a line that does not fit the conversation (a tool result nothing waits for, a user
// message while calls wait) is EINVALID. progress, if not nil, is called after every line with
// the lines done and the total.
func Run(ctx context.Context, p Policy, env Env, w *Workload, progress func(done, total int)) (*Result, error) {
	agent, err := p.New(env)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", p.Name, err)
	}
	r := &Result{Workload: w.Name, Variant: w.Variant, Policy: p.Name, LengthTokens: w.LengthTokens, Window: env.Window, Calls: map[hippocam.CallRole]int{}, Usage: hippocam.Usage{}}
	var (
		answers  []string
		pending  []string
		batch    []hippocam.Message
		uncached int64
		engine   time.Duration
	)
	step := func(n int, asked bool, in []hippocam.Message) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		for i := range in {
			r.NewContentTokens += int64(hippocam.MessageTokens(env.Tok, &in[i]))
		}
		t, err := agent.Step(ctx, in)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		r.Steps++
		r.Usage.Merge(t.Usage)
		for _, u := range t.Usage {
			uncached += u.Input - u.CachedInput
		}
		r.UncachedByStep = append(r.UncachedByStep, uncached)
		r.MaxRequestTokens = max(r.MaxRequestTokens, t.MaxRequestTokens)
		if t.Overflow && !r.Overflowed {
			r.Overflowed, r.OverflowStep = true, r.Steps
		}
		r.RecallCalls += t.RecallCalls
		r.PrefixConsolidations += t.PrefixConsolidations
		if t.Verdict == "dropped" { // engine.VerdictDropped
			r.VerdictsDropped++
		}
		engine += t.EngineTime
		pending = t.Answer.CallIDs()
		if asked {
			answers = append(answers, t.Answer.Content)
		}
		return nil
	}
	for i, line := range w.Lines {
		m := hippocam.Message{Role: line.Role, Kind: hippocam.KindRaw, Content: line.Content}
		switch line.Role {
		case hippocam.RoleTool:
			if len(pending) == 0 {
				return nil, hippocam.Errorf(hippocam.EINVALID, "line %d: a tool result, but the last answer has no tool call waiting for one", line.Number)
			}
			m.ToolCallID, pending = pending[0], pending[1:]
			batch = append(batch, m)
			if len(pending) == 0 {
				in := batch
				batch = nil
				if err := step(line.Number, false, in); err != nil {
					return nil, err
				}
			}
		default:
			if len(pending) > 0 {
				return nil, hippocam.Errorf(hippocam.EINVALID, "line %d: a %s message, but %d tool call(s) of the last answer still wait for results", line.Number, line.Role, len(pending))
			}
			if err := step(line.Number, asks(line.Content), []hippocam.Message{m}); err != nil {
				return nil, err
			}
		}
		if progress != nil {
			progress(i+1, len(w.Lines))
		}
	}
	if len(answers) != len(w.Questions) {
		return nil, hippocam.Errorf(hippocam.EINVALID, "workload %s %s: %d questions but %d user lines with !ask", w.Name, w.Variant, len(w.Questions), len(answers))
	}
	r.EngineMillis = float64(engine.Microseconds()) / 1000
	r.score(w.Questions, answers)
	return r, nil
}

// Suite runs every workload through every policy, each run in a fresh environment.
type Suite struct {
	Config    Config
	Workloads []*Workload
	Policies  []Policy
	// Env returns the environment of one run. It is called once per (workload, policy), so that
	// a run starts with a model of its own and no run's prompt cache helps another.
	Env func() (Env, error)
	// Progress, if not nil, receives a progress bar redrawn in place (meant for a terminal).
	Progress io.Writer
}

// Report is what a Suite produced. Its JSON is `hippocam bench context --json`'s output.
type Report struct {
	Results []*Result    `json:"results"`
	Config  ReportConfig `json:"config"`
}

// ReportConfig records how a report was made.
type ReportConfig struct {
	Config
	Policies  []string        `json:"policies"`
	Workloads []WorkloadShape `json:"workloads"`
}

// WorkloadShape describes one generated workload.
type WorkloadShape struct {
	Name         string `json:"name"`
	Variant      string `json:"variant"`
	LengthTokens int    `json:"length_tokens"`
	Messages     int    `json:"messages"`
	Questions    int    `json:"questions"`
}

// Run runs the suite: workloads in order, every policy on each. A run that fails is reported
// with its error in Result.Error and the others go on; the error returned joins every failure,
// each naming its workload and policy. A cancelled ctx stops the suite and returns ctx's error
// with the results so far.
func (s *Suite) Run(ctx context.Context) (*Report, error) {
	rep := &Report{Results: []*Result{}, Config: ReportConfig{Config: s.Config}}
	for _, p := range s.Policies {
		rep.Config.Policies = append(rep.Config.Policies, p.Name)
	}
	total := 0
	for _, w := range s.Workloads {
		rep.Config.Workloads = append(rep.Config.Workloads, WorkloadShape{w.Name, w.Variant, w.LengthTokens, len(w.Lines), len(w.Questions)})
		total += len(w.Lines) * len(s.Policies)
	}
	bar := newProgressBar(s.Progress, total)
	defer bar.finish()
	var errs []error
	for _, w := range s.Workloads {
		for _, p := range s.Policies {
			base := bar.done
			bar.label = fmt.Sprintf("%s %s · %s", w.Name, w.Variant, p.Name)
			r, err := s.runOne(ctx, p, w, func(done, _ int) { bar.set(base + done) })
			bar.set(base + len(w.Lines))
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			if err != nil {
				err = fmt.Errorf("%s %s / %s: %w", w.Name, w.Variant, p.Name, err)
				errs = append(errs, err)
				r = &Result{Workload: w.Name, Variant: w.Variant, Policy: p.Name, LengthTokens: w.LengthTokens, Error: err.Error()}
			}
			rep.Results = append(rep.Results, r)
		}
	}
	return rep, errors.Join(errs...)
}

func (s *Suite) runOne(ctx context.Context, p Policy, w *Workload, progress func(done, total int)) (*Result, error) {
	env, err := s.Env()
	if err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	return Run(ctx, p, env, w, progress)
}

// progressBar draws "[####....]  42%  label" in place, at most every 100 ms.
type progressBar struct {
	w           io.Writer
	total, done int
	label       string
	last        time.Time
	drawn       bool
}

func newProgressBar(w io.Writer, total int) *progressBar {
	return &progressBar{w: w, total: max(total, 1)}
}

func (b *progressBar) set(done int) {
	b.done = done
	if b.w == nil || (time.Since(b.last) < 100*time.Millisecond && done < b.total) {
		return
	}
	b.last = time.Now()
	const width = 30
	full := width * done / b.total
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = '.'
		if i < full {
			bar[i] = '#'
		}
	}
	fmt.Fprintf(b.w, "\r\033[K[%s] %3d%%  %s", bar, 100*done/b.total, b.label)
	b.drawn = true
}

func (b *progressBar) finish() {
	if b.w != nil && b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
