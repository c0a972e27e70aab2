package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/bench/learnstream"
)

// `hippocam bench learn`: generated streams (learn_stream.go) run under every learning condition
// of docs/learning.md, "Conditions" through learnstream's runner, each on a fresh store and simulated
// model; learn_report.go and learn_svg.go turn the results into tables and plots.

// The learning conditions, in report order.
var LearnConditions = []string{
	"stateless", "best-of-n", "global-icl", "routed-icl", "routed-cl",
	"global-rb", "routed-rb", "lessons", "lessons-append-only", "ground-truth",
}

// Defaults of the learning benchmark.
const (
	DefaultLearnStreams  = 7
	DefaultLearnTasks    = 160
	DefaultLearnAttempts = 4
	DefaultLearnWindow   = 8000
	DefaultLearnCurve    = 20 // tasks per point of the learning curve
	QuickLearnStreams    = 1
	QuickLearnTasks      = 40
	QuickLearnAttempts   = 2
)

// LearnConfig says what `hippocam bench learn` runs.
type LearnConfig struct {
	// Suite is the kind of stream generated: SuiteDecisions (the default) or SuiteNumeric.
	Suite string `json:"suite"`
	// Quick runs one small stream, for CI (QuickLearn… sizes, unless set).
	Quick bool `json:"quick"`
	// Streams are drawn from seeds Seed, Seed+1, …; each holds Tasks tasks.
	Streams int   `json:"streams"`
	Tasks   int   `json:"tasks"`
	Seed    int64 `json:"seed"`
	// Attempts is N for best-of-n, lessons and lessons-append-only.
	Attempts int `json:"attempts"`
	// Window is the context window W; AdvisoryBudget bounds an advisory (0: the runner's
	// default, a quarter of W).
	Window         int `json:"window"`
	AdvisoryBudget int `json:"advisory_budget,omitempty"`
	// Conditions to run (default: every one, LearnConditions; for the numeric suite
	// NumericConditions).
	Conditions []string `json:"conditions"`
	// CurveWindow is how many tasks of the stream each point of the learning curve averages.
	CurveWindow int             `json:"curve_window"`
	Prices      hippocam.Prices `json:"prices"`
	// Parallel is how many runs go at once (default GOMAXPROCS).
	Parallel int `json:"parallel"`
	// Progress, if set, is called as runs advance: done and total count tasks over every run.
	Progress func(done, total int) `json:"-"`
}

// DefaultLearnConfig is the full run.
func DefaultLearnConfig() LearnConfig {
	return LearnConfig{Streams: DefaultLearnStreams, Tasks: DefaultLearnTasks, Seed: 1, Attempts: DefaultLearnAttempts,
		Window: DefaultLearnWindow, CurveWindow: DefaultLearnCurve, Prices: hippocam.DefaultPrices}
}

// withDefaults fills what is unset; Quick picks the small sizes.
func (c LearnConfig) withDefaults() LearnConfig {
	d := DefaultLearnConfig()
	if c.Quick {
		d.Streams, d.Tasks, d.Attempts = QuickLearnStreams, QuickLearnTasks, QuickLearnAttempts
	}
	if c.Streams == 0 {
		c.Streams = d.Streams
	}
	if c.Tasks == 0 {
		c.Tasks = d.Tasks
	}
	if c.Seed == 0 {
		c.Seed = d.Seed
	}
	if c.Attempts == 0 {
		c.Attempts = d.Attempts
	}
	if c.Window == 0 {
		c.Window = d.Window
	}
	if c.CurveWindow == 0 {
		c.CurveWindow = d.CurveWindow
	}
	if c.Prices == (hippocam.Prices{}) {
		c.Prices = d.Prices
	}
	if c.Suite == "" {
		c.Suite = SuiteDecisions
	}
	if len(c.Conditions) == 0 {
		c.Conditions = append([]string(nil), LearnConditions...)
		if c.Suite == SuiteNumeric {
			c.Conditions = append([]string(nil), NumericConditions...)
		}
	}
	if c.Parallel <= 0 {
		c.Parallel = runtime.GOMAXPROCS(0)
	}
	return c
}

