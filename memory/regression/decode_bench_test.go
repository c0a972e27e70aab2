package regression

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hippocam/hippocam/memory/memorytest"
	"github.com/hippocam/hippocam/memory/numeric"
)

// BenchmarkDecodeState times what a read of a cluster pays before Advise: decoding the stored
// state (the runtime's data with its records and fit) the first time, and the decoded state
// kept for the same bytes after that.
func BenchmarkDecodeState(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			d, _, _ := benchData(b, n)
			bind := salesBindings
			raw, err := json.Marshal(numeric.State[Bindings, Data]{Status: numeric.Configured, Bindings: &bind, Data: *d, Events: 1})
			if err != nil {
				b.Fatal(err)
			}
			memorytest.BenchStateReads(b, New(nil), raw)
		})
	}
}
