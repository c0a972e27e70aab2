package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/hippocam/hippocam"
)

// LearnReport is what `hippocam bench learn` measured: the streams, every run, a summary per
// condition over the streams and the suite's targets, reported, never asserted.
type LearnReport struct {
	Config LearnConfig `json:"config"`
	// Commit is the revision measured, when the caller knows it.
	Commit  string         `json:"commit,omitempty"`
	Streams []LearnStream  `json:"streams"`
	Runs    []LearnRun     `json:"runs"`
	Summary []LearnSummary `json:"summary"`
	Targets []LearnTarget  `json:"targets"`
}

// LearnSummary is one condition over every stream it ran on without error: means per stream,
// and the range of the mean reward.
type LearnSummary struct {
	Condition string `json:"condition"`
	Streams   int    `json:"streams"`
	// Reward is attempt 1's mean reward; Best the best of the attempts (the same with one).
	Reward    float64 `json:"mean_reward"`
	RewardMin float64 `json:"mean_reward_min"`
	RewardMax float64 `json:"mean_reward_max"`
	Best      float64 `json:"best_reward"`
	CostUSD   float64 `json:"cost_usd"`
	// RewardPerUSD is the reward summed over a stream's scored tasks per dollar spent on it.
	RewardPerUSD float64 `json:"reward_per_usd"`
	// CostByRole and Calls are per stream, by call role.
	CostByRole          map[hippocam.CallRole]float64 `json:"cost_by_role"`
	Calls               map[hippocam.CallRole]float64 `json:"calls"`
	InputTokens         float64                       `json:"input_tokens"`
	UncachedInputTokens float64                       `json:"uncached_input_tokens"`
	OutputTokens        float64                       `json:"output_tokens"`
	// Entries is what the memory holds at the end; EntriesCurve after each task of the stream.
	Entries      float64   `json:"memory_entries"`
	EntriesCurve []float64 `json:"entries_curve"`
	Clusters     float64   `json:"clusters"`
	// Curve is the learning curve: mean reward per CurveWindow tasks. FamilyCurves are the
	// families' own, per FamilyCurveWindow scored tasks of the family.
	Curve        []float64              `json:"curve"`
	FamilyCurves map[string][]float64   `json:"family_curves,omitempty"`
	Families     map[string]FamilyScore `json:"families"`
	// Routing is averaged over the streams (nil for conditions without a router).
	Routing *LearnRouting `json:"routing,omitempty"`
	// UpdateFailures counts the cluster updates given up per stream.
	UpdateFailures float64 `json:"update_failures"`
	Seconds        float64 `json:"seconds"`
}

// LearnRouting is the router's agreement with the hidden sources, per stream.
type LearnRouting struct {
	Agreement float64 `json:"agreement"`
	OverSplit float64 `json:"over_split"`
	Merged    float64 `json:"merged"`
	Stateless float64 `json:"stateless"`
}

// LearnTarget is one target of the learning benchmark and how this run did against it.
type LearnTarget struct {
	Target string `json:"target"`
	Got    string `json:"got"`
	Met    bool   `json:"met"`
}

// summarise fills Summary and Targets from Runs.
func (r *LearnReport) summarise() {
	r.Summary = nil
	for _, cond := range r.Config.Conditions {
		var runs []*LearnRun
		for i := range r.Runs {
			if r.Runs[i].Condition == cond && r.Runs[i].Error == "" && r.Runs[i].Result != nil {
				runs = append(runs, &r.Runs[i])
			}
		}
		if len(runs) > 0 {
			r.Summary = append(r.Summary, summariseRuns(cond, runs))
		}
	}
	if r.Config.Suite == SuiteNumeric {
		r.Targets = numericTargets(r.Summary)
	} else {
		r.Targets = learnTargets(r.Summary, r.Config.Attempts)
	}
}