// Validate reports a setting that cannot run (EINVALID).
func (c LearnConfig) Validate() error {
	c = c.withDefaults()
	fams := suiteFamilies(c.Suite)
	switch {
	case !slices.Contains(LearnSuites(), c.Suite):
		return hippocam.Errorf(hippocam.EINVALID, "unknown suite %q (%s)", c.Suite, strings.Join(LearnSuites(), ", "))
	case c.Streams < 1:
		return hippocam.Errorf(hippocam.EINVALID, "streams: at least 1")
	case c.Tasks < 2*len(fams):
		return hippocam.Errorf(hippocam.EINVALID, "tasks: at least %d, twice the families", 2*len(fams))
	case c.Attempts < 1:
		return hippocam.Errorf(hippocam.EINVALID, "attempts: at least 1")
	case c.Window < 1000:
		return hippocam.Errorf(hippocam.EINVALID, "window: at least 1000 tokens")
	case c.AdvisoryBudget < 0:
		return hippocam.Errorf(hippocam.EINVALID, "advisory budget: not negative")
	}
	for _, name := range c.Conditions {
		if !slices.Contains(LearnConditions, name) {
			return hippocam.Errorf(hippocam.EINVALID, "unknown condition %q", name)
		}
	}
	return nil
}

// LearnStream is one generated stream: its seed, its tasks (as written to the stream file:
// Tasks for the decision suite, Numeric for the numeric one) and how many tasks of each family
// it holds.
type LearnStream struct {
	Seed     int64          `json:"seed"`
	Tasks    []StreamTask   `json:"-"`
	Numeric  []NumericTask  `json:"-"`
	Scored   int            `json:"scored"`
	Families map[string]int `json:"families"`
}

// LearnRun is one condition on one stream.
type LearnRun struct {
	Condition string              `json:"condition"`
	Seed      int64               `json:"seed"`
	Result    *learnstream.Result `json:"result,omitempty"`
	// Families holds attempt 1's mean reward and the best of the attempts' per family.
	Families map[string]FamilyScore `json:"families,omitempty"`
	// Curve is the mean reward of the scored tasks in each CurveWindow tasks of the stream;
	// FamilyCurves, per family, in each FamilyCurveWindow scored tasks of the family.
	Curve        []float64            `json:"curve,omitempty"`
	FamilyCurves map[string][]float64 `json:"family_curves,omitempty"`
	Seconds      float64              `json:"seconds"`
	Error        string               `json:"error,omitempty"`
}

// FamilyScore is one family's reward in one run.
type FamilyScore struct {
	Tasks  int     `json:"tasks"`
	Reward float64 `json:"reward"`
	Best   float64 `json:"best_reward"`
}

// RunLearn generates the streams and runs every condition on each, Parallel runs at a time.
// Runs that fail are reported with their error and make RunLearn return an error at the end, with
// the report of everything else.
func RunLearn(ctx context.Context, cfg LearnConfig) (*LearnReport, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rep := &LearnReport{Config: cfg}
	parsed := make([][]learnstream.Task, cfg.Streams)
	for s := range cfg.Streams {
		seed := cfg.Seed + int64(s)
		st, tasks, err := buildStream(cfg.Suite, seed, cfg.Tasks)
		if err != nil {
			return nil, err
		}
		rep.Streams = append(rep.Streams, st)
		parsed[s] = tasks
	}
	type job struct{ stream, cond int }
	var jobs []job
	for s := range cfg.Streams {
		for c := range cfg.Conditions {
			jobs = append(jobs, job{s, c})
		}
	}
	rep.Runs = make([]LearnRun, len(jobs))
	prog := newLearnProgress(cfg.Progress, len(jobs), cfg.Tasks)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(cfg.Parallel, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				rep.Runs[i] = runCondition(ctx, cfg, rep.Streams[j.stream], parsed[j.stream], cfg.Conditions[j.cond], prog.run(i))
			}
		}()
	}
	for i := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep.summarise()
	var errs []error
	for _, r := range rep.Runs {
		if r.Error != "" {
			errs = append(errs, fmt.Errorf("%s on stream %d: %s", r.Condition, r.Seed, r.Error))
		}
	}
	return rep, errors.Join(errs...)
}

// buildStream generates one stream of suite and reads it back through bench/learnstream, as
// `hippocam learn` would read the file.
func buildStream(suite string, seed int64, n int) (LearnStream, []learnstream.Task, error) {
	st := LearnStream{Seed: seed, Families: map[string]int{}}
	var err error
	if suite == SuiteNumeric {
		st.Numeric, err = GenerateNumericStream(seed, n)
	} else {
		st.Tasks, err = GenerateStream(seed, n)
	}
	if err != nil {
		return LearnStream{}, nil, err
	}
	data, err := st.encode()
	if err != nil {
		return LearnStream{}, nil, err
	}
	parsed, err := learnstream.Read(bytes.NewReader(data))
	if err != nil {
		return LearnStream{}, nil, fmt.Errorf("read generated stream %d: %w", seed, err)
	}
	for _, t := range st.outline() {
		st.Families[t.family]++
		if t.scored {
			st.Scored++
		}
	}
	return st, parsed, nil
}

