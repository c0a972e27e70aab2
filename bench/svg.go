package bench

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// The plots of a context benchmark, written as SVG by hand: a line chart of cumulative uncached
// input over the steps of a session, a line chart of accuracy against stream length, and a bar
// chart of cost per right answer. Every plot has a title, labelled axes with gridlines and a
// legend. Policies keep one colour and one dash pattern across the plots, from the Okabe–Ito
// palette, which stays readable for colour-blind readers and in grey print.

const (
	svgWidth     = 860
	svgHeight    = 480
	marginLeft   = 84
	marginRight  = 210 // the legend
	marginTop    = 48
	marginBottom = 64
)

var (
	palette = []string{"#0072B2", "#56B4E9", "#009E73", "#E69F00", "#D55E00", "#000000", "#CC79A7", "#999999"}
	dashes  = []string{"", "7 4", "2 3", "", "9 3 2 3", "", "5 5", "1 3"}
)

// style is how one series looks.
type style struct{ color, dash string }

func styleFor(i int) style { return style{palette[i%len(palette)], dashes[i%len(dashes)]} }

// svgDoc accumulates the elements of one SVG document.
type svgDoc struct{ b strings.Builder }

func newSVG(title string) *svgDoc {
	d := &svgDoc{}
	fmt.Fprintf(&d.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", svgWidth, svgHeight, svgWidth, svgHeight)
	fmt.Fprintf(&d.b, `<title>%s</title>`+"\n", escapeXML(title))
	fmt.Fprintf(&d.b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", svgWidth, svgHeight)
	d.text(float64(marginLeft+plotW()/2), 26, "middle", `font-size="15" font-weight="bold"`, title)
	return d
}

func plotW() int { return svgWidth - marginLeft - marginRight }
func plotH() int { return svgHeight - marginTop - marginBottom }

func (d *svgDoc) text(x, y float64, anchor, attrs, s string) {
	fmt.Fprintf(&d.b, `<text x="%.1f" y="%.1f" text-anchor="%s" %s>%s</text>`+"\n", x, y, anchor, attrs, escapeXML(s))
}

func (d *svgDoc) line(x1, y1, x2, y2 float64, st style, width float64) {
	fmt.Fprintf(&d.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"%s/>`+"\n", x1, y1, x2, y2, st.color, width, dashAttr(st.dash))
}

func (d *svgDoc) polyline(pts [][2]float64, st style) {
	var b strings.Builder
	for _, p := range pts {
		fmt.Fprintf(&b, "%.1f,%.1f ", p[0], p[1])
	}
	fmt.Fprintf(&d.b, `<polyline fill="none" stroke="%s" stroke-width="2.2" stroke-linejoin="round"%s points="%s"/>`+"\n", st.color, dashAttr(st.dash), strings.TrimSpace(b.String()))
}

func (d *svgDoc) circle(x, y, r float64, fill, stroke string) {
	fmt.Fprintf(&d.b, `<circle cx="%.1f" cy="%.1f" r="%g" fill="%s" stroke="%s" stroke-width="1.5"/>`+"\n", x, y, r, fill, stroke)
}

func (d *svgDoc) cross(x, y float64, color string) {
	d.line(x-4, y-4, x+4, y+4, style{color: color}, 2)
	d.line(x-4, y+4, x+4, y-4, style{color: color}, 2)
}

func (d *svgDoc) rect(x, y, w, h float64, fill string) {
	fmt.Fprintf(&d.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, y, w, h, fill)
}

func (d *svgDoc) bytes() []byte { return []byte(d.b.String() + "</svg>\n") }

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, dash)
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func escapeXML(s string) string { return xmlEscaper.Replace(s) }

// tick is one labelled position on an axis, in data units.
type tick struct {
	v     float64
	label string
}

// frame maps data to the plot area: x from x0 to x1, y from 0 to y1.
type frame struct{ x0, x1, y1 float64 }

func (f frame) px(x float64) float64 {
	return float64(marginLeft) + (x-f.x0)/(f.x1-f.x0)*float64(plotW())
}

func (f frame) py(y float64) float64 {
	return float64(marginTop+plotH()) - y/f.y1*float64(plotH())
}

// axes draws the gridlines, the axes, their ticks and labels.
func (d *svgDoc) axes(f frame, xs, ys []tick, xlabel, ylabel string) {
	grid, axis := style{color: "#e3e3e3"}, style{color: "#333333"}
	left, right := float64(marginLeft), float64(marginLeft+plotW())
	top, bottom := float64(marginTop), float64(marginTop+plotH())
	for _, t := range ys {
		y := f.py(t.v)
		d.line(left, y, right, y, grid, 1)
		d.text(left-8, y+4, "end", `fill="#333333"`, t.label)
	}
	for _, t := range xs {
		x := f.px(t.v)
		d.line(x, bottom, x, bottom+5, axis, 1)
		d.text(x, bottom+19, "middle", `fill="#333333"`, t.label)
	}
	d.line(left, top, left, bottom, axis, 1.2)
	d.line(left, bottom, right, bottom, axis, 1.2)
	d.text((left+right)/2, float64(svgHeight-16), "middle", `font-size="13"`, xlabel)
	d.text(0, 0, "middle", fmt.Sprintf(`font-size="13" transform="translate(20 %.1f) rotate(-90)"`, (top+bottom)/2), ylabel)
}

// legendEntry is one line of a legend.
type legendEntry struct {
	name  string
	st    style
	mark  string // "line", "box", "dot" or "cross"
	width float64
}

// legend draws the entries in the right margin.
func (d *svgDoc) legend(entries []legendEntry) {
	x := float64(marginLeft + plotW() + 20)
	for i, e := range entries {
		y := float64(marginTop+10) + 22*float64(i)
		switch e.mark {
		case "box":
			d.rect(x, y-9, 24, 12, e.st.color)
		case "dot":
			d.circle(x+12, y-3, 4, e.st.color, e.st.color)
		case "cross":
			d.cross(x+12, y-3, e.st.color)
		default:
			d.line(x, y-3, x+28, y-3, e.st, max(e.width, 2.2))
		}
		d.text(x+36, y+1, "start", "", e.name)
	}
}

// niceTicks returns ticks from 0 to at least hi in steps of 1, 2 or 5 times a power of ten, about
// n of them, labelled by format.
func niceTicks(hi float64, n int, format func(v, step float64) string) []tick {
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = 1
	}
	raw := hi / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*mag*(1+1e-9) {
			step = m * mag
			break
		}
	}
	var out []tick
	for i := 0; ; i++ {
		v := float64(i) * step
		out = append(out, tick{v, format(v, step)})
		if v >= hi*(1-1e-9) {
			return out
		}
	}
}

