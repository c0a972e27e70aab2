package sim

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/entities"
	"github.com/hippocam/hippocam/memory/hazard"
	"github.com/hippocam/hippocam/memory/numeric"
	"github.com/hippocam/hippocam/memory/regression"
)

// The numeric memory systems' roles (docs/sim.md, "Part 3: numeric memory"): the adapter, which
// binds a cluster's fields and dimensions to a runtime's roles once, and the extractor, which
// copies the numbers of one visible event into typed records. Both read the last user message
// that names the memory system (memory/numeric's layout):
//
//	Memory system: NAME (OPERATOR)
//	[Bindings: {…}]                    extractor only
//	<instruction and the runtime's contract>
//	Completed task (the warm-up): …    adapter: two events
//	Current task: …
//	Event: …                           extractor: one event
//
// and answer one JSON object: the bindings (adapter) or the batch (extractor) of the system
// named. The contract's prose never holds a line in the forms they read, so the adapter may read
// every line of the message; the extractor reads only the event after the `Event:` line. A
// repair (the rejection text after the instruction, or a later message) gets the same answer.

// Lines of memory/numeric's requests, and the mark of a repeated contract call (package learn).
const (
	systemLinePrefix   = numeric.SystemLinePrefix
	bindingsLinePrefix = numeric.BindingsLinePrefix
	eventLine          = numeric.EventLine
	rejectedMarker     = learn.RejectedMarker
)

// Names of the numeric systems.
const (
	regressionSystem = regression.Name
	hazardSystem     = hazard.Name
	entitiesSystem   = entities.Name
)

// timeDims are the dimension names the adapter takes for time when nothing binds one.
var timeDims = []string{"week", "day", "month", "time", "t", "round", "step"}

// scaleFields are the field names the adapter takes for an entity's scale; sdFields those of them
// that give a standard deviation (the others give the full width of a uniform spread).
var (
	scaleFields = []string{"bw", "width", "span", "sigma", "sd"}
	sdFields    = []string{"sigma", "sd"}
)

// numericRequestText returns the numeric system named by the request's instruction and the
// instruction's lines up to any rejection text. EINVALID when no user message names a system.
func numericRequestText(r *request, role hippocam.CallRole) (system string, lines []string, err error) {
	for i := len(r.msgs) - 1; i >= 0; i-- {
		m := &r.msgs[i]
		if m.Role != hippocam.RoleUser {
			continue
		}
		text, _, _ := strings.Cut(m.Content, rejectedMarker)
		lines = strings.Split(text, "\n")
		for _, s := range lines {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(s), systemLinePrefix); ok {
				name, _, _ := strings.Cut(rest, "(")
				return strings.TrimSpace(name), lines, nil
			}
		}
	}
	return "", nil, hippocam.Errorf(hippocam.EINVALID, "%s request: no user message has a line %q naming the memory system", role, strings.TrimSpace(systemLinePrefix))
}

// unknownSystem is the error for a system the simulation has no rules for.
func unknownSystem(role hippocam.CallRole, name string) error {
	return hippocam.Errorf(hippocam.EINVALID, "%s request: unknown memory system %q; the numeric systems are regression, hazard and entities", role, name)
}

// bodies returns the lines as the simulation reads them.
func bodies(lines []string) []string {
	out := make([]string, len(lines))
	for i, s := range lines {
		out[i] = Body(s)
	}
	return out
}

// regressionBindings, hazardBindings and entitiesBindings are the adapter's answers.
type regressionBindings struct {
	Target  string   `json:"target"`
	Key     string   `json:"key"`
	Time    string   `json:"time"`
	Factors []string `json:"factors"`
	Family  string   `json:"family"`
}

type hazardBindings struct {
	Target    string   `json:"target"`
	Entity    []string `json:"entity"`
	Contexts  []string `json:"contexts"`
	Intervals int      `json:"intervals"`
}

