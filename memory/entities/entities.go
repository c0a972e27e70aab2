// Package entities is the persistent-entity memory system (docs/learning.md, "The systems", row entities;
// the Routed Continual Learning paper B.2): things that last from one task to the next but are never named, seen only as an
// unordered set of noisy numeric detections in each event. The runtime links the detections of
// every event to the entities it already follows, keeps an estimate of each entity's location
// and of its measured values, and tells a new task which entities it believes present.
//
// # The model
//
// Every detection has an identity coordinate x (the bound identity field), a scale s (the bound
// scale field) and values v_f (the bound value fields). The scale gives the detection's declared
// standard deviation: sd = s when scale_kind is "sd", sd = s/√12 when it is "extent" (the width
// of a uniform spread). CheckBatch admits a detection only within the magnitudes the tracker
// takes: |x| and every |v_f| at most 1e100, the scale between 1e-100 and 1e100 (so 1/sd² stays
// below 1.2e201). Within them nothing the tracker computes leaves the range of a float64: a
// gate is tested as a product, never as a ratio that could overflow, the identity sums are
// scaled by a power of two (see refit), and a value's resolution counts as 1e100 at most; so
// the state always encodes as JSON.
//
// The state is a list of tracks, one per hypothesised entity. A track keeps its sightings (the
// detection it was assigned in each event it was detected in) and, computed from those that
// agree with it (below),
//
//   - an identity estimate m with variance P: what the Kalman step gives for a static state
//     observed with variances c·sd², that is m = Σ x/sd² / Σ 1/sd² and P = c / Σ 1/sd²;
//   - per value field, the posterior of a Normal mean under a flat prior with known noise
//     variance σ_f²: N(v̄, σ_f²/n), v̄ the mean of the n agreeing values. There is no time trend:
//     an entity's values are taken to be constant;
//   - its support (the number of events it was detected in) and its first and last event index.
//
// A sighting agrees with its track when each of its values lies within five noise sds of the
// track's median for that field (all sightings agree while σ_f is not yet known, or when none
// would). This is what keeps a clutter detection that fell inside an entity's gate, or founded
// its track, from pulling the estimates: the median belongs to the entity once it has been seen
// a few times.
//
// The noise σ_f² is estimated from residuals, robustly: each update of a confirmed track adds its
// standardized innovation |v − v̄|/√(1 + 1/n) to the field's list, and σ_f = median / 0.6745 (the
// median of |z| for a normal z), so that the odd clutter value does not inflate it, floored at
// the resolution the values are written with (one unit of their last digit: values copied
// unchanged from event to event would otherwise make it 0). It counts as known from 10
// innovations on.
//
// The declared sd is scaled by a calibration factor c learned online: c is the running mean of
// q = (x − m)² / (sd² + P/c) over matches to confirmed tracks, which is c itself when c is right;
// each q is divided by E[z² | z² ≤ 9] ≈ 0.973, the mean of a squared standard normal inside the
// gate, so that the gate does not bias it; four pseudo-residuals of 1 start it, and it is clamped
// to [0.25, 16].
//
// # Association, one event at a time
//
// The cost of explaining detection i by track j is z² = (x_i − m_j)² / (c·sd_i² + P_j). The pair
// is admissible when z² ≤ 9 (three standard deviations) and, once σ_f is known, every value lies
// within five predictive sds of the track's mean, (v − v̄)² ≤ 25·σ_f²·(1 + 1/n): a detection whose
// value is far off is not that entity. The detections are then assigned one to one by the
// Hungarian (Kuhn–Munkres) algorithm, minimising the total cost where leaving a detection
// unassigned costs the gate, 9 (so a close pair is not traded for two poor ones just to match
// more). Confirmed tracks (support ≥ 2) are served first and tentative tracks (support 1) take
// what is left, so a one-off clutter track cannot take the detection of an entity followed for
// a while.
//
// A detection left over that is admissible for a track already matched in this event and alike
// to the detection matched to it (the same tests, with variance c·(sd_i² + sd_k²) and 2σ_f²) is a
// duplicate of that entity: it is folded into the track and adds nothing to it (duplicates are
// not independent evidence, and a stray one must not pull the estimate). The matched track then
// takes its detection as a new sighting, its support grows by one, its last index becomes the
// event's, and its estimates are refitted. Detections still unexplained start tentative tracks
// (m = x, P = c·sd²), duplicates among them folded the same way.
//
// Two confirmed tracks are merged when they are one entity split in two (a run of unlucky draws
// can put a detection outside the gate of a track whose estimate is still rough, and the halves
// then feed on either side): their identities are alike, their values agree within the gate of
// their difference, σ_f²·(1/n_a + 1/n_b), and they were detected in the same event at most in a
// fifth of the events either was detected in (two distinct entities seen with probability p are
// seen together in p/(2 − p) of them, two thirds for p = 0.8). A tentative track not seen again
// within 10 events is dropped as clutter; confirmed tracks are kept for good, so an entity that
// is missing for a while is matched again when it returns.
//
// # Where the work happens
//
// Ingest runs the association of its event on the stored tracks (in a background job) and keeps
// the event's detections as raw records; an event that arrives out of order, or again, makes the
// tracks be rebuilt from the records in stream order. Forget removes a source's records and
// rebuilds the rest the same way, which gives exactly the state of never having seen them.
// Advise associates the current task's detections with a copy of the tracks and renders the
// confirmed tracks (support ≥ 2) detected now or seen within the last 3 events, by identity: a
// millisecond or less with ten thousand stored records (bench_test.go). Both are deterministic:
// an event's detections are sorted before they are associated, whatever order the extractor
// gave them in, and every sum runs in a fixed order.
package entities

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam/memory/numeric"
)

