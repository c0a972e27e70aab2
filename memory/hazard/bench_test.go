package hazard

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// benchData holds n records of the test world: 3 plans x 2 regions, cohorts of 50 followed
// over 6 intervals, one event per cohort, fitted once.
func benchData(n int) (*Data, *Bindings) {
	w := testWorld()
	rng := rand.New(rand.NewPCG(11, 12))
	b := bindings(6)
	d := &Data{Intervals: 6}
	for c := 0; len(d.Records) < n; c++ {
		p, r := plans[c%3], regions[(c/3)%2]
		at, ev := w.cohort(rng, p, r, 50)
		for j := range at {
			if len(d.Records) < n {
				d.Records = append(d.Records, Record{Source: fmt.Sprintf("t%d", c), Index: c, Entity: dims(p, r), Context: map[string]string{},
					Interval: j + 1, AtRisk: float64(at[j]), Events: float64(ev[j])})
			}
		}
	}
	d.Fit = fit(d.Records, 6)
	return d, b
}

func BenchmarkIngest(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			base, bind := benchData(n)
			x := countBatch("plus", "south", []int{50, 45, 41, 38, 36, 34}, []int{5, 4, 3, 2, 2, 1})
			x.Curves = []Curve{{Target: "churn", Dims: dims("plus", "south"), Values: []numeric.Number{"0.9", "0.82", "0.76", "0.72", "0.7", "0.68"}}}
			b.ReportAllocs()
			for b.Loop() {
				d := &Data{Intervals: base.Intervals, Records: base.Records[:n:n], Fit: base.Fit}
				Runtime{}.Ingest(d, bind, x, numeric.Event{Source: "new", Index: n})
			}
		})
	}
}

// BenchmarkAdvise times one Advise for a task that asks for three curves and shows the counts
// of a cohort of 50 for the first of them, as a task of the cohort world does.
func BenchmarkAdvise(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			d, bind := benchData(n)
			current := countBatch("basic", "north", []int{50, 43, 38, 35, 32, 30}, []int{7, 5, 3, 3, 2, 1})
			current.Requested = []Request{request("basic", "north"), request("pro", "south"), request("plus", "north")}
			b.ReportAllocs()
			for b.Loop() {
				if a := (Runtime{}).Advise(d, bind, current, numeric.Event{Source: "now", Index: n}); len(a.Lines) != 3 {
					b.Fatalf("%d lines", len(a.Lines))
				}
			}
		})
	}
}