type entitiesBindings struct {
	Identity  string   `json:"identity"`
	Scale     string   `json:"scale"`
	ScaleKind string   `json:"scale_kind"`
	Values    []string `json:"values"`
}

// families are regression's families; the default is the first.
var families = []string{"real", "positive", "count", "probability"}

// adapter answers the adapter role: the bindings of the #bind lines when there are any,
// otherwise the defaults of the system (adaptRegression, adaptHazard, adaptEntities).
func adapter(r *request) (answer, error) {
	name, lines, err := numericRequestText(r, hippocam.CallAdapter)
	if err != nil {
		return answer{}, err
	}
	ls := bodies(lines)
	var binds [][2]string
	for _, b := range ls {
		if pairs, ok := readBind(b); ok {
			binds = append(binds, pairs...)
		}
	}
	var b any
	switch name {
	case regressionSystem:
		b = adaptRegression(ls, binds)
	case hazardSystem:
		b = adaptHazard(ls, binds)
	case entitiesSystem:
		b = adaptEntities(ls, binds)
	default:
		return answer{}, unknownSystem(hippocam.CallAdapter, name)
	}
	return contractAnswer(r, string(hippocam.CallAdapter), b)
}

// firstKey is the key of the first line read by request (a request of the given kind), else of
// the first line read by data.
func firstKey(ls []string, kind string, data func(string) (NumericKey, bool)) NumericKey {
	for _, b := range ls {
		if q, ok := readNumericRequest(b); ok && q.kind == kind {
			return q.key
		}
	}
	for _, b := range ls {
		if k, ok := data(b); ok {
			return k
		}
	}
	return NumericKey{}
}

// adaptRegression binds regression's roles. With #bind: NAME=key, NAME=time, NAME=factor for
// dimensions, and NAME=target or NAME=FAMILY for the target; what no line binds is left out
// (the target defaults to the estimate's name, the family to real). Without: the estimate's
// name is the target; of its key's dimensions, in the order written, the first named like time
// is the time, the first other is the key, the rest are factors; the family is real.
func adaptRegression(ls []string, binds [][2]string) regressionBindings {
	k := firstKey(ls, reqEstimate, func(b string) (NumericKey, bool) {
		o, ok := readObs(b)
		return o.key, ok
	})
	b := regressionBindings{Target: k.Name, Factors: []string{}, Family: families[0]}
	if len(binds) > 0 {
		for _, p := range binds {
			switch name, role := p[0], p[1]; {
			case role == "key" && b.Key == "":
				b.Key = name
			case role == "time" && b.Time == "":
				b.Time = name
			case role == "factor":
				b.Factors = append(b.Factors, name)
			case role == "target":
				b.Target = name
			case slices.Contains(families, role):
				b.Target, b.Family = name, role
			}
		}
		return b
	}
	for _, d := range k.Dims {
		switch {
		case b.Time == "" && slices.Contains(timeDims, d.Name):
			b.Time = d.Name
		case b.Key == "":
			b.Key = d.Name
		default:
			b.Factors = append(b.Factors, d.Name)
		}
	}
	return b
}

// adaptHazard binds hazard's roles. With #bind: NAME=entity, NAME=context, NAME=target. Without:
// the dimensions of the curve's key identify the entity, in the order written, and no context.
// The intervals are the J of the first estimate-curve line (else the last interval of any counts
// line).
func adaptHazard(ls []string, binds [][2]string) hazardBindings {
	k := firstKey(ls, reqCurve, func(b string) (NumericKey, bool) {
		c, ok := readCounts(b)
		return c.key, ok
	})
	b := hazardBindings{Target: k.Name, Entity: []string{}, Contexts: []string{}}
	for _, s := range ls {
		if q, ok := readNumericRequest(s); ok && q.kind == reqCurve {
			b.Intervals = q.over
			break
		}
		if c, ok := readCounts(s); ok {
			j, _ := finite(c.interval)
			b.Intervals = max(b.Intervals, int(j))
		}
	}
	if len(binds) > 0 {
		for _, p := range binds {
			switch name, role := p[0], p[1]; role {
			case "entity":
				b.Entity = append(b.Entity, name)
			case "context":
				b.Contexts = append(b.Contexts, name)
			case "target":
				b.Target = name
			}
		}
		return b
	}
	for _, d := range k.Dims {
		b.Entity = append(b.Entity, d.Name)
	}
	return b
}

