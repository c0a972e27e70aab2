package hazard

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hippocam/hippocam/memory/numeric"
)

// MaxIntervals bounds J.
const MaxIntervals = 100

// CheckBindings checks the adapter's bindings against the events they were chosen from: the
// target occurs in some event, every entity and context dimension occurs as a dimension name
// ("name=") in some event, no dimension is named twice, and J is a whole number in 1..100.
func (Runtime) CheckBindings(b *Bindings, events []string) error {
	if strings.TrimSpace(b.Target) == "" {
		return errors.New("target: the target name is empty")
	}
	if !slices.ContainsFunc(events, func(ev string) bool { return numeric.Grounded(b.Target, ev) }) {
		return fmt.Errorf("target: the name %q does not occur in the tasks shown", b.Target)
	}
	if b.Intervals < 1 || b.Intervals > MaxIntervals {
		return fmt.Errorf("intervals: %d is not a whole number from 1 to %d", b.Intervals, MaxIntervals)
	}
	role := map[string]string{}
	for _, list := range []struct {
		name string
		dims []string
	}{{"entity", b.Entity}, {"contexts", b.Contexts}} {
		for _, d := range list.dims {
			if strings.TrimSpace(d) == "" {
				return fmt.Errorf("%s: a dimension name is empty", list.name)
			}
			if r, ok := role[d]; ok {
				if r == list.name {
					return fmt.Errorf("%s: the dimension %q is named twice", list.name, d)
				}
				return fmt.Errorf("%s: the dimension %q is already bound as %s; a dimension has one role", list.name, d, r)
			}
			role[d] = list.name
			if !slices.ContainsFunc(events, func(ev string) bool { return numeric.Grounded(d+"=", ev) }) {
				return fmt.Errorf("%s: the dimension %q does not occur as a dimension (%s=…) in the tasks shown", list.name, d, d)
			}
		}
	}
	return nil
}

// CheckBatch checks a batch against its event. Every record's target is the bound one, its
// dims are bound dimensions whose names and values occur in the event (a null or empty value
// means the record does not state that dimension); a request asks for 1 to MaxIntervals
// intervals (a horizon other than J is drawn over its own intervals); a count's interval is a
// whole number in 1..J and at_risk and events are whole numbers with 0 <= events <= at_risk; a
// curve has 1 to J values (a shorter curve covers the first intervals only), each in [0,1] and
// none above the one before. Every number occurs verbatim in the event.
func (Runtime) CheckBatch(b *Bindings, x *Batch, event string) error {
	for i, r := range x.Requested {
		what := fmt.Sprintf("requested %d", i+1)
		if err := checkKey(b, r.Target, r.Dims, event, what); err != nil {
			return err
		}
		j, err := wholeNumber(r.Intervals, event, what+", intervals")
		if err != nil {
			return err
		}
		// A task may ask for another horizon than the cluster's J: the curve is drawn over the
		// intervals asked for (past the last fitted one, the last hazard carries on).
		if j < 1 || j > MaxIntervals {
			return fmt.Errorf("%s, intervals: %d intervals are asked for; a curve has 1 to %d", what, j, MaxIntervals)
		}
	}
	for i, c := range x.Counts {
		if err := checkCount(b, c, event, fmt.Sprintf("count %d", i+1)); err != nil {
			return err
		}
	}
	for i, c := range x.Curves {
		if err := checkCurve(b, c, event, fmt.Sprintf("curve %d", i+1)); err != nil {
			return err
		}
	}
	return nil
}

func checkCount(b *Bindings, c Count, event, what string) error {
	if err := checkKey(b, c.Target, c.Dims, event, what); err != nil {
		return err
	}
	j, err := wholeNumber(c.Interval, event, what+", interval")
	if err != nil {
		return err
	}
	if j < 1 || j > b.Intervals {
		return fmt.Errorf("%s, interval: %d is outside 1..%d", what, j, b.Intervals)
	}
	n, err := wholeNumber(c.AtRisk, event, what+", at_risk")
	if err != nil {
		return err
	}
	d, err := wholeNumber(c.Events, event, what+", events")
	if err != nil {
		return err
	}
	if d > n {
		return fmt.Errorf("%s: %d events is more than the %d at risk", what, d, n)
	}
	return nil
}

func checkCurve(b *Bindings, c Curve, event, what string) error {
	if err := checkKey(b, c.Target, c.Dims, event, what); err != nil {
		return err
	}
	if len(c.Values) == 0 {
		return fmt.Errorf("%s: the curve has no values", what)
	}
	if len(c.Values) > b.Intervals {
		return fmt.Errorf("%s: the curve has %d values, more than the %d intervals", what, len(c.Values), b.Intervals)
	}
	prev := 1.0
	for i, v := range c.Values {
		f, err := numeric.CheckNumber(v, event, fmt.Sprintf("%s, value %d", what, i+1))
		if err != nil {
			return err
		}
		if f < 0 || f > 1 {
			return fmt.Errorf("%s, value %d: %s is not a probability in [0,1]", what, i+1, string(v))
		}
		if f > prev {
			return fmt.Errorf("%s, value %d: %s is above the value before it (%s); an event-free curve cannot rise", what, i+1, string(v), string(c.Values[i-1]))
		}
		prev = f
	}
	return nil
}

// checkKey checks a record's target and dims: the target is the bound one, every stated
// dimension is bound, and names and values occur in the event.
func checkKey(b *Bindings, target string, dims map[string]string, event, what string) error {
	if target != b.Target {
		return fmt.Errorf("%s: the target is %q, the bindings say %q", what, target, b.Target)
	}
	k := numeric.Key{Target: target, Dims: stated(dims)}
	for _, d := range sortedNames(k.Dims) {
		if !slices.Contains(b.Entity, d) && !slices.Contains(b.Contexts, d) {
			return fmt.Errorf("%s: the dimension %q is not bound (entity: %s; contexts: %s)", what, d, nameList(b.Entity), nameList(b.Contexts))
		}
	}
	return numeric.CheckKey(k, event, what)
}

// wholeNumber checks that n is grounded in event and a whole number >= 0.
func wholeNumber(n numeric.Number, event, what string) (int, error) {
	f, err := numeric.CheckNumber(n, event, what)
	if err != nil {
		return 0, err
	}
	if f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, fmt.Errorf("%s: %s is not a whole number >= 0", what, string(n))
	}
	return int(f), nil
}

// stated drops the dimensions whose value is empty (null in the JSON): the record does not
// state them.
func stated(dims map[string]string) map[string]string {
	out := make(map[string]string, len(dims))
	for d, v := range dims {
		if v != "" {
			out[d] = v
		}
	}
	return out
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// CheckReplay fails when the current task asks for no curve, or the warm-up gave no counts or
// curves with anyone at risk.
func (Runtime) CheckReplay(d *Data, b *Bindings, current *Batch) error {
	if len(current.Requested) == 0 {
		return errors.New("the current task asks for no event-free curve of " + b.Target)
	}
	if len(d.Records) == 0 {
		return errors.New("the completed task gave no counts and no realized curves of " + b.Target + " to learn from")
	}
	if evidence(d.Records) == 0 {
		return errors.New("the completed task's counts of " + b.Target + " have no one at risk; there is nothing to learn from")
	}
	return nil
}
