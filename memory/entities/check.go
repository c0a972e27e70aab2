package entities

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hippocam/hippocam/memory/numeric"
)

// CheckBindings checks b against the events it was chosen from: every field named must occur
// as "name=" in one of them, scale_kind must be sd or extent, there must be a value field, and
// no field may take two roles.
func (Runtime) CheckBindings(b *Bindings, events []string) error {
	if b.ScaleKind != ScaleSD && b.ScaleKind != ScaleExtent {
		return fmt.Errorf("scale_kind %q is neither %q nor %q", b.ScaleKind, ScaleSD, ScaleExtent)
	}
	if len(b.Values) == 0 {
		return errors.New("values is empty: name at least one field whose values are to be predicted")
	}
	roles := make(map[string]string)
	bind := func(role, name string) error {
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("the %s field is empty", role)
		}
		if other, ok := roles[name]; ok {
			return fmt.Errorf("the field %q is bound twice (as %s and as %s); a field takes one role only", name, other, role)
		}
		roles[name] = role
		if !fieldInEvents(name, events) {
			return fmt.Errorf("the %s field %q does not occur as %q in the events", role, name, name+"=")
		}
		return nil
	}
	if err := bind("identity", b.Identity); err != nil {
		return err
	}
	if err := bind("scale", b.Scale); err != nil {
		return err
	}
	for _, v := range b.Values {
		if err := bind("value", v); err != nil {
			return err
		}
	}
	return nil
}

// fieldInEvents reports whether "name=" occurs, as a whole word, in one of events.
func fieldInEvents(name string, events []string) bool {
	for _, e := range events {
		if numeric.Grounded(name+"=", e) {
			return true
		}
	}
	return false
}

// CheckBatch checks x against the event it was extracted from: every detection has the
// identity, the scale and every value field, each a number found verbatim in the event, within
// the magnitudes the tracker takes: a scale in [1e-100, 1e100], an identity and values within
// ±1e100; a field beyond those is allowed (and ignored) when it too occurs as "name=" with
// a grounded number; every requested field is a value field named in the event.
func (Runtime) CheckBatch(b *Bindings, x *Batch, event string) error {
	for i, det := range x.Detections {
		if err := checkDetection(b, det, event, fmt.Sprintf("detection %d", i+1)); err != nil {
			return err
		}
	}
	for i, f := range x.Requested {
		what := fmt.Sprintf("requested field %d", i+1)
		if !slices.Contains(b.Values, f) {
			return fmt.Errorf("%s: %q is not a value field (the value fields are %s)", what, f, quoteAll(b.Values))
		}
		if !numeric.Grounded(f, event) {
			return fmt.Errorf("%s: %q does not occur in the event", what, f)
		}
	}
	return nil
}

// checkDetection checks one detection; what names it in errors ("detection 3").
func checkDetection(b *Bindings, det Detection, event, what string) error {
	for _, f := range b.fields() {
		n, ok := det[f]
		if !ok {
			return fmt.Errorf("%s: the field %q is missing", what, f)
		}
		v, err := numeric.CheckNumber(n, event, what+", "+f)
		if err != nil {
			return err
		}
		if err := checkMagnitude(b, f, v, n); err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
	}
	extra := make([]string, 0, len(det))
	for f := range det {
		if !slices.Contains(b.fields(), f) {
			extra = append(extra, f)
		}
	}
	slices.Sort(extra)
	for _, f := range extra {
		if !numeric.Grounded(f+"=", event) {
			return fmt.Errorf("%s: the field %q does not occur as %q in the event", what, f, f+"=")
		}
		if _, err := numeric.CheckNumber(det[f], event, what+", "+f); err != nil {
			return err
		}
	}
	return nil
}

// The magnitudes the tracker takes (see the package doc): within them, no sum, square or ratio
// it forms can overflow or underflow to a value that breaks the fit.
const (
	maxMagnitude = 1e100  // the largest |identity|, |value| and scale
	minScale     = 1e-100 // the smallest scale
)

// checkMagnitude checks the number v, written n, of the bound field f: a scale must be positive
// and within [minScale, maxMagnitude], an identity or a value within ±maxMagnitude.
func checkMagnitude(b *Bindings, f string, v float64, n numeric.Number) error {
	if f == b.Scale {
		scales := fmt.Sprintf("the tracker takes scales from %g to %g", minScale, maxMagnitude)
		switch {
		case v <= 0:
			return fmt.Errorf("the scale %s=%s is not positive", f, string(n))
		case v < minScale:
			return fmt.Errorf("the scale %s=%s is too small: %s", f, string(n), scales)
		case v > maxMagnitude:
			return fmt.Errorf("the scale %s=%s is too large: %s", f, string(n), scales)
		}
		return nil
	}
	if math.Abs(v) > maxMagnitude {
		role := "value"
		if f == b.Identity {
			role = "identity"
		}
		return fmt.Errorf("the %s %s=%s is too large: the tracker takes magnitudes up to %g", role, f, string(n), maxMagnitude)
	}
	return nil
}

// CheckReplay fails when the cluster cannot be served: the current task asks for no value, or
// the replayed warm-up held no detection to learn from.
func (Runtime) CheckReplay(d *Data, b *Bindings, current *Batch) error {
	if len(current.Requested) == 0 {
		return fmt.Errorf("the current task requests no value field (requested is empty; the value fields are %s)", quoteAll(b.Values))
	}
	if d.recordCount() == 0 {
		return errors.New("the warm-up gave no detection to learn from")
	}
	return nil
}