// adaptEntities binds entities' roles. With #bind: NAME=identity, NAME=scale, NAME=value.
// Without: the first field of the first det line is the identity, the first other field named
// like a scale is the scale, and every other field of the det lines, in the order first seen, is
// a value. The scale kind is sd for a scale named sigma or sd, extent otherwise.
func adaptEntities(ls []string, binds [][2]string) entitiesBindings {
	b := entitiesBindings{Values: []string{}}
	if len(binds) > 0 {
		for _, p := range binds {
			switch name, role := p[0], p[1]; role {
			case "identity":
				b.Identity = name
			case "scale":
				b.Scale = name
			case "value":
				b.Values = append(b.Values, name)
			}
		}
	} else {
		var names []string
		for _, s := range ls {
			fs, _ := readDet(s)
			for _, f := range fs {
				if !slices.Contains(names, f.name) {
					names = append(names, f.name)
				}
			}
		}
		for i, n := range names {
			switch {
			case i == 0:
				b.Identity = n
			case b.Scale == "" && slices.Contains(scaleFields, n):
				b.Scale = n
			default:
				b.Values = append(b.Values, n)
			}
		}
	}
	b.ScaleKind = "extent"
	if slices.Contains(sdFields, b.Scale) {
		b.ScaleKind = "sd"
	}
	return b
}

// The extractor's batches. Numbers are the event's literals (json.Number keeps their text).
type (
	regressionPoint struct {
		Target string            `json:"target"`
		Dims   map[string]string `json:"dims"`
	}
	regressionOutcome struct {
		Target string            `json:"target"`
		Dims   map[string]string `json:"dims"`
		Value  json.Number       `json:"value"`
	}
	regressionBatch struct {
		Requested []regressionPoint   `json:"requested"`
		Outcomes  []regressionOutcome `json:"outcomes"`
	}

	hazardRequest struct {
		Target    string            `json:"target"`
		Dims      map[string]string `json:"dims"`
		Intervals json.Number       `json:"intervals"`
	}
	hazardCount struct {
		Target   string            `json:"target"`
		Dims     map[string]string `json:"dims"`
		Interval json.Number       `json:"interval"`
		AtRisk   json.Number       `json:"at_risk"`
		Events   json.Number       `json:"events"`
	}
	hazardCurve struct {
		Target string            `json:"target"`
		Dims   map[string]string `json:"dims"`
		Values []json.Number     `json:"values"`
	}
	hazardBatch struct {
		Requested []hazardRequest `json:"requested"`
		Counts    []hazardCount   `json:"counts"`
		Curves    []hazardCurve   `json:"curves"`
	}

	entitiesBatch struct {
		Requested  []string    `json:"requested"`
		Detections []detection `json:"detections"`
	}
)

// detection is one det line as a JSON object, its fields in the order written.
type detection []field

