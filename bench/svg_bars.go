package bench

import (
	"fmt"
	"math"
)

// BarPlot draws grouped bars of shares in [0, 1] as percentages: one group per entry of groups
// along the x axis, one bar per series inside each group, in the house style of the other plots
// (title, labelled axes, gridlines, a legend, the value written above each bar). values[i][j] is
// group i, series j; NaN leaves that bar out and writes "n/a" in its place.
func BarPlot(title, xlabel, ylabel string, groups, series []string, values [][]float64) []byte {
	ys := []tick{{0, "0%"}, {0.2, "20%"}, {0.4, "40%"}, {0.6, "60%"}, {0.8, "80%"}, {1, "100%"}, {1.12, ""}}
	f := frame{x0: 0, x1: float64(max(len(groups), 1)), y1: 1.12} // headroom for the labels
	var xs []tick
	for i, g := range groups {
		xs = append(xs, tick{float64(i) + 0.5, g})
	}
	d := newSVG(title)
	d.axes(f, xs, ys[:len(ys)-1], xlabel, ylabel)
	groupW := float64(plotW()) / f.x1
	barW := groupW * 0.8 / float64(max(len(series), 1))
	var entries []legendEntry
	for j, name := range series {
		st := styleFor(j)
		entries = append(entries, legendEntry{name: name, st: st, mark: "box"})
		for i := range groups {
			v := math.NaN()
			if i < len(values) && j < len(values[i]) {
				v = values[i][j]
			}
			x := f.px(float64(i)) + groupW*0.1 + barW*float64(j)
			label, y := "n/a", f.py(0)
			if !math.IsNaN(v) {
				v = min(max(v, 0), 1)
				y = f.py(v)
				d.rect(x+1, y, barW-2, f.py(0)-y, st.color)
				label = fmt.Sprintf("%.0f%%", 100*v)
			}
			d.text(x+barW/2, y-4, "middle", `font-size="10" fill="#333333"`, label)
		}
	}
	d.legend(entries)
	return d.bytes()
}
