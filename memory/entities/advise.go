package entities

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam/memory/numeric"
)

// recent is how many events back a confirmed track that is not detected now may have been seen
// last and still be shown.
const recent = 3

// head opens the advisory.
const head = "Entities this cluster's tracker has pieced together from the measurements of earlier tasks and of " +
	"this one: each line gives an entity's estimated location and values and in how many tasks it was detected. " +
	"They can be wrong: two lines may describe one entity, and a line may be noise. Weigh them against the " +
	"current measurements and settle the list yourself."

// Advise associates the current task's detections with a copy of the tracks, then renders one
// line per confirmed track (support ≥ 2) detected now or last seen within the last 3 events,
// sorted by identity: "entity ID=m V=v̄ … (support K)", with the requested value fields in the
// order asked. It renders nothing when the task asks for no value field or no track qualifies.
func (Runtime) Advise(d *Data, b *Bindings, current *Batch, ev numeric.Event) numeric.Advice {
	w := d.clone()
	w.bind(b)
	var fields []int // positions in w.Fields of the requested fields, in the order asked
	for _, f := range current.Requested {
		if k := slices.Index(w.Fields, f); k >= 0 && !slices.Contains(fields, k) {
			fields = append(fields, k)
		}
	}
	if len(fields) == 0 {
		return numeric.Advice{}
	}
	w.observe(w.event(b, current, ev))
	var shown []Track
	for _, t := range w.Tracks {
		if t.Support >= confirmed && t.Last >= ev.Index-recent {
			shown = append(shown, t)
		}
	}
	if len(shown) == 0 {
		return numeric.Advice{}
	}
	slices.SortFunc(shown, func(a, b Track) int { return cmp.Or(cmp.Compare(a.M, b.M), cmp.Compare(a.ID, b.ID)) })
	lines := make([]string, len(shown))
	for i, t := range shown {
		lines[i] = w.line(b, t, fields)
	}
	return numeric.Advice{Head: head, Lines: lines}
}

// line renders one track.
func (d *Data) line(b *Bindings, t Track, fields []int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "entity %s=%s", b.Identity, format(t.M, decimals(t.SD/10)))
	for _, k := range fields {
		v := t.Values[k].Mean
		places := significant(v, 4)
		if s2, _ := d.Noise[k].variance(); s2 > 0 {
			places = decimals(math.Sqrt(s2) / 10)
		}
		fmt.Fprintf(&s, " %s=%s", d.Fields[k], format(v, places))
	}
	fmt.Fprintf(&s, " (support %d)", t.Support)
	return s.String()
}

// decimals is how many decimal places resolve step: the least p with 10^-p ≤ step, in [0, 12].
func decimals(step float64) int {
	if !(step > 0) || math.IsInf(step, 0) {
		return 4
	}
	return min(max(int(math.Ceil(-math.Log10(step)-1e-9)), 0), 12)
}

// significant is how many decimal places give v about digits significant digits.
func significant(v float64, digits int) int {
	if v == 0 {
		return 0
	}
	return min(max(digits-1-int(math.Floor(math.Log10(math.Abs(v)))), 0), 12)
}

// format writes v with places decimals, never as "-0".
func format(v float64, places int) string {
	s := strconv.FormatFloat(v, 'f', places, 64)
	if strings.HasPrefix(s, "-") && strings.Trim(s, "-0.") == "" {
		s = s[1:]
	}
	return s
}
