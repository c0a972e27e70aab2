package entities

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// BenchmarkDecodeState times what a read of a cluster pays before Advise: decoding the stored
// state (the runtime's data with its records and fit) from its JSON, the first time; then,
// for the same bytes, the cached decoded state.
func BenchmarkDecodeState(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			d, _, _ := benchData(b, n)
			var bind Bindings
			raw, err := json.Marshal(numeric.State[Bindings, Data]{Status: numeric.Configured, Bindings: &bind, Data: *d, Events: 1})
			if err != nil {
				b.Fatal(err)
			}
			sys := New(nil)
			b.ReportMetric(float64(len(raw)), "state-bytes")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sys.Decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		// What a read pays once the state's bytes were decoded before: a hash of them.
		b.Run(fmt.Sprintf("records=%d/cached", n), func(b *testing.B) {
			d, _, _ := benchData(b, n)
			var bind Bindings
			raw, err := json.Marshal(numeric.State[Bindings, Data]{Status: numeric.Configured, Bindings: &bind, Data: *d, Events: 1})
			if err != nil {
				b.Fatal(err)
			}
			sys := New(nil)
			if _, err := sys.ReadState(raw); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sys.ReadState(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