func summariseRuns(cond string, runs []*LearnRun) LearnSummary {
	s := LearnSummary{Condition: cond, Streams: len(runs), RewardMin: math.Inf(1), RewardMax: math.Inf(-1),
		CostByRole: map[hippocam.CallRole]float64{}, Calls: map[hippocam.CallRole]float64{}, Families: map[string]FamilyScore{},
		FamilyCurves: map[string][]float64{}}
	n := float64(len(runs))
	var rewardSum, costSum float64
	var routing LearnRouting
	routed := 0
	famN := map[string]int{}
	for _, run := range runs {
		res := run.Result
		s.Reward += res.MeanReward / n
		s.RewardMin, s.RewardMax = min(s.RewardMin, res.MeanReward), max(s.RewardMax, res.MeanReward)
		s.Best += res.BestReward / n
		s.CostUSD += res.CostUSD / n
		for _, x := range res.Rewards {
			rewardSum += x
		}
		costSum += res.CostUSD
		for role, u := range res.Usage {
			s.CostByRole[role] += u.CostUSD / n
		}
		for role, c := range res.Calls {
			s.Calls[role] += float64(c) / n
		}
		s.InputTokens += float64(res.InputTokens) / n
		s.UncachedInputTokens += float64(res.UncachedInputTokens) / n
		s.OutputTokens += float64(res.OutputTokens) / n
		s.Entries += float64(res.MemoryEntries) / n
		s.Clusters += float64(res.Clusters) / n
		s.UpdateFailures += float64(res.UpdateFailures) / n
		s.Curve = addScaled(s.Curve, run.Curve, 1/n)
		for f, c := range run.FamilyCurves {
			s.FamilyCurves[f] = addScaled(s.FamilyCurves[f], c, 1/n)
		}
		entries := make([]float64, len(res.Entries))
		for i, e := range res.Entries {
			entries[i] = float64(e)
		}
		s.EntriesCurve = addScaled(s.EntriesCurve, entries, 1/n)
		for f, fs := range run.Families {
			acc := s.Families[f]
			acc.Tasks += fs.Tasks
			acc.Reward += fs.Reward
			acc.Best += fs.Best
			s.Families[f] = acc
			famN[f]++
		}
		if res.Routing != nil {
			routed++
			routing.Agreement += res.Routing.Agreement
			routing.OverSplit += float64(res.Routing.OverSplit)
			routing.Merged += float64(res.Routing.Merged)
			routing.Stateless += float64(res.Routing.Stateless)
		}
		s.Seconds += run.Seconds
	}
	for f, acc := range s.Families {
		k := float64(famN[f])
		s.Families[f] = FamilyScore{Tasks: int(math.Round(float64(acc.Tasks) / k)), Reward: acc.Reward / k, Best: acc.Best / k}
	}
	if costSum > 0 {
		s.RewardPerUSD = rewardSum / costSum
	}
	if routed > 0 {
		k := float64(routed)
		s.Routing = &LearnRouting{Agreement: routing.Agreement / k, OverSplit: routing.OverSplit / k, Merged: routing.Merged / k, Stateless: routing.Stateless / k}
	}
	return s
}

// addScaled adds w·xs to acc, element by element, growing acc to the longer of the two.
func addScaled(acc, xs []float64, w float64) []float64 {
	for len(acc) < len(xs) {
		acc = append(acc, 0)
	}
	for i, x := range xs {
		acc[i] += w * x
	}
	return acc
}

