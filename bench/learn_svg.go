package bench

import (
	"fmt"
	"slices"
)

// The plots of the learning benchmark, drawn with the helpers of svg.go: reward against cost per
// condition (the Pareto view), the learning curves and memory entries over the stream. Each
// condition keeps its colour and dash pattern across the three.

// learnStyle is the look of condition i of LearnConditions: eight colours, and past them the
// same colours with other dashes, so that ten conditions stay apart.
func learnStyle(cond string) style {
	i := slices.Index(LearnConditions, cond)
	if i < 0 {
		i = len(LearnConditions)
	}
	return style{palette[i%len(palette)], dashes[(i+3*(i/len(palette)))%len(dashes)]}
}

// rewardTicks are the ticks of a reward axis, 0 to 1.
func rewardTicks() []tick {
	var ys []tick
	for v := 0.0; v <= 1.0001; v += 0.2 {
		ys = append(ys, tick{v, fmt.Sprintf("%.1f", v)})
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
	xs := niceTicks(top*1.05, 6, usd)
	f := frame{x0: 0, x1: xs[len(xs)-1].v, y1: 1}
	d := newSVG("Reward against cost, per condition")
	d.axes(f, xs, rewardTicks(), "cost per stream (USD)", "mean reward (attempt 1)")
	var front [][2]float64
	for _, s := range paretoFront(sums) {
		front = append(front, [2]float64{f.px(s.CostUSD), f.py(s.Reward)})
	}
	if len(front) > 1 {
		d.polyline(front, style{color: "#999999", dash: "4 4"})
	}
	var entries []legendEntry
	for _, s := range sums {
		st := learnStyle(s.Condition)
		x, y := f.px(s.CostUSD), f.py(s.Reward)
		d.circle(x, y, 5, st.color, "#333333")
		d.text(x+8, y-6, "start", `font-size="10" fill="#333333"`, s.Condition)
		entries = append(entries, legendEntry{name: s.Condition, st: st, mark: "dot"})
	}
	entries = append(entries, legendEntry{name: "Pareto front", st: style{color: "#999999", dash: "4 4"}, mark: "line"})
	d.legend(entries)
	return d.bytes()
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
	xs := niceTicks(float64(max(n*window, 1)), 8, compact)
	f := frame{x0: 0, x1: xs[len(xs)-1].v, y1: 1}
	d := newSVG(fmt.Sprintf("Reward over the stream (windows of %d tasks)", window))
	d.axes(f, xs, rewardTicks(), "task in the stream", "mean reward in the window")
	var entries []legendEntry
	for _, s := range sums {
		st := learnStyle(s.Condition)
		var pts [][2]float64
		for i, v := range s.Curve {
			pts = append(pts, [2]float64{f.px((float64(i) + 0.5) * float64(window)), f.py(v)})
		}
		d.polyline(pts, st)
		entries = append(entries, legendEntry{name: s.Condition, st: st, mark: "line"})
	}
	d.legend(entries)
	return d.bytes()
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
	xs := niceTicks(float64(max(n, 1)), 8, compact)
	ys := niceTicks(max(top, 1), 6, compact)
	f := frame{x0: 0, x1: xs[len(xs)-1].v, y1: ys[len(ys)-1].v}
	d := newSVG("Memory entries over the stream")
	d.axes(f, xs, ys, "task in the stream", "entries held (mean over streams)")
	var entries []legendEntry
	for _, s := range sums {
		if slices.Max(append([]float64{0}, s.EntriesCurve...)) == 0 {
			continue
		}
		st := learnStyle(s.Condition)
		pts := make([][2]float64, 0, len(s.EntriesCurve))
		for i, e := range s.EntriesCurve {
			pts = append(pts, [2]float64{f.px(float64(i + 1)), f.py(e)})
		}
		d.polyline(pts, st)
		entries = append(entries, legendEntry{name: s.Condition, st: st, mark: "line"})
	}
	d.legend(entries)
	return d.bytes()
}
