package regression

import (
	"fmt"
	"maps"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// benchData is a cluster holding records outcomes: 50 stores, 2 channels, records/100 weeks,
// ingested as one event per week.
func benchData(b *testing.B, records int) (*Data, *world, int) {
	b.Helper()
	w := newWorld(41, 50, 10)
	d := &Data{Bindings: &salesBindings}
	weeks := records / 100
	for week := 1; week <= weeks; week++ {
		d.Records = append(d.Records, (&Data{}).records(w.panel(week, week), week)...)
	}
	refit(d)
	if len(d.Records) != records || d.Fit == nil {
		b.Fatalf("%d records, fit %v", len(d.Records), d.Fit != nil)
	}
	return d, w, weeks
}

// records turns outcomes into the records of one event.
func (*Data) records(outcomes []Outcome, index int) []Record {
	out := make([]Record, len(outcomes))
	for i, o := range outcomes {
		out[i] = Record{Source: fmt.Sprintf("t%d", index), Index: index, Order: i, Dims: o.Dims, Value: o.Value}
	}
	return out
}

func BenchmarkIngest(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			d, w, weeks := benchData(b, n)
			x := &Batch{Outcomes: w.panel(weeks+1, weeks+1)[:20]} // a new week of 10 stores
			ev := numeric.Event{Source: "new", Index: weeks + 1}
			b.ReportAllocs()
			for b.Loop() {
				Runtime{}.Ingest(d, &salesBindings, x, ev)
				d.Records = d.Records[:n]
			}
		})
	}
}

// BenchmarkAdvise times one Advise for a task that asks for four points and shows five
// outcomes: three weeks of a store the cluster has never seen, a new week of a seen store, and
// one outcome the data already holds.
func BenchmarkAdvise(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			d, w, weeks := benchData(b, n)
			next := fmt.Sprint(weeks + 2)
			current := &Batch{
				Requested: []numeric.Key{
					request("s1", "online", next), request("s1", "shop", next),
					request("s17", "online", next), request("s60", "shop", next),
				},
				Outcomes: []Outcome{
					newStoreOutcome("s60", "shop", weeks-1, "131.20"),
					newStoreOutcome("s60", "shop", weeks, "133.05"),
					newStoreOutcome("s60", "shop", weeks+1, "134.61"),
					w.outcome(17, "online", weeks+1),
					heldOutcome(b, d, "s1", "online", weeks),
				},
			}
			b.ReportAllocs()
			for b.Loop() {
				if adv := (Runtime{}).Advise(d, &salesBindings, current, numeric.Event{Index: weeks + 1}); len(adv.Lines) != 7 {
					b.Fatalf("%d lines", len(adv.Lines))
				}
			}
		})
	}
}

// newStoreOutcome is an outcome of a store the simulated world does not have.
func newStoreOutcome(s, channel string, week int, value string) Outcome {
	return Outcome{Target: "sales", Dims: map[string]string{"store": s, "channel": channel, "week": fmt.Sprint(week)}, Value: numeric.Number(value)}
}

// heldOutcome repeats the record d holds for a point, as a history line repeated in a new task.
func heldOutcome(tb testing.TB, d *Data, s, channel string, week int) Outcome {
	tb.Helper()
	want := map[string]string{"store": s, "channel": channel, "week": fmt.Sprint(week)}
	for _, r := range d.Records {
		if maps.Equal(r.Dims, want) {
			return Outcome{Target: "sales", Dims: maps.Clone(r.Dims), Value: r.Value}
		}
	}
	tb.Fatalf("no record of %v", want)
	return Outcome{}
}