// Operator is the versioned name of the runtime the adapter and extractor are told they feed.
const Operator = "persistent_entity_v1"

// The two readings of a scale field.
const (
	ScaleSD     = "sd"     // the scale is the identity measurement's standard deviation
	ScaleExtent = "extent" // the scale is the full width of a uniform spread: sd = scale/√12
)

var _ numeric.Runtime[Bindings, Batch, Data] = Runtime{}

// Runtime is the persistent-entity tracker. It holds no state of its own: everything it knows
// is in Data.
type Runtime struct{}

// Bindings say which fields of the detections play which role. They are chosen once per
// cluster by the adapter.
type Bindings struct {
	// Identity is the field that locates an entity (a frequency, a position).
	Identity string `json:"identity"`
	// Scale is a positive field giving the identity measurement's natural spread.
	Scale string `json:"scale"`
	// ScaleKind is ScaleSD or ScaleExtent.
	ScaleKind string `json:"scale_kind"`
	// Values are the fields whose values are learned and predicted per entity.
	Values []string `json:"values"`
}

// Batch is what the extractor reads from one event.
type Batch struct {
	// Requested are the value fields the event asks to estimate for the entities present.
	Requested []string `json:"requested"`
	// Detections are the event's measurement records, each a set of named numbers.
	Detections []Detection `json:"detections"`
}

// Detection is one measurement record as written in the event: field name to literal number.
type Detection map[string]numeric.Number

// Name returns "entities".
func (Runtime) Name() string { return Name }

// Operator returns "persistent_entity_v1".
func (Runtime) Operator() string { return Operator }

// Description says what the system learns and when to choose it; the router reads it.
func (Runtime) Description() string {
	return "Follows entities that persist from task to task without names or identifiers: each task shows an " +
		"unordered, varying set of noisy numeric detections (a coordinate that locates the entity, its width or " +
		"uncertainty, and measured values). It links the detections across tasks by uncertainty-aware matching " +
		"and keeps each entity's location, values and how often it was seen. Choose it when tasks ask which " +
		"entities are present and what their values are."
}

