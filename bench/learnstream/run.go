package learnstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// Defaults of Config.
const (
	DefaultAttempts = 4
	DefaultWindow   = 8000
)

// Config says how to run a stream.
type Config struct {
	// Condition is one of Conditions().
	Condition string
	// Attempts is N, the attempts per task of best-of-n, lessons and lessons-append-only (the
	// other conditions make one); DefaultAttempts when 0.
	Attempts int
	// Window is W, the context window of every task's session; DefaultWindow when 0.
	Window int
	// AdvisoryBudget bounds an advisory (and a hippocam cluster's context), in tokens; W/4 when 0.
	AdvisoryBudget int
	// Prices price the usage; hippocam.DefaultPrices when zero.
	Prices hippocam.Prices
	// Progress, when set, is called after each task with the tasks done and the total.
	Progress func(done, total int)
	// Log receives the runner's and the learning components' warnings (router or update given
	// up); nil discards them.
	Log *slog.Logger
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	if c.Attempts == 0 {
		c.Attempts = DefaultAttempts
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.AdvisoryBudget == 0 {
		c.AdvisoryBudget = c.Window / 4
	}
	if c.Prices == (hippocam.Prices{}) {
		c.Prices = hippocam.DefaultPrices
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate checks the configuration once defaults are filled in: a known condition, at least one
// attempt, and a budget below the window. EINVALID otherwise.
func (c Config) Validate() error {
	c = c.withDefaults()
	if _, ok := conditions[c.Condition]; !ok {
		return hippocam.Errorf(hippocam.EINVALID, "unknown condition %q; the conditions are %v", c.Condition, Conditions())
	}
	switch {
	case c.Attempts < 1:
		return hippocam.Errorf(hippocam.EINVALID, "attempts must be at least 1, not %d", c.Attempts)
	case c.AdvisoryBudget < 1 || c.AdvisoryBudget >= c.Window:
		return hippocam.Errorf(hippocam.EINVALID, "the advisory budget must be between 1 and the window (%d), not %d", c.Window, c.AdvisoryBudget)
	}
	ecfg := engine.ForWindow(c.Window)
	return ecfg.Validate()
}

// Result is what one condition did over a stream. Its JSON is one entry of `hippocam learn
// --json`'s results.
type Result struct {
	// ClusterStates are the clusters as the stream left them (not in the JSON output): what a
	// caller exports, e.g. the lessons file of the lessons condition.
	ClusterStates []hippocam.Cluster `json:"-"`
	Condition     string             `json:"condition"`
	// Tasks counts the stream's tasks, ScoredTasks those with an item to score; Attempts is N
	// for this condition.
	Tasks       int `json:"tasks"`
	ScoredTasks int `json:"scored_tasks"`
	Attempts    int `json:"attempts"`
	// MeanReward is the mean over scored tasks of attempt 1's reward; BestReward of the best
	// attempt's (equal to MeanReward when there is one attempt).
	MeanReward float64 `json:"mean_reward"`
	BestReward float64 `json:"best_reward"`
	// CostUSD prices every call: the agent, the engine's roles, the router and the memory systems.
	CostUSD float64                   `json:"cost_usd"`
	Calls   map[hippocam.CallRole]int `json:"calls"`
	// Tokens over every call; UncachedInputTokens is the input the prompt cache did not serve.
	InputTokens         int64 `json:"input_tokens"`
	UncachedInputTokens int64 `json:"uncached_input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	// Clusters counts the clusters made; MemoryEntries what their states hold at the end
	// (hippocam.MemorySystem.Entries: lessons, items, trajectories, messages in context).
	Clusters      int `json:"clusters"`
	MemoryEntries int `json:"memory_entries"`
	// UpdateFailures counts cluster updates given up (a component kept breaking its contract):
	// the cluster was left as it was.
	UpdateFailures int `json:"update_failures"`
	// ConfigFailures counts numeric clusters whose configuration failed for good; ReadFailures
	// task starts whose advisory could not be read (the task ran without one).
	ConfigFailures int `json:"config_failures,omitempty"`
	ReadFailures   int `json:"read_failures,omitempty"`
	// BySource is the mean attempt-1 reward per hidden source.
	BySource map[string]float64 `json:"by_source"`
	// Rewards and BestRewards hold each scored task's reward, in stream order (the learning
	// curve); Entries the memory entries after each task.
	Rewards     []float64      `json:"rewards"`
	BestRewards []float64      `json:"best_rewards"`
	Entries     []int          `json:"entries"`
	Usage       hippocam.Usage `json:"usage"`
	// Routing compares where tasks went with their hidden sources; nil for the conditions
	// without clusters.
	Routing *Routing `json:"routing,omitempty"`
}

// tenant owns every cluster and session of a run.
const tenant = "learn"

// epoch dates the trajectories: task i ends at epoch plus i minutes, so that two runs of one
// stream build the same states.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// runner is one condition's run: a fresh simulated model, store and engine.
type runner struct {
	cfg     Config
	cond    condition
	meter   *learn.Meter
	env     *learn.Env
	eng     *engine.Engine
	store   *inmem.Store
	systems []hippocam.MemorySystem
	// global is the one cluster of a global condition; bySource the cluster of each source under
	// ground-truth ("" when its tasks run stateless); placed the cluster of every task ("" for
	// none), in stream order.
	global   string
	bySource map[string]string
	placed   []string
	created  int
	// stateless counts the tasks that ran without memory because the router gave up.
	stateless int
	res       *Result
}

// Run plays tasks, in order, under cfg.Condition on a fresh in-memory store and a fresh simulated
// model, and reports what happened. The same tasks and configuration give the same Result.
// EINVALID for a configuration Validate refuses or a task whose messages do not fit a
// conversation; other errors are the model's or the store's, naming the task.
func Run(ctx context.Context, tasks []Task, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	for i := range tasks {
		if err := r.task(ctx, i, &tasks[i]); err != nil {
			return nil, fmt.Errorf("task %s: %w", tasks[i].ID, err)
		}
		n, err := r.entries(ctx)
		if err != nil {
			return nil, err
		}
		r.res.Entries = append(r.res.Entries, n)
		if cfg.Progress != nil {
			cfg.Progress(i+1, len(tasks))
		}
	}
	return r.finish(ctx, tasks)
}

func newRunner(cfg Config) (*runner, error) {
	tok, err := tokenizer.Default()
	if err != nil {
		return nil, err
	}
	meter := learn.NewMeter(sim.New(tok).InProcess(), cfg.Prices)
	ecfg := engine.ForWindow(cfg.Window)
	// The main call and JANUS run one after the other: calls made side by side would reach the
	// shared prompt cache in an order that varies from run to run.
	ecfg.Janus = engine.JanusGate
	ecfg.Prices = cfg.Prices
	eng, err := engine.New(ecfg, meter, tok, cfg.Log)
	if err != nil {
		return nil, err
	}
	r := &runner{
		cfg: cfg, cond: conditions[cfg.Condition], meter: meter, eng: eng, store: inmem.New(),
		env:      &learn.Env{Model: meter, Tok: tok, Log: cfg.Log},
		bySource: map[string]string{},
		res: &Result{Condition: cfg.Condition, Attempts: 1, Calls: map[hippocam.CallRole]int{}, BySource: map[string]float64{},
			Rewards: []float64{}, BestRewards: []float64{}, Entries: []int{}},
	}
	if r.cond.many {
		r.res.Attempts = cfg.Attempts
	}
	if r.systems, err = r.cond.build(r.env, cfg.AdvisoryBudget); err != nil {
		return nil, err
	}
	return r, nil
}

// task runs every attempt of one task and updates its cluster once they are all done (after
// the only attempt, when there is one).
func (r *runner) task(ctx context.Context, i int, t *Task) error {
	cluster, err := r.place(ctx, t)
	if err != nil {
		return err
	}
	r.placed = append(r.placed, cluster)
	var trajs []hippocam.Trajectory
	var first, best float64
	for k := 1; k <= r.res.Attempts; k++ {
		spec := hippocam.Task{ID: t.ID, Key: t.ID, Attempt: k, Messages: slices.Clone(t.Messages)}
		var advisory string
		if cluster != "" {
			if advisory, err = r.read(ctx, cluster, &spec); err != nil {
				return err
			}
		}
		session := t.ID
		if r.res.Attempts > 1 {
			session = fmt.Sprintf("%s#%d", t.ID, k)
		}
		msgs, answers, err := r.play(ctx, session, t, advisory, k)
		if err != nil {
			return err
		}
		sc := score(t, answers)
		traj := hippocam.Trajectory{ID: session, Task: spec, Messages: msgs, Feedback: sc.Feedback, EndedAt: epoch.Add(time.Duration(i) * time.Minute)}
		if sc.Scored {
			reward, success := sc.Reward, sc.Reward == 1
			traj.Reward, traj.Success = &reward, &success
		}
		trajs = append(trajs, traj)
		if k == 1 {
			first, best = sc.Reward, sc.Reward
		}
		best = max(best, sc.Reward)
	}
	if t.Items() > 0 {
		r.res.Rewards = append(r.res.Rewards, first)
		r.res.BestRewards = append(r.res.BestRewards, best)
	}
	if cluster == "" {
		return nil
	}
	return r.apply(ctx, cluster, trajs)
}

// play runs one attempt as a new session: the task's framing and messages, one step per user
// message or per complete set of tool results, the advisory entering before the first, and
// seed as the main model's request seed. It returns the trajectory's messages (the session's
// expansion without the advisory and the engine's hidden marks) and every answer, in order.
func (r *runner) play(ctx context.Context, session string, t *Task, advisory string, seed int) ([]hippocam.Message, []string, error) {
	var framing, rest []hippocam.Message
	for i, m := range t.Messages {
		if m.Role != hippocam.RoleSystem {
			rest = t.Messages[i:]
			break
		}
		framing = append(framing, m)
	}
	extra := fmt.Appendf(nil, `{"seed":%d}`, seed)
	var answers, pending []string
	var batch []hippocam.Message
	first := true
	step := func(msgs []hippocam.Message) error {
		in := engine.Input{Messages: msgs, Framing: framing, Extra: extra}
		if first {
			in.NewFraming, in.Advisory, first = len(framing) > 0, advisory, false
		}
		res, err := r.eng.Advance(ctx, r.store, tenant, session, in)
		if err != nil {
			return err
		}
		answers = append(answers, res.Answer.Content)
		pending = res.Answer.CallIDs()
		return nil
	}
	for i, m := range rest {
		m.Kind = hippocam.KindRaw
		switch m.Role {
		case hippocam.RoleTool:
			if len(pending) == 0 {
				return nil, nil, hippocam.Errorf(hippocam.EINVALID, "message %d: a tool result, but the last answer has no tool call waiting for one", len(framing)+i+1)
			}
			m.ToolCallID, pending = pending[0], pending[1:]
			if batch = append(batch, m); len(pending) == 0 {
				if err := step(batch); err != nil {
					return nil, nil, err
				}
				batch = nil
			}
		default:
			if len(pending) > 0 {
				return nil, nil, hippocam.Errorf(hippocam.EINVALID, "message %d: a %s message, but %d tool call(s) of the last answer still wait for results", len(framing)+i+1, m.Role, len(pending))
			}
			if err := step([]hippocam.Message{m}); err != nil {
				return nil, nil, err
			}
		}
	}
	msgs, err := r.trajectory(ctx, session)
	return msgs, answers, err
}

// trajectory is a finished session's expansion, less what is not the task's own: the advisory
// (what memory brought in) and the engine's hidden marks.
func (r *runner) trajectory(ctx context.Context, session string) ([]hippocam.Message, error) {
	s, err := r.store.Session(ctx, tenant, session)
	if err != nil {
		return nil, err
	}
	all, err := hippocam.Expand(ctx, hippocam.SessionArchive(r.store, tenant, session), s.Context)
	if err != nil {
		return nil, fmt.Errorf("expand %s: %w", session, err)
	}
	msgs := make([]hippocam.Message, 0, len(all))
	for _, m := range all {
		if m.Kind != hippocam.KindAdvisory && !m.Kind.Hidden() {
			msgs = append(msgs, m)
		}
	}
	return msgs, nil
}

// system returns the condition's system with the given id.
func (r *runner) system(id string) (hippocam.MemorySystem, error) {
	for _, s := range r.systems {
		if s.Name() == id {
			return s, nil
		}
	}
	return nil, hippocam.Errorf(hippocam.EINTERNAL, "cluster of system %q, which the condition does not offer", id)
}

// read renders a cluster's state for a task.
func (r *runner) read(ctx context.Context, id string, task *hippocam.Task) (string, error) {
	c, err := r.store.Cluster(ctx, tenant, id)
	if err != nil {
		return "", err
	}
	sys, err := r.system(c.System)
	if err != nil {
		return "", err
	}
	// A numeric cluster is configured on its first reuse, before it is read.
	c, result, err := learn.Prepare(ctx, r.store, sys, c, task)
	if err != nil {
		return "", err
	}
	if result == "failed" {
		r.res.ConfigFailures++
	}
	adv, err := sys.Read(ctx, c.State, task, r.cfg.AdvisoryBudget)
	if errors.Is(err, learn.ErrGaveUp) {
		// A numeric cluster whose extractor kept failing on this task: the task runs without
		// advisory, as the proxy runs it.
		r.res.ReadFailures++
		r.cfg.Log.Warn("cluster read given up; the task runs without advisory", "cluster", id, "system", c.System, "err", err)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read cluster %s: %w", id, err)
	}
	return adv.Text, nil
}

// apply updates a cluster with trajs. An update whose components kept breaking their contracts
// leaves the cluster as it was; it is logged and counted.
func (r *runner) apply(ctx context.Context, id string, trajs []hippocam.Trajectory) error {
	c, err := r.store.Cluster(ctx, tenant, id)
	if err != nil {
		return err
	}
	sys, err := r.system(c.System)
	if err != nil {
		return err
	}
	err = learn.Apply(ctx, r.store, sys, tenant, id, trajs)
	if errors.Is(err, learn.ErrGaveUp) {
		r.res.UpdateFailures++
		r.cfg.Log.Warn("cluster update given up; the cluster keeps its state", "cluster", id, "system", c.System, "err", err)
		return nil
	}
	return err
}

// entries counts what every cluster's state holds.
func (r *runner) entries(ctx context.Context) (int, error) {
	cs, err := r.store.Clusters(ctx, tenant)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range cs {
		sys, err := r.system(c.System)
		if err != nil {
			return 0, err
		}
		n += sys.Entries(c.State)
	}
	return n, nil
}

// finish fills in the totals.
func (r *runner) finish(ctx context.Context, tasks []Task) (*Result, error) {
	res := r.res
	res.Tasks, res.ScoredTasks = len(tasks), len(res.Rewards)
	res.MeanReward, res.BestReward = mean(res.Rewards), mean(res.BestRewards)
	sums, counts := map[string]float64{}, map[string]int{}
	j := 0
	for i := range tasks {
		if tasks[i].Items() == 0 {
			continue
		}
		sums[tasks[i].Source] += res.Rewards[j]
		counts[tasks[i].Source]++
		j++
	}
	for _, src := range slices.Sorted(maps.Keys(sums)) {
		res.BySource[src] = sums[src] / float64(counts[src])
	}
	res.Usage = r.meter.Usage()
	total := res.Usage.Total()
	for role, u := range res.Usage {
		res.Calls[role] = u.Calls
	}
	res.CostUSD, res.InputTokens, res.OutputTokens = total.CostUSD, total.Input, total.Output
	res.UncachedInputTokens = total.Input - total.CachedInput
	cs, err := r.store.Clusters(ctx, tenant)
	if err != nil {
		return nil, err
	}
	res.Clusters, res.ClusterStates = len(cs), cs
	if n := len(res.Entries); n > 0 {
		res.MemoryEntries = res.Entries[n-1]
	}
	if r.cond.placement != noMemory {
		res.Routing = routing(tasks, r.placed)
		res.Routing.Stateless = r.stateless
	}
	return res, nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
