package engine_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"pgregory.net/rapid"
)

// An action of an interleaving: a step's user message, or a consolidation job that begins (its
// model calls run on the session as it is) or lands (its result is rebased and committed).
type action struct {
	text      string // a step's message
	results   []string
	begin     bool
	land      bool
	callsTool bool // the step calls a tool: results follow as the next step
}

// Random interleavings of steps and consolidation jobs: a job computed on one version and
// committed after later steps (rebased) commits cleanly with the store's checks, loses no
// message, splits no tool exchange, gives its memories fresh ids that their text names, removes
// from the pending work exactly what it did, and never does again what a step did meanwhile.
// When no step in flight had to consolidate (no fold, no pending work run first), the session
// ends as it does when each job commits before the steps that followed it.
func TestRebaseInterleavings(t *testing.T) {
	model := mustSim(t)
	rapid.Check(t, func(rt *rapid.T) {
		cfg := engine.ForWindow(rapid.SampledFrom([]int{4000, 6000, 8000}).Draw(rt, "window"))
		cfg.MaxLag = rapid.SampledFrom([]int{0, 2, 50, 50, 50}).Draw(rt, "maxLag")
		asks := rapid.Bool().Draw(rt, "asks")
		script := interleaving(rt, asks)
		c, flight, clean := runInterleaved(rt, cfg, model, script)
		if !clean || asks {
			return // steps in flight consolidated, or answered from what the job changed
		}
		seq, clean := runSequential(rt, cfg, model, script, flight)
		if !clean {
			return
		}
		if a, b := canonicalTree(rt, c), canonicalTree(rt, seq); !slices.Equal(a, b) {
			for i := range min(len(a), len(b)) {
				if a[i] != b[i] {
					rt.Fatalf("rebased and in-order runs differ at line %d:\n%s\nin order:\n%s", i, a[i], b[i])
				}
			}
			rt.Fatalf("rebased run has %d lines, in-order run %d", len(a), len(b))
		}
	})
}

// interleaving draws a script of steps (nested intents opened and closed, facts, tool calls
// with results, questions when asks) with jobs beginning and landing between them.
func interleaving(rt *rapid.T, asks bool) []action {
	var out []action
	var open []string
	var details []string
	n := rapid.IntRange(4, 32).Draw(rt, "steps")
	for i := 0; i < n; i++ {
		switch rapid.IntRange(0, 3).Draw(rt, "jobOp") {
		case 0:
			out = append(out, action{begin: true})
		case 1:
			out = append(out, action{land: true})
		}
		var a action
		switch op := rapid.IntRange(0, 5).Draw(rt, "op"); {
		case op <= 1 && len(open) < 3:
			label := fmt.Sprintf("Task %d", i)
			open = append(open, label)
			a.text = fmt.Sprintf("#open %s | task %d is done\n!say on it", label, i)
		case op <= 2 && len(open) > 0:
			k := rapid.IntRange(1, len(open)).Draw(rt, "closeCount")
			var lines []string
			for j := 0; j < k; j++ {
				lines = append(lines, "#close "+open[len(open)-1])
				open = open[:len(open)-1]
			}
			a.text = strings.Join(lines, "\n") + "\n!say closed"
		case op == 3:
			d := fmt.Sprintf("d%d", i)
			details = append(details, d)
			a.text = fmt.Sprintf("!call read_file {\"path\":\"f%d\"}", i)
			a.callsTool = true
			a.results = []string{fmt.Sprintf("detail %s := v%d\n%s", d, i, filler(fmt.Sprintf("f%d", i), rapid.IntRange(2, 60).Draw(rt, "rows")))}
		case op == 4 && asks && len(details) > 0:
			a.text = "!ask " + details[rapid.IntRange(0, len(details)-1).Draw(rt, "ask")]
		default:
			a.text = fmt.Sprintf("k%d := w%d\n%s!say noted", rapid.IntRange(0, 5).Draw(rt, "key"), i, filler(fmt.Sprintf("n%d", i), rapid.IntRange(0, 40).Draw(rt, "rows")))
		}
		out = append(out, a)
	}
	return out
}

// play runs the script's step a and its tool results, if any, and returns their results.
func (c *conversation) play(rt *rapid.T, a action) []*engine.Result {
	rt.Helper()
	res, err := c.user(a.text)
	if err != nil {
		rt.Fatalf("%q: %v", firstLine(a.text), err)
	}
	out := []*engine.Result{res}
	if a.callsTool && len(res.Answer.ToolCalls) == len(a.results) {
		more, err := c.results(a.results...)
		if err != nil {
			rt.Fatalf("results of %q: %v", firstLine(a.text), err)
		}
		out = append(out, more)
	}
	return out
}

