// Package svgplot draws the plots of the benchmark and evaluation reports as SVG, by hand: a
// title, labelled axes with gridlines, a legend in the right margin, and series styled from the
// Okabe–Ito palette, which stays readable for colour-blind readers and in grey print. It knows
// nothing of benchmarks; the packages that plot (bench, eval) lay out their own series on it.
package svgplot

import (
	"fmt"
	"math"
	"strings"
)

// The size of every plot and the margins around its plot area; the right margin holds the legend.
const (
	Width        = 860
	Height       = 480
	MarginLeft   = 84
	MarginRight  = 210 // the legend
	MarginTop    = 48
	MarginBottom = 64
)

// Palette and Dashes are the colours and dash patterns series take in turn (StyleFor).
var (
	Palette = []string{"#0072B2", "#56B4E9", "#009E73", "#E69F00", "#D55E00", "#000000", "#CC79A7", "#999999"}
	Dashes  = []string{"", "7 4", "2 3", "", "9 3 2 3", "", "5 5", "1 3"}
)

// Style is how one series looks: its colour and dash pattern ("" for a solid line).
type Style struct{ Color, Dash string }

// StyleFor is the style of the i-th series: its colour and dash pattern, both cycling.
func StyleFor(i int) Style { return Style{Palette[i%len(Palette)], Dashes[i%len(Dashes)]} }

// Doc accumulates the elements of one SVG document.
type Doc struct{ b strings.Builder }