// AdapterContract tells the adapter what each role means.
func (Runtime) AdapterContract() string {
	return `The runtime follows entities that last across events but carry no identifier. Each event shows a set of
measurement records, each a group of named numeric fields; some records come from the same entities as in
earlier events, some are noise. Bind the fields to these roles:
- identity: the one numeric field whose value locates an entity and stays the same for it, up to noise, from
  one event to the next (a position, a frequency, a coordinate).
- scale: a positive numeric field of the same records that tells how spread out the identity measurement
  is (for example its uncertainty or its width).
- scale_kind: "sd" when the scale field is itself the standard deviation of the identity value; "extent" when
  it is the full width of a uniform spread around it. The runtime turns either into a standard deviation.
- values: the numeric fields to learn and predict for each entity; at least one, and every field the current
  task asks to estimate.
Write field names exactly as the events write them. A field takes one role only. Give no thresholds,
tolerances or noise levels: the runtime calibrates its matching from the data.`
}

// BindingsSchema is the JSON schema of Bindings.
func (Runtime) BindingsSchema() json.RawMessage {
	s := object(map[string]*schema{
		"identity":   {Type: "string"},
		"scale":      {Type: "string"},
		"scale_kind": {Type: "string", Enum: []string{ScaleSD, ScaleExtent}},
		"values":     {Type: "array", Items: &schema{Type: "string"}},
	}, "identity", "scale", "scale_kind", "values")
	return mustMarshal(s)
}

// ExtractorContract tells the extractor what to copy from an event under b.
func (Runtime) ExtractorContract(b *Bindings) string {
	return fmt.Sprintf(`Copy every measurement record visible in the event into detections, one object per record, with
the fields %s (identity), %s (scale) and %s (values to learn). Write each as a JSON number copied
character for character from the event: keep its sign, its decimals and any trailing zeros. The records
are unordered and carry no identifier: do not link, merge, average or drop them, even when two look
alike, and do not fill in a missing value; leave out a record that lacks one of these fields.
In requested, list each of the value fields %s that the event asks to estimate for the entities
present (an empty list when it asks none). Take nothing from the agent's own answers.`,
		quote(b.Identity), quote(b.Scale), quoteAll(b.Values), quoteAll(b.Values))
}

// BatchSchema is the JSON schema of a Batch under b: detections hold exactly the bound fields.
func (Runtime) BatchSchema(b *Bindings) json.RawMessage {
	fields := b.fields()
	props := make(map[string]*schema, len(fields))
	for _, f := range fields {
		props[f] = &schema{Type: "number"}
	}
	s := object(map[string]*schema{
		"requested":  {Type: "array", Items: &schema{Type: "string", Enum: append([]string(nil), b.Values...)}},
		"detections": {Type: "array", Items: object(props, fields...)},
	}, "requested", "detections")
	return mustMarshal(s)
}

// Entries counts the confirmed entities (tracks detected in two events or more).
func (Runtime) Entries(d *Data) int {
	n := 0
	for _, t := range d.Tracks {
		if t.Support >= confirmed {
			n++
		}
	}
	return n
}

// fields lists every bound field: identity, scale, then the values.
func (b *Bindings) fields() []string {
	return append([]string{b.Identity, b.Scale}, b.Values...)
}

// schema is the part of JSON schema the contracts use.
type schema struct {
	Type                 string             `json:"type"`
	Enum                 []string           `json:"enum,omitempty"`
	Items                *schema            `json:"items,omitempty"`
	Properties           map[string]*schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *bool              `json:"additionalProperties,omitempty"`
}

// object is a strict object schema: every property required, no others allowed.
func object(props map[string]*schema, required ...string) *schema {
	no := false
	return &schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &no}
}

// mustMarshal encodes a schema; it cannot fail on these types.
func mustMarshal(s *schema) json.RawMessage {
	out, err := json.Marshal(s)
	if err != nil {
		panic("entities: schema: " + err.Error())
	}
	return out
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}
