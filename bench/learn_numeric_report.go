package bench

import (
	"fmt"
	"strings"

	"github.com/hippocam/hippocam/internal/svgplot"
)

// The per-family side of the learning report: each family's own learning curve, the numeric
// suite's targets, and two plots: reward per family and condition, and a family's
// reward over its own tasks.

// FamilyCurveWindow is how many scored tasks of a family each point of its curve averages.
const FamilyCurveWindow = 5

// familyCurves is, per family, the mean reward of each window scored tasks of that family, in
// stream order; rewards holds the scored tasks' rewards in stream order.
func familyCurves(tasks []taskOutline, rewards []float64, window int) map[string][]float64 {
	type acc struct {
		n   []int
		sum []float64
	}
	fams := map[string]*acc{}
	seen := map[string]int{}
	k := 0
	for _, t := range tasks {
		if !t.scored {
			continue
		}
		a := fams[t.family]
		if a == nil {
			a = &acc{}
			fams[t.family] = a
		}
		i := seen[t.family] / window
		seen[t.family]++
		if i == len(a.n) {
			a.n, a.sum = append(a.n, 0), append(a.sum, 0)
		}
		a.n[i]++
		a.sum[i] += rewards[k]
		k++
	}
	out := map[string][]float64{}
	for f, a := range fams {
		c := make([]float64, len(a.n))
		for i := range c {
			c[i] = a.sum[i] / float64(a.n[i])
		}
		out[f] = c
	}
	return out
}

// numericTargets checks the summary against the numeric targets: routed-cl above
// routed-icl on every numeric family, and above stateless. A target whose conditions did not
// run is left out.
func numericTargets(sums []LearnSummary) []LearnTarget {
	by := map[string]*LearnSummary{}
	for i := range sums {
		by[sums[i].Condition] = &sums[i]
	}
	cl := by["routed-cl"]
	if cl == nil {
		return nil
	}
	var out []LearnTarget
	for _, other := range []string{"routed-icl", "stateless"} {
		o := by[other]
		if o == nil {
			continue
		}
		for _, f := range NumericFamilies() {
			a, okA := cl.Families[f.Source]
			b, okB := o.Families[f.Source]
			if !okA || !okB {
				continue
			}
			out = append(out, LearnTarget{fmt.Sprintf("routed-cl above %s on %s", other, f.Source),
				fmt.Sprintf("%.3f against %.3f (%+.3f)", a.Reward, b.Reward, a.Reward-b.Reward), a.Reward > b.Reward})
		}
		out = append(out, LearnTarget{"routed-cl above " + other + " over the stream",
			fmt.Sprintf("%.3f against %.3f (%+.3f)", cl.Reward, o.Reward, cl.Reward-o.Reward), cl.Reward > o.Reward})
	}
	return out
}

// familyCurveTables writes, for the numeric suite, one table per family: its reward over its
// own tasks, per condition.
func (r *LearnReport) familyCurveTables(b *strings.Builder) {
	if r.Config.Suite != SuiteNumeric {
		return
	}
	fmt.Fprintf(b, "\n## Learning curves per family\n\nMean reward of each %d scored tasks of the family, in stream order (each spectrum site is one run of its family's tasks: a new site starts from nothing).\n", FamilyCurveWindow)
	for _, f := range NumericFamilies() {
		cols := 0
		for _, s := range r.Summary {
			cols = max(cols, len(s.FamilyCurves[f.Source]))
		}
		if cols == 0 {
			continue
		}
		fmt.Fprintf(b, "\n### %s\n\n| condition |", f.Source)
		for i := range cols {
			fmt.Fprintf(b, " %d–%d |", i*FamilyCurveWindow+1, (i+1)*FamilyCurveWindow)
		}
		b.WriteString("\n| --- |" + strings.Repeat(" ---: |", cols) + "\n")
		for _, s := range r.Summary {
			fmt.Fprintf(b, "| %s |", s.Condition)
			for _, v := range s.FamilyCurves[f.Source] {
				fmt.Fprintf(b, " %.2f |", v)
			}
			b.WriteString("\n")
		}
	}
}

// LearnFamilyPlot draws one group of bars per family, one bar per condition at its mean reward
// (attempt 1), the value above it. Conditions keep the colours of the other plots; those past
// the palette's eight get a dashed outline.
func LearnFamilyPlot(sums []LearnSummary, fams []LearnFamily) []byte {
	f := svgplot.Frame{X0: 0, X1: float64(max(len(fams), 1)), Y1: 1.1}
	var xs []svgplot.Tick
	for i, fam := range fams {
		xs = append(xs, svgplot.Tick{V: float64(i) + 0.5, Label: fam.Source})
	}
	d := svgplot.New("Reward per family and condition")
	d.Axes(f, xs, rewardTicks(), "family", "mean reward (attempt 1)")
	groupW := float64(svgplot.PlotW()) / f.X1
	barW := groupW * 0.8 / float64(max(len(sums), 1))
	var entries []svgplot.LegendEntry
	for j, s := range sums {
		st := learnStyle(s.Condition)
		entries = append(entries, svgplot.LegendEntry{Name: s.Condition, Style: st, Mark: "box"})
		for i, fam := range fams {
			fs, ok := s.Families[fam.Source]
			if !ok {
				continue
			}
			x := f.Px(float64(i)) + groupW*0.1 + barW*float64(j)
			y := f.Py(fs.Reward)
			d.Bar(x+1, y, barW-2, f.Py(0)-y, st)
			d.Text(0, 0, "start", fmt.Sprintf(`font-size="9" fill="#333333" transform="translate(%.1f %.1f) rotate(-90)"`, x+barW/2+3, y-3), fmt.Sprintf("%.2f", fs.Reward))
		}
	}
	d.Legend(entries)
	return d.Bytes()
}

// LearnFamilyCurvePlot draws each condition's curve on one family: the mean reward of each
// window scored tasks of the family, at the window's middle.
func LearnFamilyCurvePlot(sums []LearnSummary, family string, window int) []byte {
	n := 0
	for _, s := range sums {
		n = max(n, len(s.FamilyCurves[family]))
	}
	xs := svgplot.NiceTicks(float64(max(n*window, 1)), 8, svgplot.Compact)
	f := svgplot.Frame{X0: 0, X1: xs[len(xs)-1].V, Y1: 1}
	d := svgplot.New(fmt.Sprintf("Reward on %s over its tasks (windows of %d)", family, window))
	d.Axes(f, xs, rewardTicks(), "scored task of the family", "mean reward in the window")
	var entries []svgplot.LegendEntry
	for _, s := range sums {
		c := s.FamilyCurves[family]
		if len(c) == 0 {
			continue
		}
		st := learnStyle(s.Condition)
		var pts [][2]float64
		for i, v := range c {
			pts = append(pts, [2]float64{f.Px((float64(i) + 0.5) * float64(window)), f.Py(v)})
		}
		d.Polyline(pts, st)
		entries = append(entries, svgplot.LegendEntry{Name: s.Condition, Style: st, Mark: "line"})
	}
	d.Legend(entries)
	return d.Bytes()
}
