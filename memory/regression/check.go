package regression

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hippocam/hippocam/memory/numeric"
)

// CheckBindings checks b against the events it was chosen from: a target that occurs in them,
// key, time and factors that occur as dimension names (name=), no dimension in two roles, and a
// known family.
func (Runtime) CheckBindings(b *Bindings, events []string) error {
	if strings.TrimSpace(b.Target) == "" {
		return errors.New("the target is empty: name the quantity to forecast")
	}
	if !groundedIn(b.Target, events) {
		return fmt.Errorf("the target %q does not occur in the events", b.Target)
	}
	roles := map[string]string{}
	bind := func(dim, role string) error {
		if dim == "" {
			return nil
		}
		if !groundedIn(dim+"=", events) {
			return fmt.Errorf("the %s %q does not occur as a dimension (%s=...) in the events", role, dim, dim)
		}
		if other, taken := roles[dim]; taken {
			return fmt.Errorf("the dimension %q is bound twice, as %s and as %s: give each dimension one role", dim, other, role)
		}
		roles[dim] = role
		return nil
	}
	if err := bind(b.Key, "key"); err != nil {
		return err
	}
	if err := bind(b.Time, "time"); err != nil {
		return err
	}
	for i, f := range b.Factors {
		if f == "" {
			return fmt.Errorf("factor %d is empty", i+1)
		}
		if err := bind(f, "factor"); err != nil {
			return err
		}
	}
	if !slices.Contains(Families, b.Family) {
		return fmt.Errorf("the family %q is not one of %s", b.Family, strings.Join(Families, ", "))
	}
	return nil
}

// groundedIn reports whether literal occurs as a token in one of events.
func groundedIn(literal string, events []string) bool {
	for _, ev := range events {
		if numeric.Grounded(literal, ev) {
			return true
		}
	}
	return false
}

// maxMagnitude bounds the values and times CheckBatch accepts. The fit squares them on the
// link scale (the identity for a real value and for a time) and sums the squares; beyond 1e100
// a square could overflow to infinity, and the fit would have nothing finite to solve.
const maxMagnitude = 1e100 // written out in the errors below

// CheckBatch checks x against the event it was extracted from: every point and outcome is of
// the bound target, its dimensions are bound ones (key, time or a factor) whose names and
// values occur in the event, a time is a number of magnitude at most maxMagnitude, every point
// and outcome names its series when a key is bound, and every value occurs in the event, is
// at most maxMagnitude in magnitude and fits the family.
func (Runtime) CheckBatch(b *Bindings, x *Batch, event string) error {
	for i, p := range x.Requested {
		what := fmt.Sprintf("requested point %d", i+1)
		if err := checkPoint(b, p.Target, p.Dims, event, what); err != nil {
			return err
		}
		if b.Key != "" && p.Dims[b.Key] == "" {
			return fmt.Errorf("%s: the key dimension %s is missing: say which %s is asked for", what, b.Key, b.Key)
		}
	}
	for i, o := range x.Outcomes {
		what := fmt.Sprintf("outcome %d", i+1)
		if err := checkPoint(b, o.Target, o.Dims, event, what); err != nil {
			return err
		}
		if b.Key != "" && o.Dims[b.Key] == "" {
			return fmt.Errorf("%s: the key dimension %s is missing: say which %s the value belongs to", what, b.Key, b.Key)
		}
		v, err := numeric.CheckNumber(o.Value, event, what)
		if err != nil {
			return err
		}
		if math.Abs(v) > maxMagnitude {
			return fmt.Errorf("%s: the value %s is beyond 1e100 in magnitude: the fit cannot square it", what, string(o.Value))
		}
		if err := checkFamily(b.Family, v); err != nil {
			return fmt.Errorf("%s: the value %s %v", what, string(o.Value), err)
		}
	}
	return nil
}

// checkPoint checks one point's target and dimensions; what names it in the error. Dimensions
// are checked in name order, so the same batch always gets the same error.
func checkPoint(b *Bindings, target string, dims map[string]string, event, what string) error {
	if target != b.Target {
		return fmt.Errorf("%s: the target %q is not the bound target %q", what, target, b.Target)
	}
	if err := numeric.CheckKey(numeric.Key{Target: target}, event, what); err != nil {
		return err
	}
	dims = present(dims)
	names := make([]string, 0, len(dims))
	for n := range dims {
		names = append(names, n)
	}
	slices.Sort(names)
	bound := boundDims(b)
	for _, n := range names {
		if !slices.Contains(bound, n) {
			return fmt.Errorf("%s: the dimension %q is not bound (%s)", what, n, roles(b))
		}
		k := numeric.Key{Target: target, Dims: map[string]string{n: dims[n]}}
		if err := numeric.CheckKey(k, event, what); err != nil {
			return err
		}
	}
	if t, ok := dims[b.Time]; ok && b.Time != "" {
		v, err := numeric.Float(numeric.Number(t))
		if err != nil {
			return fmt.Errorf("%s: the time %s=%s is not a number", what, b.Time, t)
		}
		if math.Abs(v) > maxMagnitude {
			return fmt.Errorf("%s: the time %s=%s is beyond 1e100 in magnitude: the fit cannot square it", what, b.Time, t)
		}
	}
	return nil
}

// roles lists b's dimensions by role: "key: store; time: week; factors: region, channel", with
// "none" for a role no dimension plays.
func roles(b *Bindings) string {
	name := func(dims ...string) string {
		dims = slices.DeleteFunc(slices.Clone(dims), func(d string) bool { return d == "" })
		if len(dims) == 0 {
			return "none"
		}
		return strings.Join(dims, ", ")
	}
	return fmt.Sprintf("key: %s; time: %s; factors: %s", name(b.Key), name(b.Time), name(b.Factors...))
}

// checkFamily says why v cannot be an outcome of family, or nil.
func checkFamily(family string, v float64) error {
	switch family {
	case Positive:
		if v <= 0 {
			return errors.New("is not above zero, as a positive quantity must be")
		}
	case Count:
		if v < 0 || v != math.Trunc(v) {
			return errors.New("is not a whole number of zero or more, as a count must be")
		}
	case Probability:
		if v < 0 || v > 1 {
			return errors.New("is not between 0 and 1, as a probability must be")
		}
	}
	return nil
}

// CheckReplay fails when the cluster cannot be served: the current task requests no point, or
// the warm-up revealed no outcome to learn from.
func (Runtime) CheckReplay(d *Data, b *Bindings, current *Batch) error {
	if len(current.Requested) == 0 {
		return fmt.Errorf("the current task requests no point of %s to forecast", b.Target)
	}
	if len(d.Records) == 0 {
		return fmt.Errorf("the warm-up task revealed no outcome of %s: there is nothing to learn from", b.Target)
	}
	return nil
}