// runInterleaved plays the script with jobs that land after the steps between their beginning
// and their landing, rebased, checking every landing. It returns the conversation after every
// job and the pending work left have run; for each action of the script, whether a job began
// there (a job beginning) or was in flight (a step); and whether no step consolidated anything
// while a job was in flight.
func runInterleaved(rt *rapid.T, cfg engine.Config, model hippocam.Model, script []action) (*conversation, []bool, bool) {
	ctx := context.Background()
	c := newConversation(rt, mustEngine(rt, cfg, model))
	c.mode = consolidateNext
	var job *engine.Result
	var base *hippocam.Session
	flight := make([]bool, len(script))
	clean := true
	for i, a := range script {
		switch {
		case a.begin:
			if job != nil || len(c.sent) == 0 {
				continue
			}
			s := c.session()
			if s.Pending.Empty() {
				continue
			}
			res, err := c.e.Consolidate(ctx, s, hippocam.SessionArchive(c.st, "", c.id))
			if err != nil {
				rt.Fatal(err)
			}
			job, base = res, s
			flight[i] = true
		case a.land:
			if job != nil {
				land(rt, c, base, job)
				job = nil
			}
		default:
			flight[i] = job != nil
			for _, res := range c.play(rt, a) {
				if job != nil && consolidated(res) {
					clean = false
				}
			}
		}
	}
	if job != nil {
		land(rt, c, base, job)
	}
	drain(rt, c)
	return c, flight, clean
}

// consolidated reports whether a step consolidated anything before answering.
func consolidated(res *engine.Result) bool { return res.RanPending || res.PrefixConsolidations > 0 }

// runSequential plays the script with each job that began in the interleaved run (flight)
// committed at once, before the steps that followed it. It reports whether no step that was in
// flight in the interleaved run consolidated anything here either.
func runSequential(rt *rapid.T, cfg engine.Config, model hippocam.Model, script []action, flight []bool) (*conversation, bool) {
	ctx := context.Background()
	c := newConversation(rt, mustEngine(rt, cfg, model))
	c.mode = consolidateNext
	clean := true
	for i, a := range script {
		switch {
		case a.begin:
			if !flight[i] {
				continue
			}
			res, err := c.e.Consolidate(ctx, c.session(), hippocam.SessionArchive(c.st, "", c.id))
			if err != nil {
				rt.Fatal(err)
			}
			if err := c.st.Commit(ctx, res.Session, res.Change); err != nil {
				rt.Fatal(err)
			}
		case a.land:
		default:
			for _, res := range c.play(rt, a) {
				if flight[i] && consolidated(res) {
					clean = false
				}
			}
		}
	}
	drain(rt, c)
	return c, clean
}

// land rebases job, computed on base, onto the stored session, commits it and checks the result.
func land(rt *rapid.T, c *conversation, base *hippocam.Session, job *engine.Result) {
	rt.Helper()
	ctx := context.Background()
	newer := c.session()
	out, err := c.e.Rebase(newer, job)
	if err != nil {
		rt.Fatalf("rebase: %v", err)
	}
	did, now := pendingKeys(base.Pending), pendingKeys(newer.Pending)
	still := 0
	for _, k := range did {
		if slices.Contains(now, k) {
			still++
		}
	}
	own := func(r *engine.Result) int { return r.IntentConsolidations + r.Reinforced }
	switch still {
	case 0: // a step ran it all meanwhile: nothing is done twice
		if len(out.Change.Ops) != 0 || own(out) != 0 {
			rt.Fatalf("the job's work was done by a step, yet the rebased job has %d ops", len(out.Change.Ops))
		}
	case len(did): // the job's own memories always land: their spans are protected
		if own(out) != own(job) {
			rt.Fatalf("the rebased job placed %d of its %d memories", own(out), own(job))
		}
	default:
		rt.Fatalf("%d of the job's %d pieces of work are still pending: a step ran part of it", still, len(did))
	}
	var want []string
	for _, k := range now {
		if !slices.Contains(did, k) {
			want = append(want, k)
		}
	}
	if got := pendingKeys(out.Session.Pending); !slices.Equal(got, want) {
		rt.Fatalf("pending after the job %v, want %v (before %v, the job did %v)", got, want, now, did)
	}
	if (len(out.Change.Jobs) > 0) != (len(want) > 0) {
		rt.Fatalf("the commit enqueues %d jobs with %d pieces of work left", len(out.Change.Jobs), len(want))
	}
	if err := c.st.Commit(ctx, out.Session, out.Change); err != nil {
		rt.Fatalf("committing the rebased job (%d ops over version %d, from %d): %v", len(out.Change.Ops), newer.Version, job.Change.From, err)
	}
	c.checkConsistent()
}