// compact labels a count: 950, 12k, 1.5M.
func compact(v, step float64) string {
	switch {
	case v >= 1e6:
		return trimZeros(fmt.Sprintf("%.*f", decimals(step/1e6), v/1e6)) + "M"
	case v >= 1e3:
		return trimZeros(fmt.Sprintf("%.*f", decimals(step/1e3), v/1e3)) + "k"
	}
	return fmt.Sprintf("%.0f", v)
}

// usd labels an amount of dollars with as many decimals as the step needs.
func usd(v, step float64) string { return fmt.Sprintf("$%.*f", decimals(step), v) }

func decimals(step float64) int {
	if step <= 0 || step >= 1 {
		return 0
	}
	return int(math.Ceil(-math.Log10(step) - 1e-9))
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// UncachedPlot draws the cumulative uncached input tokens of every role over the steps of the
// largest variant of workload, one line per policy, with the new content of the session as a
// floor and a mark where a policy's request first exceeded the window. It reports false when no
// run of workload succeeded.
func UncachedPlot(results []*Result, workload string) ([]byte, bool) {
	runs := largestVariant(results, workload)
	if len(runs) == 0 {
		return nil, false
	}
	f := frame{x0: 0, x1: 1, y1: float64(runs[0].NewContentTokens)}
	for _, r := range runs {
		f.x1 = max(f.x1, float64(len(r.UncachedByStep)))
		if n := len(r.UncachedByStep); n > 0 {
			f.y1 = max(f.y1, float64(r.UncachedByStep[n-1]))
		}
	}
	ys := niceTicks(f.y1, 6, compact)
	f.y1 = ys[len(ys)-1].v
	xs := niceTicks(f.x1, 8, compact)
	f.x1 = xs[len(xs)-1].v
	title := fmt.Sprintf("Uncached input tokens, all roles: %s %s, W = %s", workload, runs[0].Variant, thousands(int64(runs[0].Window)))
	d := newSVG(title)
	d.axes(f, xs, ys, "step (one per user message or complete set of tool results)", "cumulative uncached input tokens")
	floor := style{color: "#777777", dash: "3 4"}
	y := f.py(float64(runs[0].NewContentTokens))
	d.line(f.px(0), y, f.px(f.x1), y, floor, 1.5)
	var entries []legendEntry
	for i, r := range runs {
		st := styleFor(i)
		pts := make([][2]float64, 0, len(r.UncachedByStep)+1)
		pts = append(pts, [2]float64{f.px(0), f.py(0)})
		for k, v := range r.UncachedByStep {
			pts = append(pts, [2]float64{f.px(float64(k + 1)), f.py(float64(v))})
		}
		d.polyline(pts, st)
		entries = append(entries, legendEntry{name: r.Policy, st: st})
		if r.Overflowed && r.OverflowStep > 0 && r.OverflowStep <= len(r.UncachedByStep) {
			x, y := f.px(float64(r.OverflowStep)), f.py(float64(r.UncachedByStep[r.OverflowStep-1]))
			d.circle(x, y, 5, "#ffffff", st.color)
			d.text(x+8, y-8, "start", `font-size="11"`, r.Policy+": request exceeds W")
		}
	}
	entries = append(entries, legendEntry{name: "new content (1× floor)", st: floor, width: 1.5})
	d.legend(entries)
	return d.bytes(), true
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
		if !containsInt(lengths, r.LengthTokens) {
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
	f := frame{x0: lo - pad, x1: hi + pad, y1: 1}
	var xs []tick
	for _, r := range results {
		if r.Workload == workload && !containsTick(xs, math.Log2(float64(r.LengthTokens))) {
			label := r.Variant
			if r.Window > 0 {
				label += fmt.Sprintf(" (%.0f W)", float64(r.LengthTokens)/float64(r.Window))
			}
			xs = append(xs, tick{math.Log2(float64(r.LengthTokens)), label})
		}
	}
	ys := niceTicks(1, 5, func(v, _ float64) string { return percent(v) })
	d := newSVG(fmt.Sprintf("Accuracy against stream length: %s", workload))
	d.axes(f, xs, ys, "content tokens in the stream (logarithmic)", "right answers")
	var entries []legendEntry
	failed := false
	for i, p := range policies {
		st := styleFor(i)
		dodge := (float64(i) - float64(len(policies)-1)/2) * 4
		runs := byPolicy[p]
		sort.Slice(runs, func(a, b int) bool { return runs[a].LengthTokens < runs[b].LengthTokens })
		var pts [][2]float64
		for _, r := range runs {
			x := f.px(math.Log2(float64(r.LengthTokens))) + dodge
			if r.Error != "" {
				d.cross(x, f.py(0), st.color)
				failed = true
				continue
			}
			pts = append(pts, [2]float64{x, f.py(r.Accuracy)})
		}
		d.polyline(pts, st)
		for _, pt := range pts {
			d.circle(pt[0], pt[1], 3.5, st.color, "#ffffff")
		}
		entries = append(entries, legendEntry{name: p, st: st})
	}
	if failed {
		entries = append(entries, legendEntry{name: "run failed", st: style{color: "#333333"}, mark: "cross"})
	}
	d.legend(entries)
	return d.bytes(), true
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func containsTick(ts []tick, v float64) bool {
	for _, t := range ts {
		if t.v == v {
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
	ys := niceTicks(top*1.25, 6, usd) // headroom for the labels above the bars
	f := frame{x0: 0, x1: float64(len(groups)), y1: ys[len(ys)-1].v}
	var xs []tick
	for i, g := range groups {
		label := g
		if len(variants[g]) > 1 {
			label += " (all lengths)"
		}
		xs = append(xs, tick{float64(i) + 0.5, label})
	}
	d := newSVG("Cost per right answer (USD, §A.9 prices)")
	d.axes(f, xs, ys, "workload", "USD per right answer")
	groupW := float64(plotW()) / float64(len(groups))
	barW := groupW * 0.8 / float64(max(len(policies), 1))
	var entries []legendEntry
	for j, p := range policies {
		st := styleFor(j)
		entries = append(entries, legendEntry{name: p, st: st, mark: "box"})
		for i, g := range groups {
			s := sums[[2]string{g, p}]
			if s == nil {
				continue
			}
			x := f.px(float64(i)) + groupW*0.1 + barW*float64(j)
			label, y := "none", f.py(0)
			if s.right > 0 {
				v := s.cost / float64(s.right)
				y = f.py(v)
				d.rect(x+1, y, barW-2, f.py(0)-y, st.color)
				label = usd(v, v/100)
			}
			d.text(0, 0, "start", fmt.Sprintf(`font-size="10" fill="#333333" transform="translate(%.1f %.1f) rotate(-90)"`, x+barW/2+3, y-4), label)
		}
	}
	d.legend(entries)
	return d.bytes(), true
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
	f := frame{x0: 0, x1: float64(len(hip) + 1), y1: decHi - decLo}
	logY := func(v float64) float64 { return f.py(math.Log10(max(v, math.Pow(10, decLo))) - decLo) }
	xs := niceTicks(float64(len(hip)), 8, compact)
	f.x1 = max(f.x1, xs[len(xs)-1].v)
	d := newSVG(title)
	d.text(float64(marginLeft+plotW()/2), 42, "middle", `font-size="11" fill="#555555"`, subtitle)
	d.axes(f, xs, nil, "step of the workload (request number)", ylabel+" (log scale)")
	grid := style{color: "#e3e3e3"}
	for _, t := range ys {
		y := f.py(t.v)
		d.line(float64(marginLeft), y, float64(marginLeft+plotW()), y, grid, 1)
		d.text(float64(marginLeft)-8, y+4, "end", `fill="#333333"`, t.label)
	}
	refStyle := style{color: "#777777", dash: "3 4"}
	d.line(f.px(0), logY(ref), f.px(f.x1), logY(ref), refStyle, 1.5)
	var entries []legendEntry
	for i, s := range []struct {
		name string
		vals []float64
	}{{"Hippocam", hip}, {"bare proxy", bare}} {
		st := styleFor(i * 4) // blue and vermillion
		pts := make([][2]float64, len(s.vals))
		for k, v := range s.vals {
			pts[k] = [2]float64{f.px(float64(k + 1)), logY(v)}
			d.circle(pts[k][0], pts[k][1], 2.2, st.color, st.color)
		}
		d.polyline(pts, style{color: st.color, dash: st.dash})
		entries = append(entries, legendEntry{name: s.name, st: st})
	}
	entries = append(entries, legendEntry{name: "upstream's own TTFB", st: refStyle, width: 1.5})
	d.legend(entries)
	return d.bytes()
}

// logTicks returns ticks at 1, 2 and 5 times the powers of ten from below lo to above hi, with
// their positions as decades above decLo, and the decades the axis spans.
func logTicks(lo, hi float64) (ticks []tick, decLo, decHi float64) {
	decLo, decHi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if decHi <= decLo {
		decHi = decLo + 1
	}
	for e := decLo; e <= decHi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if lv := math.Log10(v); lv <= decHi+1e-9 {
				ticks = append(ticks, tick{lv - decLo, msLabel(v)})
			}
		}
	}
	return ticks, decLo, decHi
}

// msLabel labels milliseconds: 5 ms, 200 ms, 2 s, 50 s.
func msLabel(v float64) string {
	if v >= 1000 {
		return trimZeros(fmt.Sprintf("%.1f", v/1000)) + " s"
	}
	return trimZeros(fmt.Sprintf("%.1f", v)) + " ms"
}
