package bench

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/hippocam/hippocam/internal/svgplot"
)

// The plots of a context benchmark, drawn with package svgplot: a line chart of cumulative uncached
// input over the steps of a session, a line chart of accuracy against stream length, and a bar
// chart of cost per right answer. Policies keep one colour and one dash pattern across the plots.

// UncachedPlot draws the cumulative uncached input tokens of every role over the steps of the
// largest variant of workload, one line per policy, with the new content of the session as a
// floor and a mark where a policy's request first exceeded the window. It reports false when no
// run of workload succeeded.
func UncachedPlot(results []*Result, workload string) ([]byte, bool) {
	runs := largestVariant(results, workload)
	if len(runs) == 0 {
		return nil, false
	}
	f := svgplot.Frame{X0: 0, X1: 1, Y1: float64(runs[0].NewContentTokens)}
	for _, r := range runs {
		f.X1 = max(f.X1, float64(len(r.UncachedByStep)))
		if n := len(r.UncachedByStep); n > 0 {
			f.Y1 = max(f.Y1, float64(r.UncachedByStep[n-1]))
		}
	}
	ys := svgplot.NiceTicks(f.Y1, 6, svgplot.Compact)
	f.Y1 = ys[len(ys)-1].V
	xs := svgplot.NiceTicks(f.X1, 8, svgplot.Compact)
	f.X1 = xs[len(xs)-1].V
	title := fmt.Sprintf("Uncached input tokens, all roles: %s %s, W = %s", workload, runs[0].Variant, thousands(int64(runs[0].Window)))
	d := svgplot.New(title)
	d.Axes(f, xs, ys, "step (one per user message or complete set of tool results)", "cumulative uncached input tokens")
	floor := svgplot.Style{Color: "#777777", Dash: "3 4"}
	y := f.Py(float64(runs[0].NewContentTokens))
	d.Line(f.Px(0), y, f.Px(f.X1), y, floor, 1.5)
	var entries []svgplot.LegendEntry
	for i, r := range runs {
		st := svgplot.StyleFor(i)
		pts := make([][2]float64, 0, len(r.UncachedByStep)+1)
		pts = append(pts, [2]float64{f.Px(0), f.Py(0)})
		for k, v := range r.UncachedByStep {
			pts = append(pts, [2]float64{f.Px(float64(k + 1)), f.Py(float64(v))})
		}
		d.Polyline(pts, st)
		entries = append(entries, svgplot.LegendEntry{Name: r.Policy, Style: st})
		if r.Overflowed && r.OverflowStep > 0 && r.OverflowStep <= len(r.UncachedByStep) {
			x, y := f.Px(float64(r.OverflowStep)), f.Py(float64(r.UncachedByStep[r.OverflowStep-1]))
			d.Circle(x, y, 5, "#ffffff", st.Color)
			d.Text(x+8, y-8, "start", `font-size="11"`, r.Policy+": request exceeds W")
		}
	}
	entries = append(entries, svgplot.LegendEntry{Name: "new content (1× floor)", Style: floor, Width: 1.5})
	d.Legend(entries)
	return d.Bytes(), true
}

// largestVariant returns the successful runs of workload's longest variant, in result order.
func largestVariant(results []*Result, workload string) []*Result {
	longest, variant := -1, ""
	for _, r := range results {
		if r.Workload == workload && r.Error == "" && r.LengthTokens > longest {
			longest, variant = r.LengthTokens, r.Variant
		}
	}
	var out []*Result
	for _, r := range results {
		if r.Workload == workload && r.Variant == variant && r.Error == "" {
			out = append(out, r)
		}
	}
	return out
}

