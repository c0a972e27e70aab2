// Package numeric is what the three numeric memory systems share (docs/learning.md, "The systems"; the Routed Continual Learning paper
// B.1, B.2): a cluster that is configured once from its warm-up task, a typed extractor that turns
// each visible event into records, a validator that admits only values found verbatim in the
// event, and a fixed statistical runtime that fits, associates and predicts. The systems
// themselves (memory/regression, memory/hazard, memory/entities) are each one Runtime; System
// makes any Runtime a hippocam.MemorySystem.
//
// The life of a numeric cluster:
//
//  1. Its first task runs with no advisory; its trajectory is kept as the warm-up.
//  2. On the cluster's first reuse, before that task runs, an adapter call (role adapter) binds
//     the fields and dimensions visible in the warm-up and the current task to the runtime's
//     roles, within the runtime's fixed schema: bindings, never parser code or answers. A fresh
//     runtime replays the warm-up with the bindings (one extraction) and prepares the current
//     task (another); a deterministic error goes back to the adapter once, and a second failure
//     ends configuration for good (the cluster then gives no numeric advisory, and says so).
//     Bindings are frozen for the cluster's life.
//  3. Every later event is extracted (role extractor) under the frozen bindings: the current
//     task at its start, to know what it asks for; its trajectory at its end, to learn what was
//     observed. A batch that fails validation twice is refused and reported; nothing of it
//     enters the state.
package numeric

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Runtime is the fixed part of one numeric memory system: its roles and record schema, its
// validation and its statistics. It never calls a model and never reads event text except to
// check that a value is grounded in it. B is its bindings, X one extracted batch, D its fitted
// data; all three round-trip through JSON (the cluster state holds them).
//
// Ingest and Forget change the *D they are given in place (System hands them a private copy);
// Advise only reads it.
type Runtime[B, X, D any] interface {
	// Name is the system's id; Description is what the router reads about it.
	Name() string
	Description() string
	// Operator is the versioned name of the runtime the adapter and extractor are told they
	// configure and feed (e.g. "hierarchical_regression_v1").
	Operator() string

	// AdapterContract tells the adapter what each role means and what may be bound; it is
	// appended to the common adapter instruction. BindingsSchema is the JSON schema of B.
	AdapterContract() string
	BindingsSchema() json.RawMessage
	// CheckBindings validates decoded bindings against the visible events they were chosen
	// from (the warm-up, the current task): every field or dimension named must occur in them,
	// every choice must be one the schema admits, roles must not overlap. The error is shown to
	// the adapter for its one repair, so it says exactly what is wrong.
	CheckBindings(b *B, events []string) error

	// ExtractorContract tells the extractor what records to emit under bindings b; BatchSchema
	// is the JSON schema of X under b.
	ExtractorContract(b *B) string
	BatchSchema(b *B) json.RawMessage
	// CheckBatch validates a decoded batch against the event it was extracted from: its schema
	// beyond what decoding checks, its internal consistency (counts that cannot be negative,
	// curves that cannot rise…) and its grounding (every value occurs verbatim in event; see
	// Grounded). The error is shown to the extractor for its one repair.
	CheckBatch(b *B, x *X, event string) error

	// Ingest adds what batch x observed (never what it requests) to d. ev says which event it
	// came from, so that Forget can take it out again and runtimes that track time can order
	// events.
	Ingest(d *D, b *B, x *X, ev Event)
	// Forget removes everything the events of the given trajectories contributed to d.
	Forget(d *D, sources []string)
	// CheckReplay is the last check of configuration: d holds the replayed warm-up, current
	// the current task's batch. It fails when the bindings cannot serve the cluster (the warm-up
	// gave nothing to learn from, the current task asks for nothing the runtime can answer).
	CheckReplay(d *D, b *B, current *X) error
	// Advise renders what d predicts for what the current batch asks: the lines of an
	// advisory, most useful first. ev is the current task's event (Index is the cluster's
	// next event index). Advise must not change d: decoded states are shared between reads
	// (a runtime that needs to, as an entity tracker associating the current measurements,
	// works on a copy).
	Advise(d *D, b *B, current *X, ev Event) Advice
	// Entries counts what d holds, for reports (records, intervals, entities).
	Entries(d *D) int
}

// Event names one visible event of a cluster: the trajectory (or task) it belongs to, and its
// place in the cluster's stream of events (0 for the warm-up, then 1, 2…).
type Event struct {
	Source string `json:"source"`
	Index  int    `json:"index"`
}