// MarshalJSON writes the fields in order, each value its literal.
func (d detection) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range d {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(f.name)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.WriteString(f.literal)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// dimsOf is a key's dimensions as a JSON object (never null).
func dimsOf(k NumericKey) map[string]string {
	m := make(map[string]string, len(k.Dims))
	for _, d := range k.Dims {
		m[d.Name] = d.Value
	}
	return m
}

// extractor answers the extractor role with the batch of the event after the `Event:` line,
// every value copied as written: for regression the points of estimate lines and the outcomes of
// obs lines and of feedback; for hazard the estimate-curve requests, the counts lines and the
// realized curves of feedback; for entities the fields of estimate-entities lines and every det
// line. Regression and hazard keep only the records of the bound target, when the Bindings line
// names one.
func extractor(r *request) (answer, error) {
	name, lines, err := numericRequestText(r, hippocam.CallExtractor)
	if err != nil {
		return answer{}, err
	}
	target, event := "", -1
	for i, s := range lines {
		s = strings.TrimSpace(s)
		if rest, ok := strings.CutPrefix(s, bindingsLinePrefix); ok && event < 0 {
			var b struct {
				Target string `json:"target"`
			}
			if json.Unmarshal([]byte(rest), &b) == nil {
				target = b.Target
			}
		}
		if s == eventLine && event < 0 {
			event = i + 1
		}
	}
	if event < 0 {
		return answer{}, hippocam.Errorf(hippocam.EINVALID, "extractor request: no line %q before the event", eventLine)
	}
	ls := bodies(lines[event:])
	keep := func(k NumericKey) bool { return target == "" || k.Name == target }
	var batch any
	switch name {
	case regressionSystem:
		batch = extractRegression(ls, keep)
	case hazardSystem:
		batch = extractHazard(ls, keep)
	case entitiesSystem:
		batch = extractEntities(ls)
	default:
		return answer{}, unknownSystem(hippocam.CallExtractor, name)
	}
	return contractAnswer(r, string(hippocam.CallExtractor), batch)
}

func extractRegression(ls []string, keep func(NumericKey) bool) regressionBatch {
	x := regressionBatch{Requested: []regressionPoint{}, Outcomes: []regressionOutcome{}}
	for _, b := range ls {
		if q, ok := readNumericRequest(b); ok && q.kind == reqEstimate && keep(q.key) {
			x.Requested = append(x.Requested, regressionPoint{q.key.Name, dimsOf(q.key)})
		}
		if o, ok := readObs(b); ok && keep(o.key) {
			x.Outcomes = append(x.Outcomes, regressionOutcome{o.key.Name, dimsOf(o.key), json.Number(o.value)})
		}
		if o, ok := readOutcome(b); ok && o.list == nil && keep(o.key) {
			x.Outcomes = append(x.Outcomes, regressionOutcome{o.key.Name, dimsOf(o.key), json.Number(o.value)})
		}
	}
	return x
}

func extractHazard(ls []string, keep func(NumericKey) bool) hazardBatch {
	x := hazardBatch{Requested: []hazardRequest{}, Counts: []hazardCount{}, Curves: []hazardCurve{}}
	for _, b := range ls {
		if q, ok := readNumericRequest(b); ok && q.kind == reqCurve && keep(q.key) {
			_, over, _ := strings.Cut(q.rest, "over")
			x.Requested = append(x.Requested, hazardRequest{q.key.Name, dimsOf(q.key), json.Number(strings.TrimSpace(over))})
		}
		if c, ok := readCounts(b); ok && keep(c.key) {
			x.Counts = append(x.Counts, hazardCount{c.key.Name, dimsOf(c.key), json.Number(c.interval), json.Number(c.atRisk), json.Number(c.events)})
		}
		if o, ok := readOutcome(b); ok && o.list != nil && keep(o.key) {
			values := make([]json.Number, len(o.list))
			for i, v := range o.list {
				values[i] = json.Number(v)
			}
			x.Curves = append(x.Curves, hazardCurve{o.key.Name, dimsOf(o.key), values})
		}
	}
	return x
}

func extractEntities(ls []string) entitiesBatch {
	x := entitiesBatch{Requested: []string{}, Detections: []detection{}}
	for _, b := range ls {
		if q, ok := readNumericRequest(b); ok && q.kind == reqEntities && !slices.Contains(x.Requested, q.field) {
			x.Requested = append(x.Requested, q.field)
		}
		if fs, ok := readDet(b); ok {
			x.Detections = append(x.Detections, detection(fs))
		}
	}
	return x
}
