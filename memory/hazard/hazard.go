// Package hazard is the discrete-event memory system (docs/learning.md, "The systems", id "hazard"; the Routed Continual Learning paper
// B.2 and D.2.4): a cluster whose tasks ask for event-free curves over J ordered intervals (the
// share of a group that has had no event by the end of each interval) keeps the aggregates it
// has seen, fits one pooled model of conditional hazards to all of them, and advises a curve
// for every group a task asks about.
//
// # The model
//
// A record belongs to an entity key k: the target with the dimensions bound as entity (say
// plan=basic, region=north). Each dim=value pair of k is a feature that other keys may share.
// Context dimensions, when bound, name a condition of the source that several entities share (a
// nuisance, not part of what is followed). For interval j = 1..J the hazard, the chance of an
// event within j for one still at risk at its start, is
//
//	logit h[k,j] = alpha_j + sum_{(d=v) in k} beta[d=v] + u[k] + sum_{roles r} c[r=value]
//
// with priors
//
//	alpha_j ~ N(logit p0, 3^2)    p0 = (events + 1/2) / (at risk + 1), pooled over all records
//	beta, u, c ~ N(0, 1)          one weakly informative prior shared by every effect
//
// and the likelihood events[k,j] ~ Binomial(at_risk[k,j], h[k,j]). The fit is the maximum a
// posteriori point, found by L-BFGS (gonum/optimize) on the analytic gradient of the negative
// log posterior; records of the same key, context and interval are summed first, which the
// binomial likelihood allows exactly. The event-free curve is s_j = prod_{i<=j} (1 - h[k,i]),
// non-increasing by construction.
//
// Pooling follows from the shared terms: a key seen rarely is pulled toward what its features
// and the baseline say, since its own u[k] has little data against its prior; a key never seen
// gets u = 0 and its curve from the baseline and the effects of whichever of its features were
// seen (until counts of its own come: see below). A requested key's context values enter when they were seen, and count 0 (the average
// condition) otherwise.
//
// Intervals without any data keep no estimate of their own: their baseline is that of the
// nearest earlier interval with data (the hazard is carried on unchanged), or logit p0 when no
// earlier interval has data. Carrying the last seen interval forward is chosen over the pooled
// rate because the pooled rate mixes early and late intervals, while a constant hazard is the
// plainest continuation of the latest one measured.
//
// # Evidence
//
// Counts records give at_risk and events for one interval of one key. A realized curve (the
// outcome a feedback reveals, measured on a larger sample) becomes pseudo-counts of a sample of
// PseudoSize: n_j = W * s_{j-1} (s_0 = 1) and d_j = n_j * (1 - s_j / s_{j-1}); an interval whose
// n_j is 0 adds nothing. A realized curve may stop before J: it then covers its first
// intervals only. The support of a curve is the at-risk total, real and pseudo, of its key in
// interval 1 (0 for a key never seen); a key never seen still gets a curve as soon as the
// cluster holds any evidence at all. Records with no one at risk are kept but add nothing.
//
// # Conditioning on the current task
//
// A task usually shows the counts of its own small cohort, of the very group whose curve it
// asks for, and those counts reach the fit only when the task has ended. Advise uses them at
// once, without a refit: for a requested key k whose counts the current batch holds, the
// baselines and the feature and context effects stay as fitted and only k's own effect u = u[k]
// is estimated again, as the maximum of its log posterior given every cell c of k (the stored
// records of k and the current counts, summed per context and interval as the fit sums them):
//
//	l(u)   = sum_c [ d_c (o_c + u) - n_c log(1 + exp(o_c + u)) ] - u^2 / 2
//	o_c    = alpha_j + sum_{(d=v) in k} beta[d=v] + sum_{roles r} c[r=value]   (c's interval j, context)
//	l'(u)  = sum_c (d_c - n_c h_c) - u,   h_c = sigmoid(o_c + u)
//	l''(u) = -sum_c n_c h_c (1 - h_c) - 1
//	u     <- u - l'(u) / l''(u)   (one Newton step)
//
// l is strictly concave, so Newton steps from the fitted u[k] (0 for a key never seen) find its
// one maximum in a few iterations; a step is capped at 2 on the logit scale and, should it
// leave the interval that the points evaluated so far show to hold the root, is replaced by
// that interval's middle. Without new counts the fitted u[k] is already that maximum (the fit
// is stationary in every coordinate). The key's curve is the model's with the new u[k], and
// its support adds the current first-interval count.
//
// Which current counts are new follows Ingest, which replaces what an event gave before: a
// stored count of the current task's source with the same key, context and interval is what
// the current count would replace, so the current cell takes its place, and when the two are
// equal nothing changes (the stored curve is rendered as before). The source alone identifies
// the event here (Ingest also compares the event index): in a cluster's stream a source is
// ingested once, and an advisory read again after its task was ingested gets a new index.
//
// Everything else waits for the refit: the counts of keys not requested, realized curves (a
// task shows them at its end), and how the new counts would move the shared baseline and
// feature effects. That last part is small while the key's own evidence is a small share of
// the cluster's; on simulated data the conditioned curve stays within 0.004 (mean absolute) of
// a refit with the counts ingested.
//
// # Where the work happens
//
// Ingest (a background job) keeps the raw records and refits from scratch, storing the fitted
// parameters in Data; Advise (at a task's start) sums a few of them per requested key and, for
// a key whose current counts are new, reads that key's records in one pass over Data.Records
// and takes a few Newton steps. Refitting from the same starting point every time makes the fit
// a function of the records alone, so Forget followed by a refit leaves Data as if the
// forgotten events never came.
package hazard

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam/memory/numeric"
)

