package svgplot

import (
	"fmt"
	"strings"
	"testing"
)

// The ticks of an axis: steps of 1, 2 or 5 times a power of ten, labelled as counts or shares;
// dollars get the decimals their step needs.
func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		hi   float64
		want string
	}{
		{1, "0 20% 40% 60% 80% 100%"},
		{0, "0 20% 40% 60% 80% 100%"},
		{950, "0 200 400 600 800 1k"},
		{1.3e6, "0 500k 1M 1.5M"},
		{0.03, "0 1% 2% 3%"},
	} {
		format := Compact
		if tc.hi <= 1 {
			format = func(v, _ float64) string {
				if v == 0 {
					return "0"
				}
				return fmt.Sprintf("%.0f%%", 100*v)
			}
		}
		var got []string
		for _, tk := range NiceTicks(tc.hi, 5, format) {
			got = append(got, tk.Label)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("NiceTicks(%v) = %q, want %q", tc.hi, strings.Join(got, " "), tc.want)
		}
	}
	if got := USD(0.0125, 0.0025); got != "$0.013" {
		t.Errorf("USD = %q", got)
	}
}
