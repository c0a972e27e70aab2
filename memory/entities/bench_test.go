package entities

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// benchData is a cluster that holds at least records detections of a 12-emitter world
// (detection probability 0.8, 2 clutter detections per event, about 11.6 detections an event),
// with the next event's batch.
func benchData(b *testing.B, records int) (*Data, Batch, int) {
	b.Helper()
	w := newWorld(99, 12)
	w.lo, w.hi = 100, 120
	var d Data
	i := 0
	for ; d.recordCount() < records; i++ {
		x, _ := w.observe()
		ingestOne(&d, x, i)
	}
	next, _ := w.observe()
	return &d, next, i
}

func BenchmarkIngest(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			d, next, index := benchData(b, n)
			ev := numeric.Event{Source: "next", Index: index}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				c := d.clone()
				c.Events = slices.Clip(d.Events)
				b.StartTimer()
				Runtime{}.Ingest(c, &testBindings, &next, ev)
			}
		})
	}
}

func BenchmarkAdvise(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			d, next, index := benchData(b, n)
			ev := numeric.Event{Source: "next", Index: index}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if adv := (Runtime{}).Advise(d, &testBindings, &next, ev); len(adv.Lines) == 0 {
					b.Fatal("no advice")
				}
			}
		})
	}
}