// drain runs the pending work left until none is.
func drain(rt *rapid.T, c *conversation) {
	rt.Helper()
	ctx := context.Background()
	for i := 0; !c.session().Pending.Empty(); i++ {
		if i > 3 {
			rt.Fatalf("work still pending after %d jobs: %+v", i, c.session().Pending)
		}
		res, err := c.e.Consolidate(ctx, c.session(), hippocam.SessionArchive(c.st, "", c.id))
		if err != nil {
			rt.Fatal(err)
		}
		if err := c.st.Commit(ctx, res.Session, res.Change); err != nil {
			rt.Fatal(err)
		}
	}
	c.checkConsistent()
	for _, m := range c.session().Context {
		if m.Kind == hippocam.KindRecall {
			rt.Fatalf("recall exchange %s left in the context with nothing pending", m.ID)
		}
	}
}

// checkConsistent checks the stored session: nothing lost and whole tool exchanges
// (checkLossless), every id once and within the session's sequence, every memory naming its own
// ref, and every recall exchange in the context waiting for the reinforcement of the answer
// right after it.
func (c *conversation) checkConsistent() {
	c.tb.Helper()
	c.checkLossless()
	ctx := context.Background()
	s := c.session()
	arch := hippocam.SessionArchive(c.st, "", c.id)
	all, err := hippocam.Expand(ctx, arch, s.Context)
	if err != nil {
		c.tb.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func([]hippocam.Message)
	walk = func(layer []hippocam.Message) {
		for _, m := range layer {
			if !m.Consolidated() {
				continue
			}
			if !m.Kind.Hidden() && !strings.HasPrefix(m.Content, hippocam.RefTag(m.Ref)) {
				c.tb.Fatalf("memory %s does not begin with its ref %s: %q", m.ID, m.Ref, firstLine(m.Content))
			}
			for _, id := range []string{m.ID, m.Ref} {
				if seen[id] || idSeq(id) > s.Seq {
					c.tb.Fatalf("id %s twice, or past the sequence %d", id, s.Seq)
				}
				seen[id] = true
			}
			kids, err := arch.Children(ctx, m.Ref)
			if err != nil {
				c.tb.Fatal(err)
			}
			walk(kids)
		}
	}
	walk(s.Context)
	for _, m := range all {
		if seen[m.ID] || idSeq(m.ID) > s.Seq {
			c.tb.Fatalf("id %s twice, or past the sequence %d", m.ID, s.Seq)
		}
		seen[m.ID] = true
	}
	waiting := map[string]bool{}
	if s.Pending != nil {
		for _, r := range s.Pending.Reinforce {
			waiting[r.Answer] = true
		}
	}
	for i, m := range s.Context {
		if m.Kind != hippocam.KindRecall {
			continue
		}
		j := i
		for j < len(s.Context) && s.Context[j].Kind == hippocam.KindRecall {
			j++
		}
		if j == len(s.Context) || !waiting[s.Context[j].ID] {
			c.tb.Fatalf("recall exchange %s is in the context with no reinforcement pending after it", m.ID)
		}
	}
}

// pendingKeys lists the keys of p's work.
func pendingKeys(p *hippocam.Pending) []string {
	var keys []string
	if p == nil {
		return nil
	}
	for _, r := range p.Reinforce {
		keys = append(keys, r.Key())
	}
	for _, c := range p.Closures {
		keys = append(keys, c.Key())
	}
	return keys
}

func idSeq(id string) int64 {
	var n int64
	fmt.Sscanf(strings.TrimLeft(id, "abcdefghijklmnopqrstuvwxyz"), "%d", &n)
	return n
}

// idToken finds the session's ids and refs in text.
var idToken = regexp.MustCompile(`\b[mr][0-9]+\b`)

// canonicalTree lists the session's tree depth first, one line per message (depth, role, kind,
// text, calls), with its ids, refs and tool-call ids, wherever they appear, named by the order in
// which the walk meets them: two sessions built alike list the same, whatever their ids are.
func canonicalTree(rt *rapid.T, c *conversation) []string {
	ctx := context.Background()
	arch := hippocam.SessionArchive(c.st, "", c.id)
	names := map[string]string{}
	name := func(id string) string {
		if id == "" {
			return ""
		}
		if n, ok := names[id]; ok {
			return n
		}
		names[id] = fmt.Sprintf("#%d", len(names))
		return names[id]
	}
	var out []string
	var walk func(depth int, layer []hippocam.Message)
	walk = func(depth int, layer []hippocam.Message) {
		for _, m := range layer {
			line := fmt.Sprintf("%d %s %s %s %s %q %s", depth, name(m.ID), name(m.Ref), m.Role, m.Kind,
				idToken.ReplaceAllStringFunc(m.Content, name), name(m.ToolCallID))
			for _, call := range m.ToolCalls { // the simulated model's call ids hash its request
				line += " " + name(call.ID) + " " + call.Name + call.Arguments
			}
			out = append(out, line)
			if m.Consolidated() {
				kids, err := arch.Children(ctx, m.Ref)
				if err != nil {
					rt.Fatal(err)
				}
				walk(depth+1, kids)
			}
		}
	}
	walk(0, c.session().Context)
	return out
}

// A job whose session did not move is committed as it is; one rebased twice, or onto another
// session, is refused.
func TestRebaseRefuses(t *testing.T) {
	ctx := context.Background()
	c := newConversation(t, mustEngine(t, gateWindow(8000), mustSim(t)))
	c.mode = consolidateNext
	c.mustUser("#open Read the exports | both exports are read\n!say reading")
	c.mustUser("#close Read the exports\n!say done")
	s := c.session()
	job, err := c.e.Consolidate(ctx, s, hippocam.SessionArchive(c.st, "", c.id))
	if err != nil {
		t.Fatal(err)
	}
	if same, err := c.e.Rebase(s, job); err != nil || same != job {
		t.Fatalf("rebase onto its own version: %v (same result: %v)", err, same == job)
	}
	c.mustUser("!say more")
	newer := c.session()
	out, err := c.e.Rebase(newer, job)
	if err != nil || out.Change.From != newer.Version || out.IntentConsolidations != 1 {
		t.Fatalf("rebase: %v, %+v", err, out)
	}
	if _, err := c.e.Rebase(newer, out); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("a rebased result rebased again: %v", err)
	}
	other := newer.Clone()
	other.ID = "s2"
	if _, err := c.e.Rebase(other, job); hippocam.ErrorCode(err) != hippocam.ECONFLICT {
		t.Fatalf("rebased onto another session: %v", err)
	}
	if err := c.st.Commit(ctx, out.Session, out.Change); err != nil {
		t.Fatal(err)
	}
	c.checkConsistent()
}