// AccuracyPlot draws the accuracy of every policy against the length of workload's variants (a
// logarithmic axis), points dodged sideways a little so that equal values stay visible. A failed
// run is a cross on the x axis. It reports false when workload has no result.
func AccuracyPlot(results []*Result, workload string) ([]byte, bool) {
	var lengths []int
	byPolicy := map[string][]*Result{}
	var policies []string
	for _, r := range results {
		if r.Workload != workload {
			continue
		}
		if !slices.Contains(lengths, r.LengthTokens) {
			lengths = append(lengths, r.LengthTokens)
		}
		if byPolicy[r.Policy] == nil {
			policies = append(policies, r.Policy)
		}
		byPolicy[r.Policy] = append(byPolicy[r.Policy], r)
	}
	if len(lengths) == 0 {
		return nil, false
	}
	sort.Ints(lengths)
	lo, hi := math.Log2(float64(lengths[0])), math.Log2(float64(lengths[len(lengths)-1]))
	pad := max(0.4, (hi-lo)*0.08)
	f := svgplot.Frame{X0: lo - pad, X1: hi + pad, Y1: 1}
	var xs []svgplot.Tick
	for _, r := range results {
		if r.Workload == workload && !containsTick(xs, math.Log2(float64(r.LengthTokens))) {
			label := r.Variant
			if r.Window > 0 {
				label += fmt.Sprintf(" (%.0f W)", float64(r.LengthTokens)/float64(r.Window))
			}
			xs = append(xs, svgplot.Tick{V: math.Log2(float64(r.LengthTokens)), Label: label})
		}
	}
	ys := svgplot.NiceTicks(1, 5, func(v, _ float64) string { return percent(v) })
	d := svgplot.New(fmt.Sprintf("Accuracy against stream length: %s", workload))
	d.Axes(f, xs, ys, "content tokens in the stream (logarithmic)", "right answers")
	var entries []svgplot.LegendEntry
	failed := false
	for i, p := range policies {
		st := svgplot.StyleFor(i)
		dodge := (float64(i) - float64(len(policies)-1)/2) * 4
		runs := byPolicy[p]
		sort.Slice(runs, func(a, b int) bool { return runs[a].LengthTokens < runs[b].LengthTokens })
		var pts [][2]float64
		for _, r := range runs {
			x := f.Px(math.Log2(float64(r.LengthTokens))) + dodge
			if r.Error != "" {
				d.Cross(x, f.Py(0), st.Color)
				failed = true
				continue
			}
			pts = append(pts, [2]float64{x, f.Py(r.Accuracy)})
		}
		d.Polyline(pts, st)
		for _, pt := range pts {
			d.Circle(pt[0], pt[1], 3.5, st.Color, "#ffffff")
		}
		entries = append(entries, svgplot.LegendEntry{Name: p, Style: st})
	}
	if failed {
		entries = append(entries, svgplot.LegendEntry{Name: "run failed", Style: svgplot.Style{Color: "#333333"}, Mark: "cross"})
	}
	d.Legend(entries)
	return d.Bytes(), true
}

func containsTick(ts []svgplot.Tick, v float64) bool {
	for _, t := range ts {
		if t.V == v {
			return true
		}
	}
	return false
}

// CostPlot draws the cost per right answer of every policy (in the given order) on every
// workload, the cost and the right answers summed over the workload's variants: one group of
// bars per workload, one bar per policy, the value written above it. A policy with no right
// answer on a workload gets "none" instead of a bar. It reports false when there is no result.
func CostPlot(results []*Result, policies []string) ([]byte, bool) {
	type sum struct {
		cost  float64
		right int
		runs  int
	}
	var groups []string
	sums := map[[2]string]*sum{}
	variants := map[string]map[string]bool{}
	for _, r := range results {
		if r.Error != "" {
			continue
		}
		if variants[r.Workload] == nil {
			groups = append(groups, r.Workload)
			variants[r.Workload] = map[string]bool{}
		}
		variants[r.Workload][r.Variant] = true
		k := [2]string{r.Workload, r.Policy}
		if sums[k] == nil {
			sums[k] = &sum{}
		}
		sums[k].cost += r.CostUSD
		sums[k].right += r.Right
		sums[k].runs++
	}
	if len(groups) == 0 {
		return nil, false
	}
	top := 0.0
	for _, s := range sums {
		if s.right > 0 {
			top = max(top, s.cost/float64(s.right))
		}
	}
	ys := svgplot.NiceTicks(top*1.25, 6, svgplot.USD) // headroom for the labels above the bars
	f := svgplot.Frame{X0: 0, X1: float64(len(groups)), Y1: ys[len(ys)-1].V}
	var xs []svgplot.Tick
	for i, g := range groups {
		label := g
		if len(variants[g]) > 1 {
			label += " (all lengths)"
		}
		xs = append(xs, svgplot.Tick{V: float64(i) + 0.5, Label: label})
	}
	d := svgplot.New("Cost per right answer (USD, §A.9 prices)")
	d.Axes(f, xs, ys, "workload", "USD per right answer")
	groupW := float64(svgplot.PlotW()) / float64(len(groups))
	barW := groupW * 0.8 / float64(max(len(policies), 1))
	var entries []svgplot.LegendEntry
	for j, p := range policies {
		st := svgplot.StyleFor(j)
		entries = append(entries, svgplot.LegendEntry{Name: p, Style: st, Mark: "box"})
		for i, g := range groups {
			s := sums[[2]string{g, p}]
			if s == nil {
				continue
			}
			x := f.Px(float64(i)) + groupW*0.1 + barW*float64(j)
			label, y := "none", f.Py(0)
			if s.right > 0 {
				v := s.cost / float64(s.right)
				y = f.Py(v)
				d.Rect(x+1, y, barW-2, f.Py(0)-y, st.Color)
				label = svgplot.USD(v, v/100)
			}
			d.Text(0, 0, "start", fmt.Sprintf(`font-size="10" fill="#333333" transform="translate(%.1f %.1f) rotate(-90)"`, x+barW/2+3, y-4), label)
		}
	}
	d.Legend(entries)
	return d.Bytes(), true
}