// learnTargets checks the summary against the suite's targets; a target whose conditions did
// not run is left out.
func learnTargets(sums []LearnSummary, attempts int) []LearnTarget {
	by := map[string]*LearnSummary{}
	for i := range sums {
		by[sums[i].Condition] = &sums[i]
	}
	var out []LearnTarget
	have := func(names ...string) bool {
		for _, n := range names {
			if by[n] == nil {
				return false
			}
		}
		return true
	}
	if have("routed-cl", "routed-icl") {
		a, b := by["routed-cl"].Reward, by["routed-icl"].Reward
		out = append(out, LearnTarget{"routed-cl above routed-icl", fmt.Sprintf("%.3f against %.3f", a, b), a > b})
	}
	if have("routed-icl", "global-icl") {
		a, b := by["routed-icl"].Reward, by["global-icl"].Reward
		out = append(out, LearnTarget{"routed-icl well above global-icl (by 0.1 or more)", fmt.Sprintf("%.3f against %.3f (%+.3f)", a, b, a-b), a-b >= 0.1})
	}
	if have("global-icl", "stateless") {
		a, b := by["global-icl"].Reward, by["stateless"].Reward
		out = append(out, LearnTarget{"global-icl barely above stateless (0 to 0.15)", fmt.Sprintf("%.3f against %.3f (%+.3f)", a, b, a-b), a >= b && a-b <= 0.15})
	}
	if have("routed-cl", "global-icl") && by["global-icl"].CostUSD > 0 {
		ratio := by["routed-cl"].CostUSD / by["global-icl"].CostUSD
		out = append(out, LearnTarget{"routed-cl costs at most 0.6× global-icl", fmt.Sprintf("%.2f×", ratio), ratio <= 0.6})
	}
	if have("lessons", "lessons-append-only") {
		l, a := by["lessons"], by["lessons-append-only"]
		ratio := 0.0
		if a.Entries > 0 {
			ratio = l.Entries / a.Entries
		}
		out = append(out, LearnTarget{"lessons keeps at most 0.6× the entries of lessons-append-only",
			fmt.Sprintf("%.1f against %.1f entries (%.2f×)", l.Entries, a.Entries, ratio), a.Entries > 0 && ratio <= 0.6})
		out = append(out, LearnTarget{"lessons' reward at least lessons-append-only's",
			fmt.Sprintf("%.3f against %.3f", l.Reward, a.Reward), l.Reward >= a.Reward})
	}
	if have("lessons", "best-of-n") {
		l, b := by["lessons"].Best, by["best-of-n"].Best
		out = append(out, LearnTarget{fmt.Sprintf("lessons' best of %d at least best-of-n's", attempts),
			fmt.Sprintf("%.3f against %.3f", l, b), l >= b})
	}
	return out
}

