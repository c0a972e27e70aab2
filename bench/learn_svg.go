package bench

import (
	"fmt"
	"slices"

	"github.com/hippocam/hippocam/internal/svgplot"
)

// The plots of the learning benchmark, drawn with package svgplot: reward against cost per
// condition (the Pareto view), the learning curves and memory entries over the stream. Each
// condition keeps its colour and dash pattern across the three.

// learnStyle is the look of condition i of LearnConditions: eight colours, and past them the
// same colours with other dashes, so that ten conditions stay apart.
func learnStyle(cond string) svgplot.Style {
	i := slices.Index(LearnConditions, cond)
	if i < 0 {
		i = len(LearnConditions)
	}
	return svgplot.Style{Color: svgplot.Palette[i%len(svgplot.Palette)], Dash: svgplot.Dashes[(i+3*(i/len(svgplot.Palette)))%len(svgplot.Dashes)]}
}

// rewardTicks are the ticks of a reward axis, 0 to 1.
func rewardTicks() []svgplot.Tick {
	var ys []svgplot.Tick
	for v := 0.0; v <= 1.0001; v += 0.2 {
		ys = append(ys, svgplot.Tick{V: v, Label: fmt.Sprintf("%.1f", v)})
	}
	return ys
}

// LearnParetoPlot draws one point per condition at its cost per stream and its mean reward, and
// joins the conditions no other beats on both (cheaper and at least as good) with a dashed line.
func LearnParetoPlot(sums []LearnSummary) []byte {
	top := 0.0
	for _, s := range sums {
		top = max(top, s.CostUSD)
	}
	xs := svgplot.NiceTicks(top*1.05, 6, svgplot.USD)
	f := svgplot.Frame{X0: 0, X1: xs[len(xs)-1].V, Y1: 1}
	d := svgplot.New("Reward against cost, per condition")
	d.Axes(f, xs, rewardTicks(), "cost per stream (USD)", "mean reward (attempt 1)")
	var front [][2]float64
	for _, s := range paretoFront(sums) {
		front = append(front, [2]float64{f.Px(s.CostUSD), f.Py(s.Reward)})
	}
	if len(front) > 1 {
		d.Polyline(front, svgplot.Style{Color: "#999999", Dash: "4 4"})
	}
	var entries []svgplot.LegendEntry
	for _, s := range sums {
		st := learnStyle(s.Condition)
		x, y := f.Px(s.CostUSD), f.Py(s.Reward)
		d.Circle(x, y, 5, st.Color, "#333333")
		d.Text(x+8, y-6, "start", `font-size="10" fill="#333333"`, s.Condition)
		entries = append(entries, svgplot.LegendEntry{Name: s.Condition, Style: st, Mark: "dot"})
	}
	entries = append(entries, svgplot.LegendEntry{Name: "Pareto front", Style: svgplot.Style{Color: "#999999", Dash: "4 4"}, Mark: "line"})
	d.Legend(entries)
	return d.Bytes()
}

// paretoFront returns the conditions no other condition dominates (costs no more and gets a
// higher reward, or costs less and gets as much), cheapest first.
func paretoFront(sums []LearnSummary) []LearnSummary {
	var out []LearnSummary
	for _, a := range sums {
		dominated := false
		for _, b := range sums {
			if (b.CostUSD <= a.CostUSD && b.Reward > a.Reward) || (b.CostUSD < a.CostUSD && b.Reward >= a.Reward) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b LearnSummary) int {
		switch {
		case a.CostUSD < b.CostUSD:
			return -1
		case a.CostUSD > b.CostUSD:
			return 1
		}
		return 0
	})
	return out
}

// LearnCurvePlot draws each condition's learning curve: the mean reward of each window of
// window tasks, at the window's middle.
func LearnCurvePlot(sums []LearnSummary, window int) []byte {
	n := 0
	for _, s := range sums {
		n = max(n, len(s.Curve))
	}
	xs := svgplot.NiceTicks(float64(max(n*window, 1)), 8, svgplot.Compact)
	f := svgplot.Frame{X0: 0, X1: xs[len(xs)-1].V, Y1: 1}
	d := svgplot.New(fmt.Sprintf("Reward over the stream (windows of %d tasks)", window))
	d.Axes(f, xs, rewardTicks(), "task in the stream", "mean reward in the window")
	var entries []svgplot.LegendEntry
	for _, s := range sums {
		st := learnStyle(s.Condition)
		var pts [][2]float64
		for i, v := range s.Curve {
			pts = append(pts, [2]float64{f.Px((float64(i) + 0.5) * float64(window)), f.Py(v)})
		}
		d.Polyline(pts, st)
		entries = append(entries, svgplot.LegendEntry{Name: s.Condition, Style: st, Mark: "line"})
	}
	d.Legend(entries)
	return d.Bytes()
}

// LearnEntriesPlot draws the entries each condition's memory holds after every task; conditions
// that keep nothing are left out.
func LearnEntriesPlot(sums []LearnSummary) []byte {
	top, n := 0.0, 0
	for _, s := range sums {
		n = max(n, len(s.EntriesCurve))
		for _, e := range s.EntriesCurve {
			top = max(top, e)
		}
	}
	xs := svgplot.NiceTicks(float64(max(n, 1)), 8, svgplot.Compact)
	ys := svgplot.NiceTicks(max(top, 1), 6, svgplot.Compact)
	f := svgplot.Frame{X0: 0, X1: xs[len(xs)-1].V, Y1: ys[len(ys)-1].V}
	d := svgplot.New("Memory entries over the stream")
	d.Axes(f, xs, ys, "task in the stream", "entries held (mean over streams)")
	var entries []svgplot.LegendEntry
	for _, s := range sums {
		if slices.Max(append([]float64{0}, s.EntriesCurve...)) == 0 {
			continue
		}
		st := learnStyle(s.Condition)
		pts := make([][2]float64, 0, len(s.EntriesCurve))
		for i, e := range s.EntriesCurve {
			pts = append(pts, [2]float64{f.Px(float64(i + 1)), f.Py(e)})
		}
		d.Polyline(pts, st)
		entries = append(entries, svgplot.LegendEntry{Name: s.Condition, Style: st, Mark: "line"})
	}
	d.Legend(entries)
	return d.Bytes()
}