var _ numeric.Runtime[Bindings, Batch, Data] = Runtime{}

// Runtime is the discrete-event runtime; it holds nothing (its state is Data).
type Runtime struct{}

// Bindings are the adapter's choices for a cluster, frozen for its life.
type Bindings struct {
	// Target is the name of the quantity whose event-free curves are asked for.
	Target string `json:"target"`
	// Entity are the dimensions that identify what is followed; each dim=value is a feature.
	Entity []string `json:"entity"`
	// Contexts are dimensions that name a source-wide nuisance condition (usually none).
	Contexts []string `json:"contexts"`
	// Intervals is J, the number of ordered intervals of a curve (1..100).
	Intervals int `json:"intervals"`
}

// Batch is what the extractor found in one event.
type Batch struct {
	Requested []Request `json:"requested"`
	Counts    []Count   `json:"counts"`
	Curves    []Curve   `json:"curves"`
}

// Request is one curve a task asks for.
type Request struct {
	Target    string            `json:"target"`
	Dims      map[string]string `json:"dims"`
	Intervals numeric.Number    `json:"intervals"`
}

// Count is one visible aggregate: how many were at risk at the start of an interval and how
// many had the event within it.
type Count struct {
	Target   string            `json:"target"`
	Dims     map[string]string `json:"dims"`
	Interval numeric.Number    `json:"interval"`
	AtRisk   numeric.Number    `json:"at_risk"`
	Events   numeric.Number    `json:"events"`
}

// Curve is one realized event-free curve revealed by feedback, intervals 1, 2, … in order.
type Curve struct {
	Target string            `json:"target"`
	Dims   map[string]string `json:"dims"`
	Values []numeric.Number  `json:"values"`
}

// Name returns "hazard".
func (Runtime) Name() string { return Name }

// Description says what the system keeps and when to choose it; the router reads it.
func (Runtime) Description() string {
	return "Keeps counts of how many were at risk and how many had an event in each of a fixed number of ordered " +
		"intervals, per group, and fits one pooled hazard model to them, so that groups seen rarely or never " +
		"borrow from groups that share their features. Choose it when tasks ask for event-free (survival, " +
		"retention) curves per group and show per-interval aggregates."
}

// Operator returns "discrete_event_v1".
func (Runtime) Operator() string { return "discrete_event_v1" }

