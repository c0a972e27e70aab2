package engine

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// spanTextMatches must say exactly what comparing with SpanText says, for any text: words
// separated by any spaces (non-ASCII ones included), quotes cut anywhere.
func TestSpanTextMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "bc", "dé", "x1", " ", "  ", "\n", "\t", "\u00a0", "\u2003", "ü", "é", "-"}
	for n := 0; n < 200_000; n++ {
		var b strings.Builder
		for k := rng.IntN(8); k >= 0; k-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		content := b.String()
		text := SpanText(&hippocam.Message{Content: content})
		quote := text
		if rng.IntN(3) > 0 && len(text) > 0 {
			quote = text[:rng.IntN(len(text)+1)]
		}
		if rng.IntN(5) == 0 {
			quote += pieces[rng.IntN(len(pieces))]
		}
		for _, whole := range []bool{false, true} {
			want := strings.HasPrefix(text, quote)
			if whole {
				want = text == quote
			}
			if got := spanTextMatches(content, quote, whole); got != want {
				t.Fatalf("content %q quote %q whole %v: %v, want %v", content, quote, whole, got, want)
			}
		}
	}
}