// ProviderPlots draws the provider run's requests, one point per step through each proxy: time
// to first content byte in one plot, total time in the other. Times run on a logarithmic axis,
// since a step that consolidates before answering can take a hundred times a plain one; a
// dashed line marks the upstream's own time to first byte. It reports false when the run has no
// steps.
func ProviderPlots(p *OverheadProvider) (ttfb, total []byte, ok bool) {
	if p == nil || len(p.Requests) == 0 {
		return nil, nil, false
	}
	series := func(pick func(OverheadStep) (hip, bare float64)) (hip, bare []float64) {
		for _, s := range p.Requests {
			h, b := pick(s)
			hip, bare = append(hip, h), append(bare, b)
		}
		return hip, bare
	}
	setting := fmt.Sprintf("%d streamed steps of the %s workload at W = %d; upstream: %.0f ms to first byte, then %g tokens/s",
		p.Steps, p.Workload, p.ContextWindow, p.UpstreamTTFTMs, p.UpstreamTokensPerSecond)
	hip, bare := series(func(s OverheadStep) (float64, float64) { return s.TTFBMs, s.BareTTFBMs })
	ttfb = latencyPlot("Time to first content byte, per request", setting, "time to first content byte", hip, bare, p.UpstreamTTFTMs)
	hip, bare = series(func(s OverheadStep) (float64, float64) { return s.TotalMs, s.BareTotalMs })
	total = latencyPlot("Total time, per request", setting, "total time of the request", hip, bare, p.UpstreamTTFTMs)
	return ttfb, total, true
}

// latencyPlot draws two series of milliseconds over the steps on a logarithmic axis, with a
// dashed reference line at ref; subtitle goes under the title.
func latencyPlot(title, subtitle, ylabel string, hip, bare []float64, ref float64) []byte {
	lo, hi := math.Inf(1), 0.0
	for _, v := range append(append([]float64{ref}, hip...), bare...) {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	ys, decLo, decHi := logTicks(lo, hi)
	f := svgplot.Frame{X0: 0, X1: float64(len(hip) + 1), Y1: decHi - decLo}
	logY := func(v float64) float64 { return f.Py(math.Log10(max(v, math.Pow(10, decLo))) - decLo) }
	xs := svgplot.NiceTicks(float64(len(hip)), 8, svgplot.Compact)
	f.X1 = max(f.X1, xs[len(xs)-1].V)
	d := svgplot.New(title)
	d.Text(float64(svgplot.MarginLeft+svgplot.PlotW()/2), 42, "middle", `font-size="11" fill="#555555"`, subtitle)
	d.Axes(f, xs, nil, "step of the workload (request number)", ylabel+" (log scale)")
	grid := svgplot.Style{Color: "#e3e3e3"}
	for _, t := range ys {
		y := f.Py(t.V)
		d.Line(float64(svgplot.MarginLeft), y, float64(svgplot.MarginLeft+svgplot.PlotW()), y, grid, 1)
		d.Text(float64(svgplot.MarginLeft)-8, y+4, "end", `fill="#333333"`, t.Label)
	}
	refStyle := svgplot.Style{Color: "#777777", Dash: "3 4"}
	d.Line(f.Px(0), logY(ref), f.Px(f.X1), logY(ref), refStyle, 1.5)
	var entries []svgplot.LegendEntry
	for i, s := range []struct {
		name string
		vals []float64
	}{{"Hippocam", hip}, {"bare proxy", bare}} {
		st := svgplot.StyleFor(i * 4) // blue and vermillion
		pts := make([][2]float64, len(s.vals))
		for k, v := range s.vals {
			pts[k] = [2]float64{f.Px(float64(k + 1)), logY(v)}
			d.Circle(pts[k][0], pts[k][1], 2.2, st.Color, st.Color)
		}
		d.Polyline(pts, svgplot.Style{Color: st.Color, Dash: st.Dash})
		entries = append(entries, svgplot.LegendEntry{Name: s.name, Style: st})
	}
	entries = append(entries, svgplot.LegendEntry{Name: "upstream's own TTFB", Style: refStyle, Width: 1.5})
	d.Legend(entries)
	return d.Bytes()
}

// logTicks returns ticks at 1, 2 and 5 times the powers of ten from below lo to above hi, with
// their positions as decades above decLo, and the decades the axis spans.
func logTicks(lo, hi float64) (ticks []svgplot.Tick, decLo, decHi float64) {
	decLo, decHi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if decHi <= decLo {
		decHi = decLo + 1
	}
	for e := decLo; e <= decHi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if lv := math.Log10(v); lv <= decHi+1e-9 {
				ticks = append(ticks, svgplot.Tick{V: lv - decLo, Label: msLabel(v)})
			}
		}
	}
	return ticks, decLo, decHi
}

// msLabel labels milliseconds: 5 ms, 200 ms, 2 s, 50 s.
func msLabel(v float64) string {
	if v >= 1000 {
		return svgplot.TrimZeros(fmt.Sprintf("%.1f", v/1000)) + " s"
	}
	return svgplot.TrimZeros(fmt.Sprintf("%.1f", v)) + " ms"
}
