package sim

import (
	"strings"
)

// The simulated agent's numeric answers (docs/sim.md, "Part 3: numeric memory"). A numeric
// request of the current task's message is answered where its decisions are (decide hands it
// here), one answer line per request, or one line per entity for estimate-entities. The agent
// copies: it prefers advice to raw data, and among raw data the most recent similar case; it
// never pools observations itself, which is the memory systems' work.

// minEntitySupport is the support an entity advice line needs before the agent believes it.
const minEntitySupport = 3

// numeric answers one numeric request of message cur.
func (x *exchange) numeric(cur int, q *numericRequest) string {
	switch q.kind {
	case reqEstimate:
		return x.estimate(cur, q)
	case reqCurve:
		return x.estimateCurve(cur, q)
	}
	return x.estimateEntities(cur, q)
}

// seen reports whether the agent reads message i: every message but the recall results of
// questions answered before.
func (x *exchange) seen(i int) bool { return !x.r.recallResult[i] || i > x.last }

// latestFirst lists the messages the agent reads from the most recent to the earliest, the
// current task's message first: its data is the latest there is.
func (x *exchange) latestFirst(cur int) []int {
	order := []int{cur}
	for i := len(x.r.msgs) - 1; i >= 0; i-- {
		if i != cur && x.seen(i) {
			order = append(order, i)
		}
	}
	return order
}

// estimate answers `estimate KEY` with `KEY = N`: the first forecast for KEY in the context;
// else the latest visible value of a loosely matching key, from obs lines and the outcomes of
// feedback lines; else `KEY = unknown`.
func (x *exchange) estimate(cur int, q *numericRequest) string {
	for i := range x.r.msgs {
		if !x.seen(i) {
			continue
		}
		for _, l := range x.r.lines(i) {
			if f, ok := readForecast(l.body); ok && f.key.Same(q.key) {
				return q.text + " = " + plainLiteral(f.value)
			}
		}
	}
	for _, i := range x.latestFirst(cur) {
		ls := x.r.lines(i)
		for j := len(ls) - 1; j >= 0; j-- {
			if o, ok := readObs(ls[j].body); ok && o.key.Loose(q.key) {
				return q.text + " = " + plainLiteral(o.value)
			}
			if o, ok := readOutcome(ls[j].body); ok && o.list == nil && o.key.Loose(q.key) {
				return q.text + " = " + plainLiteral(o.value)
			}
		}
	}
	return q.text + " = unknown"
}

// estimateCurve answers `estimate-curve KEY over J` with `KEY = [s1, …, sJ]`: the first curve
// advice for KEY; else the latest realized curve of a loosely matching key in a feedback line;
// else the Kaplan–Meier curve of the current message's counts for KEY; else `KEY = unknown`. A
// copied curve is cut to J values, or continued with its last one.
func (x *exchange) estimateCurve(cur int, q *numericRequest) string {
	for i := range x.r.msgs {
		if !x.seen(i) {
			continue
		}
		for _, l := range x.r.lines(i) {
			if c, ok := readCurve(l.body); ok && c.key.Same(q.key) {
				return q.text + " = " + curveText(literalValues(c.values), q.over)
			}
		}
	}
	for _, i := range x.latestFirst(cur) {
		ls := x.r.lines(i)
		for j := len(ls) - 1; j >= 0; j-- {
			if o, ok := readOutcome(ls[j].body); ok && o.list != nil && o.key.Loose(q.key) {
				return q.text + " = " + curveText(literalValues(o.list), q.over)
			}
		}
	}
	if s, ok := kaplanMeier(x.r.lines(cur), q.key, q.over); ok {
		return q.text + " = " + curveText(s, q.over)
	}
	return q.text + " = unknown"
}

// kaplanMeier is the event-free curve of the counts lines for key among ls: s_j is the product
// over intervals i ≤ j of 1 − d_i/n_i. Lines of one interval are pooled; an interval without
// counts (or with no one at risk) leaves the curve where it was. ok is false with no counts.
func kaplanMeier(ls []line, key NumericKey, over int) ([]float64, bool) {
	atRisk, events := make([]float64, over+1), make([]float64, over+1)
	found := false
	for _, l := range ls {
		c, ok := readCounts(l.body)
		if !ok || !c.key.Same(key) {
			continue
		}
		j, _ := finite(c.interval)
		n, okN := finite(c.atRisk)
		d, okD := finite(c.events)
		if !okN || !okD || int(j) > over {
			continue
		}
		atRisk[int(j)] += n
		events[int(j)] += d
		found = true
	}
	if !found {
		return nil, false
	}
	s, surv := make([]float64, over), 1.0
	for j := 1; j <= over; j++ {
		if atRisk[j] > 0 {
			surv *= 1 - min(max(events[j]/atRisk[j], 0), 1)
		}
		s[j-1] = surv
	}
	return s, true
}

// estimateEntities answers `estimate-entities FIELD` with one line `entity ID=N FIELD=N` per
// entity believed present (ID the identity field, the first one of its line): every entity advice
// line with support of at least minEntitySupport, in context order; if there is none, every det
// line of the current message, with its observed values. A line without FIELD is passed over.
func (x *exchange) estimateEntities(cur int, q *numericRequest) string {
	var out []string
	for i := range x.r.msgs {
		if !x.seen(i) {
			continue
		}
		for _, l := range x.r.lines(i) {
			if e, ok := readEntity(l.body); ok && e.support >= minEntitySupport {
				if a, ok := entityAnswer(e.fields, q.field); ok {
					out = append(out, a)
				}
			}
		}
	}
	if len(out) == 0 {
		for _, l := range x.r.lines(cur) {
			if fs, ok := readDet(l.body); ok {
				if a, ok := entityAnswer(fs, q.field); ok {
					out = append(out, a)
				}
			}
		}
	}
	if len(out) == 0 {
		return "entities: none"
	}
	return strings.Join(out, "\n")
}

// entityAnswer writes one entity of an estimate-entities answer: its identity (the first field)
// and the requested field.
func entityAnswer(fs []field, want string) (string, bool) {
	v, ok := fieldValue(fs, want)
	if !ok {
		return "", false
	}
	id := fs[0]
	if id.name == want {
		return "entity " + want + "=" + plainLiteral(v), true
	}
	return "entity " + id.name + "=" + plainLiteral(id.literal) + " " + want + "=" + plainLiteral(v), true
}

// plainLiteral rewrites a number literal plainly (0.20 becomes 0.2).
func plainLiteral(s string) string {
	if f, ok := finite(s); ok {
		return plainNumber(f)
	}
	return s
}

// literalValues reads number literals (numberLiteral has checked them).
func literalValues(literals []string) []float64 {
	out := make([]float64, len(literals))
	for i, s := range literals {
		out[i], _ = finite(s)
	}
	return out
}

// curveText writes a curve of exactly j values, `[s1, …, sJ]`, three decimals at most: s cut to
// j values, or continued with its last one.
func curveText(s []float64, j int) string {
	parts := make([]string, j)
	for i := range parts {
		parts[i] = curveNumber(s[min(i, len(s)-1)])
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
