package regression

import (
	"cmp"
	"slices"

	"github.com/hippocam/hippocam/memory/numeric"
)

// Data is what a cluster holds: the raw records of every ingested event, the bindings they were
// read under, and the fit of the distinct observations among them (nil while there are none).
type Data struct {
	Bindings *Bindings `json:"bindings,omitempty"`
	Records  []Record  `json:"records,omitempty"`
	Fit      *Fit      `json:"fit,omitempty"`
}

// Record is one outcome as an event revealed it.
type Record struct {
	// Source is the trajectory of the event; Index the event's place in the cluster's stream
	// and Order the outcome's place in its batch: together they say which record is the latest.
	Source string            `json:"source"`
	Index  int               `json:"index"`
	Order  int               `json:"order"`
	Dims   map[string]string `json:"dims,omitempty"`
	Value  numeric.Number    `json:"value"`
}

// Ingest appends the outcomes of x (of the bound target) to d and refits.
func (Runtime) Ingest(d *Data, b *Bindings, x *Batch, ev numeric.Event) {
	bound := *b
	bound.Factors = slices.Clone(b.Factors)
	d.Bindings = &bound
	for i, o := range x.Outcomes {
		if o.Target != b.Target {
			continue
		}
		d.Records = append(d.Records, Record{Source: ev.Source, Index: ev.Index, Order: i, Dims: present(o.Dims), Value: o.Value})
	}
	refit(d)
}

// Forget removes the records of the given sources and refits; with no record left, d is empty.
func (Runtime) Forget(d *Data, sources []string) {
	d.Records = slices.DeleteFunc(d.Records, func(r Record) bool { return slices.Contains(sources, r.Source) })
	if len(d.Records) == 0 {
		*d = Data{}
		return
	}
	refit(d)
}

// Entries counts the raw records.
func (Runtime) Entries(d *Data) int { return len(d.Records) }

// refit replaces d's fit with one of its current records.
func refit(d *Data) {
	d.Fit = nil
	if d.Bindings == nil || len(d.Records) == 0 {
		return
	}
	if obs := observations(d.Bindings, d.Records); len(obs) > 0 {
		d.Fit = fit(d.Bindings, obs)
	}
}

// observation is one distinct observation: the latest record of its point, with what the fit
// reads off it.
type observation struct {
	Record
	point   string  // the point's identity: its dimensions, sorted
	history string  // its history: the point's dimensions but the time
	y       float64 // the value
	t       float64 // the time, when timed
	timed   bool
}

// observations keeps, of the records that share a point (same dimensions), the latest one, and
// returns them ordered by point. Records whose value does not parse are skipped.
func observations(b *Bindings, records []Record) []observation {
	latest := make(map[string]int, len(records)) // point -> its place in obs
	obs := make([]observation, 0, len(records))
	for _, r := range records {
		y, err := numeric.Float(r.Value)
		if err != nil || checkFamily(b.Family, y) != nil {
			continue
		}
		o := observation{Record: r, point: numeric.Key{Target: b.Target, Dims: r.Dims}.String(), y: y}
		i, seen := latest[o.point]
		switch {
		case !seen:
			latest[o.point] = len(obs)
			obs = append(obs, o)
		case cmp.Or(cmp.Compare(r.Index, obs[i].Index), cmp.Compare(r.Order, obs[i].Order)) >= 0:
			obs[i] = o
		}
	}
	for i := range obs {
		o := &obs[i]
		o.t, o.timed = timeOf(b, o.Dims)
		o.history = historyLabel(b, o.Dims)
	}
	slices.SortFunc(obs, func(p, q observation) int { return cmp.Compare(p.point, q.point) })
	return obs
}