// WriteJSON writes r as one JSON object.
func (r *LearnReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Markdown renders r as tables: the overview per condition, the families, the learning curves,
// memory over the stream, cost by role and the targets.
func (r *LearnReport) Markdown() string {
	var b strings.Builder
	c := r.Config
	part := "docs/sim.md part 2"
	if c.Suite == SuiteNumeric {
		part = "docs/sim.md part 3, the numeric tasks"
	}
	fmt.Fprintf(&b, "# Learning benchmark\n\nSimulated model (%s), suite %s: %d stream(s) of %d tasks from seed %d, W = %s, advisory budget %s, N = %d attempts for best-of-n and lessons. Prices in USD per million tokens: uncached input %g, cached input %g, output %g.",
		part, c.Suite, c.Streams, c.Tasks, c.Seed, thousands(int64(c.Window)), budgetText(c), c.Attempts, c.Prices.Input, c.Prices.CachedInput, c.Prices.Output)
	if r.Commit != "" {
		fmt.Fprintf(&b, " Commit %s.", r.Commit)
	}
	b.WriteString("\n\n")
	r.overviewTable(&b)
	r.familyTable(&b)
	r.curveTable(&b)
	r.familyCurveTables(&b)
	r.entriesTable(&b)
	r.roleTable(&b)
	if len(r.Targets) > 0 {
		b.WriteString("\n## Targets (reported, not asserted)\n\n| target | measured | met |\n| --- | --- | --- |\n")
		for _, t := range r.Targets {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", t.Target, t.Got, map[bool]string{true: "yes", false: "no"}[t.Met])
		}
	}
	var failed []string
	for _, run := range r.Runs {
		if run.Error != "" {
			failed = append(failed, fmt.Sprintf("- %s on stream %d: %s", run.Condition, run.Seed, run.Error))
		}
	}
	if len(failed) > 0 {
		b.WriteString("\n## Failed runs\n\n" + strings.Join(failed, "\n") + "\n")
	}
	return b.String()
}

func budgetText(c LearnConfig) string {
	if c.AdvisoryBudget > 0 {
		return thousands(int64(c.AdvisoryBudget)) + " tokens"
	}
	return "W/4"
}

func (r *LearnReport) overviewTable(b *strings.Builder) {
	b.WriteString("## Conditions\n\nMeans per stream; the reward's range over the streams in brackets.\n\n")
	b.WriteString("| condition | mean reward | best of N | cost USD | × global-icl | reward per USD | memory entries | clusters | routing agreement | over-split | merged | router gave up | updates given up | seconds |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	var global float64
	for _, s := range r.Summary {
		if s.Condition == "global-icl" {
			global = s.CostUSD
		}
	}
	for _, s := range r.Summary {
		ratio := "–"
		if global > 0 {
			ratio = fmt.Sprintf("%.2f", s.CostUSD/global)
		}
		agree, over, merged, gave := "–", "–", "–", "–"
		if s.Routing != nil {
			agree = fmt.Sprintf("%.3f", s.Routing.Agreement)
			over, merged, gave = fmt.Sprintf("%.1f", s.Routing.OverSplit), fmt.Sprintf("%.1f", s.Routing.Merged), fmt.Sprintf("%.1f", s.Routing.Stateless)
		}
		rng := ""
		if s.Streams > 1 {
			rng = fmt.Sprintf(" [%.3f–%.3f]", s.RewardMin, s.RewardMax)
		}
		fmt.Fprintf(b, "| %s | %.3f%s | %.3f | %.4f | %s | %.0f | %.1f | %.1f | %s | %s | %s | %s | %.1f | %.1f |\n",
			s.Condition, s.Reward, rng, s.Best, s.CostUSD, ratio, s.RewardPerUSD, s.Entries, s.Clusters, agree, over, merged, gave, s.UpdateFailures, s.Seconds)
	}
}

func (r *LearnReport) familyTable(b *strings.Builder) {
	fams := suiteFamilies(r.Config.Suite)
	b.WriteString("\n## Families\n\nMean reward of attempt 1 per family; for conditions with N attempts, the best of them after the slash.\n\n| condition |")
	for _, f := range fams {
		fmt.Fprintf(b, " %s |", f.Source)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(fams)) + "\n")
	for _, s := range r.Summary {
		fmt.Fprintf(b, "| %s |", s.Condition)
		for _, f := range fams {
			fs, ok := s.Families[f.Source]
			switch {
			case !ok:
				b.WriteString(" – |")
			case s.Best != s.Reward || s.Condition == "best-of-n" || strings.HasPrefix(s.Condition, "lessons"):
				fmt.Fprintf(b, " %.2f / %.2f |", fs.Reward, fs.Best)
			default:
				fmt.Fprintf(b, " %.2f |", fs.Reward)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| family | what it tests | scored tasks per stream |\n| --- | --- | ---: |\n")
	for _, f := range fams {
		n := 0
		for _, s := range r.Summary {
			if fs, ok := s.Families[f.Source]; ok {
				n = fs.Tasks
				break
			}
		}
		fmt.Fprintf(b, "| %s | %s | %d |\n", f.Source, f.Kind, n)
	}
}

func (r *LearnReport) curveTable(b *strings.Builder) {
	w := r.Config.CurveWindow
	cols := 0
	for _, s := range r.Summary {
		cols = max(cols, len(s.Curve))
	}
	if cols == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Learning curves\n\nMean reward of the scored tasks in each %d tasks of the stream.\n\n| condition |", w)
	for i := range cols {
		fmt.Fprintf(b, " %d–%d |", i*w+1, min((i+1)*w, r.Config.Tasks))
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", cols) + "\n")
	for _, s := range r.Summary {
		fmt.Fprintf(b, "| %s |", s.Condition)
		for _, v := range s.Curve {
			fmt.Fprintf(b, " %.2f |", v)
		}
		b.WriteString("\n")
	}
}

func (r *LearnReport) entriesTable(b *strings.Builder) {
	n := r.Config.Tasks
	points := []int{n / 4, n / 2, 3 * n / 4, n}
	b.WriteString("\n## Memory over the stream\n\nEntries the condition's memory holds after a quarter, half, three quarters and all of the stream.\n\n| condition |")
	for _, p := range points {
		fmt.Fprintf(b, " after %d |", p)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(points)) + "\n")
	for _, s := range r.Summary {
		fmt.Fprintf(b, "| %s |", s.Condition)
		for _, p := range points {
			if p >= 1 && p <= len(s.EntriesCurve) {
				fmt.Fprintf(b, " %.1f |", s.EntriesCurve[p-1])
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}
}

func (r *LearnReport) roleTable(b *strings.Builder) {
	roleSet := map[hippocam.CallRole]bool{}
	for _, s := range r.Summary {
		for role := range s.CostByRole {
			roleSet[role] = true
		}
	}
	roles := slices.Sorted(maps.Keys(roleSet))
	if len(roles) == 0 {
		return
	}
	b.WriteString("\n## Cost by role\n\nUSD per stream, with the calls per stream in brackets.\n\n| condition |")
	for _, role := range roles {
		fmt.Fprintf(b, " %s |", role)
	}
	b.WriteString(" input tokens | uncached input | output tokens |\n| --- |" + strings.Repeat(" ---: |", len(roles)+3) + "\n")
	for _, s := range r.Summary {
		fmt.Fprintf(b, "| %s |", s.Condition)
		for _, role := range roles {
			if c, ok := s.CostByRole[role]; ok {
				fmt.Fprintf(b, " %.4f (%.0f) |", c, s.Calls[role])
			} else {
				b.WriteString(" – |")
			}
		}
		fmt.Fprintf(b, " %s | %s | %s |\n", thousands(int64(s.InputTokens)), thousands(int64(s.UncachedInputTokens)), thousands(int64(s.OutputTokens)))
	}
}

// WriteDir writes r into dir (created if missing): learn.json, learn.md, the plots
// (learn-pareto.svg, learn-curve.svg, learn-entries.svg, learn-families.svg, and for the
// numeric suite learn-curve-FAMILY.svg per family) and every stream as stream-SEED.jsonl,
// which `hippocam learn --stream` reads. It returns the paths written.
func (r *LearnReport) WriteDir(dir string) ([]string, error) {
	files, err := reportFiles(r, "learn", r.Markdown())
	if err != nil {
		return nil, err
	}
	if len(r.Summary) > 0 {
		files = append(files, file{"learn-pareto.svg", LearnParetoPlot(r.Summary)},
			file{"learn-curve.svg", LearnCurvePlot(r.Summary, r.Config.CurveWindow)},
			file{"learn-entries.svg", LearnEntriesPlot(r.Summary)},
			file{"learn-families.svg", LearnFamilyPlot(r.Summary, suiteFamilies(r.Config.Suite))})
		if r.Config.Suite == SuiteNumeric {
			for _, f := range NumericFamilies() {
				files = append(files, file{"learn-curve-" + f.Source + ".svg", LearnFamilyCurvePlot(r.Summary, f.Source, FamilyCurveWindow)})
			}
		}
	}
	for _, st := range r.Streams {
		data, err := st.encode()
		if err != nil {
			return nil, err
		}
		files = append(files, file{fmt.Sprintf("stream-%d.jsonl", st.Seed), data})
	}
	return writeFiles(dir, files)
}

// BuildRevision is the VCS revision the running binary was built from, with "+dirty" when its
// tree had changes; "" when the build did not record one (go run, go test).
func BuildRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && dirty {
		rev += "+dirty"
	}
	return rev
}
