package entities

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam/memory/numeric"
)

// The tracker's constants (see the package doc).
const (
	gate             = 9.0  // z² of an admissible pair: three standard deviations
	confirmed        = 2    // support from which a track is confirmed
	tentativeHorizon = 10   // events after which an unconfirmed track is dropped
	calibrationPrior = 4    // pseudo-residuals of 1 that start the calibration mean
	calibrationMin   = 0.25 // bounds of the calibration factor c
	calibrationMax   = 16.0
	valueGate        = 25.0               // squared predictive sds a value may lie from its track's mean
	valueGateDF      = 10                 // innovations before values gate the matching
	maxCodetected    = 0.2                // share of their events two tracks may share and still be merged
	madNormal        = 0.6744897501960817 // median of |z| for a standard normal z
)

// gateMean is E[z² | z² ≤ 9] for a standard normal z: the mean a calibrated residual has
// inside the gate.
var gateMean = 1 - 2*3*math.Exp(-gate/2)/math.Sqrt(2*math.Pi)/math.Erf(3/math.Sqrt2)

// Data is a cluster's fitted state: the raw records of every ingested event and the tracks and
// calibration they produced.
type Data struct {
	// Fields are the value fields, in the order of Record.Values and Track.Values.
	Fields []string `json:"fields,omitempty"`
	// Events are the ingested events, ordered by index (then source).
	Events []Event `json:"events,omitempty"`
	// Tracks are the hypothesised entities, in order of creation.
	Tracks      []Track     `json:"tracks,omitempty"`
	Calibration Calibration `json:"calibration"`
	// Noise holds, per value field, what its noise is estimated from.
	Noise []Noise `json:"noise,omitempty"`
	// NextID is the id of the next track to be created.
	NextID int `json:"next_id"`
}

// Event is one ingested event's detections.
type Event struct {
	Source     string   `json:"source"`
	Index      int      `json:"index"`
	Detections []Record `json:"detections,omitempty"`
	// Steps holds, per value field, the coarsest resolution its values were written with (0.1
	// for -45.1): the noise is never taken to be finer than that.
	Steps []float64 `json:"steps,omitempty"`
}

// Record is one detection as the tracker uses it: identity, declared sd, values.
type Record struct {
	X      float64   `json:"x"`
	SD     float64   `json:"sd"`
	Values []float64 `json:"values"`
}

// Sighting is a detection assigned to a track, with the index of its event.
type Sighting struct {
	Record
	Index int `json:"index"`
}

// Track is one hypothesised entity.
type Track struct {
	ID int `json:"id"`
	// M is the identity estimate and P its variance.
	M float64 `json:"m"`
	P float64 `json:"p"`
	// SD is the mean declared sd of its detections (it sets the identity's display precision).
	SD     float64    `json:"sd"`
	Values []Estimate `json:"values"`
	// Sightings are the detections assigned to it, one per event it was detected in, in
	// event order.
	Sightings []Sighting `json:"sightings"`
	Support   int        `json:"support"`
	First     int        `json:"first"`
	Last      int        `json:"last"`
}

// Estimate is one value of a track: every value observed, sorted (for the median), and the
// posterior mean over the sightings that agree with the track.
type Estimate struct {
	Observed []float64 `json:"observed"`
	// N counts the agreeing values and Mean is their mean: the posterior is N(Mean, σ_f²/N).
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
}

// Calibration holds the sum and count of the normalized identity residuals of confirmed
// matches.
type Calibration struct {
	Sum float64 `json:"sum"`
	N   int     `json:"n"`
}

// Noise holds a value field's standardized innovations |v − v̄|/√(1 + 1/n) (the miss of each
// value against its track's estimate before the update), sorted.
type Noise struct {
	Innovations []float64 `json:"innovations,omitempty"`
	// Step is the coarsest resolution of the field's values so far: a floor on σ_f.
	Step float64 `json:"step,omitempty"`
}

// Factor is the calibration factor c: the mean residual with its prior, clamped.
func (c Calibration) Factor() float64 {
	f := (calibrationPrior + c.Sum) / float64(calibrationPrior+c.N)
	return min(max(f, calibrationMin), calibrationMax)
}

// variance is the field's noise variance σ_f², estimated robustly as (median innovation /
// 0.6745)² so that clutter that slipped into a track cannot inflate it, but never below the
// values' resolution (values copied unchanged from event to event would otherwise make it 0),
// and whether it rests on enough innovations to gate the matching.
func (n Noise) variance() (float64, bool) {
	k := len(n.Innovations)
	if k == 0 {
		return 0, false
	}
	med := n.Innovations[k/2]
	if k%2 == 0 {
		med = (med + n.Innovations[k/2-1]) / 2
	}
	s := max(med/madNormal, n.Step)
	return s * s, k >= valueGateDF
}