// taskOutline is what the report needs of one task of a stream: its family and whether it is
// scored.
type taskOutline struct {
	family string
	scored bool
}

// outline lists the stream's tasks in order.
func (st *LearnStream) outline() []taskOutline {
	out := make([]taskOutline, 0, len(st.Tasks)+len(st.Numeric))
	for i := range st.Tasks {
		out = append(out, taskOutline{FamilyOf(st.Tasks[i].Source), st.Tasks[i].Scored()})
	}
	for i := range st.Numeric {
		out = append(out, taskOutline{FamilyOf(st.Numeric[i].Source), st.Numeric[i].Scored()})
	}
	return out
}

// encode writes the stream as JSON Lines.
func (st *LearnStream) encode() ([]byte, error) {
	if len(st.Numeric) > 0 {
		return WriteNumericStream(st.Numeric)
	}
	return WriteStream(st.Tasks)
}

// runCondition runs one condition on one stream and derives the per-family scores and the curve.
func runCondition(ctx context.Context, cfg LearnConfig, st LearnStream, tasks []learnstream.Task, cond string, progress func(done, total int)) LearnRun {
	run := LearnRun{Condition: cond, Seed: st.Seed}
	attempts := 1
	if cond == "best-of-n" || cond == "lessons" || cond == "lessons-append-only" {
		attempts = cfg.Attempts
	}
	start := time.Now()
	res, err := learnstream.Run(ctx, tasks, learnstream.Config{Condition: cond, Attempts: attempts, Window: cfg.Window,
		AdvisoryBudget: cfg.AdvisoryBudget, Prices: cfg.Prices, Progress: progress})
	run.Seconds = time.Since(start).Seconds()
	if err != nil {
		run.Error = err.Error()
		return run
	}
	run.Result = res
	if err := run.derive(st, cfg.CurveWindow); err != nil {
		run.Error = err.Error()
	}
	return run
}

// derive computes the per-family scores and the learning curve from the per-task rewards, which
// the runner lists for the scored tasks in stream order.
func (r *LearnRun) derive(st LearnStream, window int) error {
	res := r.Result
	if len(res.Rewards) != st.Scored {
		return fmt.Errorf("the runner scored %d tasks, the stream has %d with items", len(res.Rewards), st.Scored)
	}
	best := res.BestRewards
	if len(best) != len(res.Rewards) {
		best = res.Rewards // one attempt: the best is the only one
	}
	type acc struct {
		n           int
		reward, top float64
	}
	fams := map[string]*acc{}
	tasks := st.outline()
	curve := make([]acc, (len(tasks)+window-1)/window)
	k := 0
	for i, t := range tasks {
		if !t.scored {
			continue
		}
		a := fams[t.family]
		if a == nil {
			a = &acc{}
			fams[t.family] = a
		}
		a.n++
		a.reward += res.Rewards[k]
		a.top += best[k]
		c := &curve[i/window]
		c.n++
		c.reward += res.Rewards[k]
		k++
	}
	r.Families = map[string]FamilyScore{}
	for f, a := range fams {
		r.Families[f] = FamilyScore{Tasks: a.n, Reward: a.reward / float64(a.n), Best: a.top / float64(a.n)}
	}
	r.Curve = make([]float64, len(curve))
	for i, c := range curve {
		if c.n > 0 {
			r.Curve[i] = c.reward / float64(c.n)
		}
	}
	r.FamilyCurves = familyCurves(tasks, res.Rewards, FamilyCurveWindow)
	return nil
}

// learnProgress turns the runs' own progress into one count over every run.
type learnProgress struct {
	fn    func(done, total int)
	mu    sync.Mutex
	done  []int
	tasks int
}

func newLearnProgress(fn func(done, total int), runs, tasks int) *learnProgress {
	return &learnProgress{fn: fn, done: make([]int, runs), tasks: tasks}
}

// run is the Progress of run i: its done/total is rescaled to the stream's tasks.
func (p *learnProgress) run(i int) func(done, total int) {
	if p.fn == nil {
		return nil
	}
	return func(done, total int) {
		if total <= 0 {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.done[i] = min(done, total) * p.tasks / total
		sum := 0
		for _, d := range p.done {
			sum += d
		}
		p.fn(sum, len(p.done)*p.tasks)
	}
}