// Consolidation jobs that land only after a later step, rebased, carry their intent memories
// and their ordinary folds over, also a fold that takes in a memory the same job wrote (under an
// id it renumbers); nothing is lost and every question is answered right.
func TestRebasedJobsCarryFolds(t *testing.T) {
	cfg := engine.ForWindow(16000)
	cfg.MaxLag = 20 // two closures wait for one job
	c := newConversation(t, mustEngine(t, cfg, mustSim(t)))
	c.mode = consolidateNext
	step := func(text string, results ...string) {
		t.Helper()
		c.mustUser(text)
		if len(results) > 0 {
			c.mustResults(results...)
		}
		// A job begins once two closures wait, and lands after the next step.
		if err := c.landJob(); err != nil {
			t.Fatal(err)
		}
		if p := c.session().Pending; p != nil && len(p.Closures) >= 2 {
			if err := c.beginJob(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k := 0; k < 16 && c.landed.chained == 0; k++ {
		step(fmt.Sprintf("k%d := w%d\n%s!say noted", k, k, filler(fmt.Sprintf("n%d", k), 20)))
		step(fmt.Sprintf("#open Task %d | task %d is done\n!say on it", k, k))
		step(fmt.Sprintf("!call read_file {\"path\":\"f%d\"}", k), fmt.Sprintf("detail d%d := v%d\n%s", k, k, filler(fmt.Sprintf("f%d", k), 20)))
		step(fmt.Sprintf("#close Task %d\n!say closed", k))
	}
	t.Logf("%+v", c.landed)
	if c.landed.prefix == 0 || c.landed.rebased == 0 || c.landed.chained == 0 || c.landed.dropped != 0 {
		t.Fatalf("no rebased job carried a fold of its own memory over: %+v", c.landed)
	}
	for _, k := range []int{0, 1} {
		if res := c.mustUser(fmt.Sprintf("!ask d%d", k)); res.Answer.Content != fmt.Sprintf("d%d := v%d", k, k) {
			t.Fatalf("asked d%d: %q", k, res.Answer.Content)
		}
	}
	if err := c.landJob(); err != nil {
		t.Fatal(err)
	}
	c.checkConsistent()
}