// AdapterContract tells the adapter what each role of the bindings means.
func (Runtime) AdapterContract() string {
	return `Bind the roles of a discrete-event runtime. It learns, for groups followed over a fixed number of
ordered intervals, the chance of having no event by the end of each interval, pooling groups that share
conditions.
- target: the name of the quantity whose event-free curve the current task asks for (the name before the
  bracketed dimensions of the requested key).
- entity: the dimension names of that key which identify the group followed. Each dimension=value pair is
  treated as a condition that other groups may share.
- contexts: dimension names that describe a condition of the whole source, repeated across several
  measured groups (for instance the site or season a batch of data comes from). Usually this is empty.
  Never use group identifiers, the requested key's own dimensions, or labels that occur once.
- intervals: the number of ordered intervals of each requested curve, a whole number from 1 to 100.
Name only dimensions that appear in the tasks shown. Give no numbers other than intervals: the runtime
sets its own baseline and priors.`
}

// BindingsSchema is the JSON schema of Bindings.
func (Runtime) BindingsSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","additionalProperties":false,` +
		`"required":["target","entity","contexts","intervals"],"properties":{` +
		`"target":{"type":"string"},` +
		`"entity":{"type":"array","items":{"type":"string"}},` +
		`"contexts":{"type":"array","items":{"type":"string"}},` +
		`"intervals":{"type":"integer","minimum":1,"maximum":100}}}`)
}

// ExtractorContract tells the extractor what to emit under bindings b.
func (Runtime) ExtractorContract(b *Bindings) string {
	var s strings.Builder
	fmt.Fprintf(&s, `Turn the event into typed evidence for a discrete-event runtime. The target is %q and a curve has
%d ordered intervals. A record's dims use only these dimension names: entity %s; contexts %s. Give null
(or leave out) a dimension the record does not state.
- requested: every event-free curve the event asks to be estimated: its target, its dims, and its number
  of intervals as written.
- counts: every visible aggregate of one interval: the interval's number (1 is the first), how many were
  at risk at its start (at_risk) and how many had the event within it (events).
- curves: every realized event-free curve an outcome or feedback reveals, with its values in interval
  order. Never record an answer, a prediction, an advisory curve or a score as a realized curve.
Copy every name and number exactly as it is written in the event; do not compute, round or convert.
Leave a list empty when the event holds nothing of that kind.`,
		b.Target, b.Intervals, nameList(b.Entity), nameList(b.Contexts))
	return s.String()
}

// BatchSchema is the JSON schema of Batch under b: dims may hold only the bound dimensions.
func (Runtime) BatchSchema(b *Bindings) json.RawMessage {
	dims := dimsSchema(b)
	item := func(fields ...string) string {
		props := []string{`"target":{"type":"string"}`, `"dims":` + dims}
		names := []string{`"target"`, `"dims"`}
		for _, f := range fields {
			kind := `{"type":"integer"}`
			if f == "values" {
				kind = `{"type":"array","items":{"type":"number"}}`
			}
			props = append(props, fmt.Sprintf("%q:%s", f, kind))
			names = append(names, fmt.Sprintf("%q", f))
		}
		return `{"type":"array","items":{"type":"object","additionalProperties":false,"required":[` +
			strings.Join(names, ",") + `],"properties":{` + strings.Join(props, ",") + `}}}`
	}
	return json.RawMessage(`{"type":"object","additionalProperties":false,` +
		`"required":["requested","counts","curves"],"properties":{` +
		`"requested":` + item("intervals") + `,` +
		`"counts":` + item("interval", "at_risk", "events") + `,` +
		`"curves":` + item("values") + `}}`)
}

// dimsSchema is the schema of a record's dims: one property per bound dimension, a string or
// null.
func dimsSchema(b *Bindings) string {
	var props, names []string
	for _, d := range append(append([]string{}, b.Entity...), b.Contexts...) {
		props = append(props, fmt.Sprintf(`%q:{"type":["string","null"]}`, d))
		names = append(names, fmt.Sprintf("%q", d))
	}
	return `{"type":"object","additionalProperties":false,"required":[` + strings.Join(names, ",") +
		`],"properties":{` + strings.Join(props, ",") + `}}`
}

func nameList(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

// Entries counts the records Data holds (pseudo-count records included).
func (Runtime) Entries(d *Data) int { return len(d.Records) }