// Advice is an advisory's content before it is fitted into the budget: a heading, lines in
// order of use (the first ones are kept when the budget is short), and a closing line. System
// adds the line that says the figures are estimates.
type Advice struct {
	Head  string
	Lines []string
	Foot  string
}

// Number is a value as the extractor wrote it: its literal text is what Grounded looks for in
// the event, so that 0.20 and 0.2 are not the same value.
type Number = json.Number

// Float is n's value; an error names the literal when it is not a finite number.
func Float(n Number) (float64, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a finite number", string(n))
	}
	return f, nil
}

// Grounded reports whether literal occurs in event as a whole token: not as part of a longer
// word or number (12 is not grounded by 120, nor 0.2 by 0.25, nor -5 by 10-5, nor store by
// stores, nor north by north-east). A full stop after a number ends a sentence, not the number:
// 118.4 is grounded by "came to 118.4."
func Grounded(literal, event string) bool {
	if literal == "" {
		return false
	}
	for from := 0; ; {
		i := strings.Index(event[from:], literal)
		if i < 0 {
			return false
		}
		i += from
		if !continuesLeft(event, i, literal[0]) && !continuesRight(event, i+len(literal), literal[len(literal)-1]) {
			return true
		}
		from = i + 1
	}
}

func wordByte(c byte) bool {
	return c == '_' || digitByte(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func digitByte(c byte) bool { return c >= '0' && c <= '9' }

// continuesLeft reports whether what stands before event[i] would make the literal starting
// there (with first byte edge) part of a longer token.
func continuesLeft(event string, i int, edge byte) bool {
	if i == 0 {
		return false
	}
	c := event[i-1]
	switch {
	case wordByte(c) && (wordByte(edge) || edge == '-' || edge == '.'):
		return true // in a word or a number, or a sign or point glued to one
	case digitByte(edge) && (c == '.' || c == '-'):
		return true // a decimal's tail, or the other sign
	case wordByte(edge) && !digitByte(edge) && c == '-' && i >= 2 && wordByte(event[i-2]):
		return true // the second half of a hyphenated word
	}
	return false
}

// continuesRight reports whether what stands at event[j] would make the literal ending there
// (with last byte edge) part of a longer token.
func continuesRight(event string, j int, edge byte) bool {
	if j == len(event) {
		return false
	}
	c := event[j]
	next := byte(0)
	if j+1 < len(event) {
		next = event[j+1]
	}
	switch {
	case wordByte(c) && wordByte(edge):
		return true
	case digitByte(edge) && c == '.' && digitByte(next):
		return true // more decimals (a full stop is not)
	case wordByte(edge) && !digitByte(edge) && c == '-' && wordByte(next):
		return true // the first half of a hyphenated word
	}
	return false
}

// Key is a numeric quantity with its dimensions: sales[store=north,week=12]. Dimensions are a
// set: their order does not matter, and String lists them sorted.
type Key struct {
	Target string            `json:"target"`
	Dims   map[string]string `json:"dims,omitempty"`
}

// String renders k as NAME[dim=value,…], the dimensions sorted by name; a key without
// dimensions is its name alone.
func (k Key) String() string {
	if len(k.Dims) == 0 {
		return k.Target
	}
	names := make([]string, 0, len(k.Dims))
	for n := range k.Dims {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString(k.Target)
	b.WriteByte('[')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(k.Dims[n])
	}
	b.WriteByte(']')
	return b.String()
}

// CheckKey checks that a key's name and every dimension name and value are grounded in event.
// what names the key in the error ("outcome 3").
func CheckKey(k Key, event, what string) error {
	if strings.TrimSpace(k.Target) == "" {
		return fmt.Errorf("%s: the target name is empty", what)
	}
	if !Grounded(k.Target, event) {
		return fmt.Errorf("%s: the target name %q does not occur in the event", what, k.Target)
	}
	for _, n := range slices.Sorted(maps.Keys(k.Dims)) { // in order: the same error every time
		v := k.Dims[n]
		if !Grounded(n, event) {
			return fmt.Errorf("%s: the dimension name %q does not occur in the event", what, n)
		}
		if !Grounded(v, event) {
			return fmt.Errorf("%s: the value %q of dimension %s does not occur in the event", what, v, n)
		}
	}
	return nil
}

// CheckNumber checks that n is a finite number whose literal occurs in event, and returns its
// value. what names it in the error ("count 2, at_risk").
func CheckNumber(n Number, event, what string) (float64, error) {
	f, err := Float(n)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", what, err)
	}
	if !Grounded(string(n), event) {
		return 0, fmt.Errorf("%s: the value %s does not occur in the event; copy values exactly as written", what, string(n))
	}
	return f, nil
}