// New begins a plot with its title drawn above the plot area.
func New(title string) *Doc {
	d := &Doc{}
	fmt.Fprintf(&d.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", Width, Height, Width, Height)
	fmt.Fprintf(&d.b, `<title>%s</title>`+"\n", EscapeXML(title))
	fmt.Fprintf(&d.b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", Width, Height)
	d.Text(float64(MarginLeft+PlotW()/2), 26, "middle", `font-size="15" font-weight="bold"`, title)
	return d
}

// PlotW and PlotH are the plot area's width and height in pixels.
func PlotW() int { return Width - MarginLeft - MarginRight }
func PlotH() int { return Height - MarginTop - MarginBottom }

// Text writes s at (x, y) with the anchor (start, middle, end) and further attributes.
func (d *Doc) Text(x, y float64, anchor, attrs, s string) {
	fmt.Fprintf(&d.b, `<text x="%.1f" y="%.1f" text-anchor="%s" %s>%s</text>`+"\n", x, y, anchor, attrs, EscapeXML(s))
}

// Line draws a line in a series' style.
func (d *Doc) Line(x1, y1, x2, y2 float64, st Style, width float64) {
	fmt.Fprintf(&d.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"%s/>`+"\n", x1, y1, x2, y2, st.Color, width, DashAttr(st.Dash))
}

// Polyline draws a series through the points.
func (d *Doc) Polyline(pts [][2]float64, st Style) {
	var b strings.Builder
	for _, p := range pts {
		fmt.Fprintf(&b, "%.1f,%.1f ", p[0], p[1])
	}
	fmt.Fprintf(&d.b, `<polyline fill="none" stroke="%s" stroke-width="2.2" stroke-linejoin="round"%s points="%s"/>`+"\n", st.Color, DashAttr(st.Dash), strings.TrimSpace(b.String()))
}

// Circle draws a circle of radius r.
func (d *Doc) Circle(x, y, r float64, fill, stroke string) {
	fmt.Fprintf(&d.b, `<circle cx="%.1f" cy="%.1f" r="%g" fill="%s" stroke="%s" stroke-width="1.5"/>`+"\n", x, y, r, fill, stroke)
}

// Cross draws an x mark centred on (x, y).
func (d *Doc) Cross(x, y float64, color string) {
	d.Line(x-4, y-4, x+4, y+4, Style{Color: color}, 2)
	d.Line(x-4, y+4, x+4, y-4, Style{Color: color}, 2)
}

// Rect draws a filled rectangle.
func (d *Doc) Rect(x, y, w, h float64, fill string) {
	fmt.Fprintf(&d.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, y, w, h, fill)
}

// Bar draws a filled bar; a dashed style also gets a dashed dark outline, so that conditions
// sharing a colour stay apart.
func (d *Doc) Bar(x, y, w, h float64, st Style) {
	stroke := ""
	if st.Dash != "" {
		stroke = ` stroke="#333333" stroke-width="1"` + DashAttr(st.Dash)
	}
	fmt.Fprintf(&d.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s/>`+"\n", x, y, w, h, st.Color, stroke)
}

// Bytes closes the document and returns it.
func (d *Doc) Bytes() []byte { return []byte(d.b.String() + "</svg>\n") }

// DashAttr is the stroke-dasharray attribute of a dash pattern, or nothing for a solid line.
func DashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, dash)
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// EscapeXML escapes s for SVG text and attribute values.
func EscapeXML(s string) string { return xmlEscaper.Replace(s) }

// Tick is one labelled position on an axis, in data units.
type Tick struct {
	V     float64
	Label string
}

// Frame maps data to the plot area: x from X0 to X1, y from 0 to Y1.
type Frame struct{ X0, X1, Y1 float64 }

// Px is the x pixel of a data value.
func (f Frame) Px(x float64) float64 {
	return float64(MarginLeft) + (x-f.X0)/(f.X1-f.X0)*float64(PlotW())
}

// Py is the y pixel of a data value.
func (f Frame) Py(y float64) float64 {
	return float64(MarginTop+PlotH()) - y/f.Y1*float64(PlotH())
}

// Axes draws the gridlines, the axes, their ticks and labels.
func (d *Doc) Axes(f Frame, xs, ys []Tick, xlabel, ylabel string) {
	grid, axis := Style{Color: "#e3e3e3"}, Style{Color: "#333333"}
	left, right := float64(MarginLeft), float64(MarginLeft+PlotW())
	top, bottom := float64(MarginTop), float64(MarginTop+PlotH())
	for _, t := range ys {
		y := f.Py(t.V)
		d.Line(left, y, right, y, grid, 1)
		d.Text(left-8, y+4, "end", `fill="#333333"`, t.Label)
	}
	for _, t := range xs {
		x := f.Px(t.V)
		d.Line(x, bottom, x, bottom+5, axis, 1)
		d.Text(x, bottom+19, "middle", `fill="#333333"`, t.Label)
	}
	d.Line(left, top, left, bottom, axis, 1.2)
	d.Line(left, bottom, right, bottom, axis, 1.2)
	d.Text((left+right)/2, float64(Height-16), "middle", `font-size="13"`, xlabel)
	d.Text(0, 0, "middle", fmt.Sprintf(`font-size="13" transform="translate(20 %.1f) rotate(-90)"`, (top+bottom)/2), ylabel)
}

// LegendEntry is one line of a legend.
type LegendEntry struct {
	Name  string
	Style Style
	Mark  string // "line", "box", "dot" or "cross"
	Width float64
}

// Legend draws the entries in the right margin.
func (d *Doc) Legend(entries []LegendEntry) {
	x := float64(MarginLeft + PlotW() + 20)
	for i, e := range entries {
		y := float64(MarginTop+10) + 22*float64(i)
		switch e.Mark {
		case "box":
			d.Rect(x, y-9, 24, 12, e.Style.Color)
		case "dot":
			d.Circle(x+12, y-3, 4, e.Style.Color, e.Style.Color)
		case "cross":
			d.Cross(x+12, y-3, e.Style.Color)
		default:
			d.Line(x, y-3, x+28, y-3, e.Style, max(e.Width, 2.2))
		}
		d.Text(x+36, y+1, "start", "", e.Name)
	}
}

// NiceTicks returns ticks from 0 to at least hi in steps of 1, 2 or 5 times a power of ten, about
// n of them, labelled by format.
func NiceTicks(hi float64, n int, format func(v, step float64) string) []Tick {
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
	var out []Tick
	for i := 0; ; i++ {
		v := float64(i) * step
		out = append(out, Tick{v, format(v, step)})
		if v >= hi*(1-1e-9) {
			return out
		}
	}
}

// Compact labels a count: 950, 12k, 1.5M.
func Compact(v, step float64) string {
	switch {
	case v >= 1e6:
		return TrimZeros(fmt.Sprintf("%.*f", Decimals(step/1e6), v/1e6)) + "M"
	case v >= 1e3:
		return TrimZeros(fmt.Sprintf("%.*f", Decimals(step/1e3), v/1e3)) + "k"
	}
	return fmt.Sprintf("%.0f", v)
}

// USD labels an amount of dollars with as many decimals as the step needs.
func USD(v, step float64) string { return fmt.Sprintf("$%.*f", Decimals(step), v) }

// Decimals is how many decimals a label needs to tell values a step apart.
func Decimals(step float64) int {
	if step <= 0 || step >= 1 {
		return 0
	}
	return int(math.Ceil(-math.Log10(step) - 1e-9))
}

// TrimZeros drops the trailing zeros of a decimal fraction, and its point if nothing follows.
func TrimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// BarPlot draws grouped bars of shares in [0, 1] as percentages: one group per entry of groups
// along the x axis, one bar per series inside each group, in the house style of the other plots
// (title, labelled axes, gridlines, a legend, the value written above each bar). values[i][j] is
// group i, series j; NaN leaves that bar out and writes "n/a" in its place.
func BarPlot(title, xlabel, ylabel string, groups, series []string, values [][]float64) []byte {
	ys := []Tick{{0, "0%"}, {0.2, "20%"}, {0.4, "40%"}, {0.6, "60%"}, {0.8, "80%"}, {1, "100%"}, {1.12, ""}}
	f := Frame{X0: 0, X1: float64(max(len(groups), 1)), Y1: 1.12} // headroom for the labels
	var xs []Tick
	for i, g := range groups {
		xs = append(xs, Tick{float64(i) + 0.5, g})
	}
	d := New(title)
	d.Axes(f, xs, ys[:len(ys)-1], xlabel, ylabel)
	groupW := float64(PlotW()) / f.X1
	barW := groupW * 0.8 / float64(max(len(series), 1))
	var entries []LegendEntry
	for j, name := range series {
		st := StyleFor(j)
		entries = append(entries, LegendEntry{Name: name, Style: st, Mark: "box"})
		for i := range groups {
			v := math.NaN()
			if i < len(values) && j < len(values[i]) {
				v = values[i][j]
			}
			x := f.Px(float64(i)) + groupW*0.1 + barW*float64(j)
			label, y := "n/a", f.Py(0)
			if !math.IsNaN(v) {
				v = min(max(v, 0), 1)
				y = f.Py(v)
				d.Rect(x+1, y, barW-2, f.Py(0)-y, st.Color)
				label = fmt.Sprintf("%.0f%%", 100*v)
			}
			d.Text(x+barW/2, y-4, "middle", `font-size="10" fill="#333333"`, label)
		}
	}
	d.Legend(entries)
	return d.Bytes()
}