// Ingest adds the detections of x to d and associates them with its tracks. An event that
// comes in stream order is associated on the spot; one that comes earlier than events already
// held, or again (same source and index), makes d replay every event in order.
func (Runtime) Ingest(d *Data, b *Bindings, x *Batch, ev numeric.Event) {
	d.bind(b)
	e := d.event(b, x, ev)
	i, found := slices.BinarySearchFunc(d.Events, e, compareEvents)
	if found {
		d.Events[i] = e
		d.replay()
		return
	}
	d.Events = slices.Insert(d.Events, i, e)
	if i < len(d.Events)-1 {
		d.replay()
		return
	}
	d.observe(e)
}

// Forget removes the events of sources and replays what is left.
func (Runtime) Forget(d *Data, sources []string) {
	n := len(d.Events)
	d.Events = slices.DeleteFunc(d.Events, func(e Event) bool { return slices.Contains(sources, e.Source) })
	if len(d.Events) != n {
		d.replay()
	}
}

func compareEvents(a, b Event) int {
	return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Source, b.Source))
}

// bind fixes the value fields on first use. Bindings are frozen for a cluster's life; records
// are always read by d.Fields, so a batch can never misalign them.
func (d *Data) bind(b *Bindings) {
	if len(d.Fields) == 0 {
		d.Fields = slices.Clone(b.Values)
		d.Noise = make([]Noise, len(d.Fields))
	}
}

// event turns a checked batch into the event ev as the tracker keeps it. The detections are
// sorted, so that the order in which the extractor listed them does not matter; one lacking a
// field or holding a non-number is skipped (CheckBatch refuses such batches).
func (d *Data) event(b *Bindings, x *Batch, ev numeric.Event) Event {
	e := Event{Source: ev.Source, Index: ev.Index}
	for _, det := range x.Detections {
		if r, ok := d.record(b, det); ok {
			e.Detections = append(e.Detections, r)
			if e.Steps == nil {
				e.Steps = make([]float64, len(d.Fields))
			}
			for f, name := range d.Fields {
				e.Steps[f] = max(e.Steps[f], step(det[name]))
			}
		}
	}
	slices.SortFunc(e.Detections, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.X, b.X), cmp.Compare(a.SD, b.SD), slices.Compare(a.Values, b.Values))
	})
	return e
}

// step is the resolution of a literal number: one unit of its last digit (0.01 for 0.20, 100
// for 1.2e3, 1 for 45), at most maxMagnitude (0e400 is a value of 0 the tracker takes, but its
// last digit stands for 1e400, which no float64 holds). The exponent is read saturating, and
// kept as a float64, so that no literal can wrap it around.
func step(n numeric.Number) float64 {
	s := strings.ToLower(string(n))
	exp := 0.0
	if i := strings.IndexByte(s, 'e'); i >= 0 {
		e, _ := strconv.ParseInt(s[i+1:], 10, 64) // ±9.2e18 when out of range
		exp = float64(e)
		s = s[:i]
	}
	if i := strings.IndexByte(s, '.'); i >= 0 {
		exp -= float64(len(s) - i - 1)
	}
	return min(math.Pow(10, exp), maxMagnitude)
}

func (d *Data) record(b *Bindings, det Detection) (Record, bool) {
	num := func(field string) (float64, bool) {
		n, ok := det[field]
		if !ok {
			return 0, false
		}
		f, err := numeric.Float(n)
		return f, err == nil
	}
	x, okX := num(b.Identity)
	s, okS := num(b.Scale)
	if !okX || !okS || s <= 0 {
		return Record{}, false
	}
	if b.ScaleKind == ScaleExtent {
		s /= math.Sqrt(12)
	}
	r := Record{X: x, SD: s, Values: make([]float64, len(d.Fields))}
	for k, f := range d.Fields {
		v, ok := num(f)
		if !ok {
			return Record{}, false
		}
		r.Values[k] = v
	}
	return r, true
}

// recordCount counts the detections d holds.
func (d *Data) recordCount() int {
	n := 0
	for _, e := range d.Events {
		n += len(e.Detections)
	}
	return n
}

// replay rebuilds the tracks from the raw events, in order.
func (d *Data) replay() {
	d.Tracks = nil
	d.Calibration = Calibration{}
	d.Noise = make([]Noise, len(d.Fields))
	d.NextID = 0
	for _, e := range d.Events {
		d.observe(e)
	}
}

// clone copies what association changes: the tracks, the calibration and the noise (not the
// raw events). The copy shares the arrays of the sorted values, sightings and innovations, but
// clipped: the first insertion or append into one of them allocates a new array, so d is never
// written through the copy.
func (d *Data) clone() *Data {
	c := &Data{Fields: d.Fields, Calibration: d.Calibration, NextID: d.NextID}
	c.Noise = make([]Noise, len(d.Noise))
	for f, n := range d.Noise {
		c.Noise[f] = Noise{Innovations: slices.Clip(n.Innovations), Step: n.Step}
	}
	c.Tracks = make([]Track, len(d.Tracks))
	for i, t := range d.Tracks {
		t.Sightings = slices.Clip(t.Sightings)
		t.Values = slices.Clone(t.Values)
		for f := range t.Values {
			t.Values[f].Observed = slices.Clip(t.Values[f].Observed)
		}
		c.Tracks[i] = t
	}
	return c
}
