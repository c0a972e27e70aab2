// Package learnstream plays a stream of tasks through the learning layer (docs/learning.md): it
// reads the JSON Lines of docs/sim.md parts 2 and 3, runs every task under one condition (no
// memory, a retry baseline, one global cluster, routed clusters over a library of memory
// systems, lessons from several attempts, or clusters given by the hidden sources), scores each
// answer against the task's hidden environment (decisions and questions right or wrong,
// estimates, curves and entities by their distance to the truth), writes the feedback that ends
// the task, updates the cluster, and reports reward, cost by role, memory size and routing.
package learnstream

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sim"
)

// Task is one line of a stream: a task's id, its hidden source, its messages (the framing and
// the user's side of the conversation, in order) and its hidden environment. Source and Env are
// seen by the runner only.
type Task struct {
	ID       string             `json:"id"`
	Source   string             `json:"source"`
	Messages []hippocam.Message `json:"messages"`
	Env      Env                `json:"env"`
}

// Env is what scores a task and writes its feedback: per decision key the right values and the
// reference one, per question key the true value, and the numeric items of docs/sim.md part 3:
// per estimated key its true value, per estimated curve its true and realized curves, and the
// entities truly present.
type Env struct {
	Decide   map[string]Decision `json:"decide,omitempty"`
	Ask      map[string]string   `json:"ask,omitempty"`
	Estimate map[string]Estimate `json:"estimate,omitempty"`
	Curve    map[string]Curve    `json:"curve,omitempty"`
	Entities *Entities           `json:"entities,omitempty"`
}

// Decision is the hidden side of one `decide KEY: …` line: the values that are right (more than
// one makes a lucky instance) and the reference among them (Right[0] when not given).
type Decision struct {
	Right     []string `json:"right"`
	Reference string   `json:"reference,omitempty"`
}

// Items counts what the task scores: its decisions, questions, estimates, curves and its set of
// entities.
func (t *Task) Items() int {
	n := len(t.Env.Decide) + len(t.Env.Ask) + len(t.Env.Estimate) + len(t.Env.Curve)
	if t.Env.Entities != nil {
		n++
	}
	return n
}

// maxLine bounds one line of a stream, in bytes.
const maxLine = 16 << 20

// Read reads a stream: one task per line, blank lines skipped. A line that is not a task (not
// JSON, no id or an id seen before, no user message, a message role other than system, user or
// tool, a decision with no right value or a reference that is not among them, a malformed
// numeric item: see checkNumeric) is an EINVALID error naming the line.
func Read(r io.Reader) ([]Task, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var tasks []Task
	seen := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var t Task
		if err := json.Unmarshal([]byte(text), &t); err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "stream line %d: %v", n, err)
		}
		if err := t.check(); err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "stream line %d: %v", n, err)
		}
		if first, dup := seen[t.ID]; dup {
			return nil, hippocam.Errorf(hippocam.EINVALID, "stream line %d: task id %q was already used on line %d", n, t.ID, first)
		}
		seen[t.ID] = n
		tasks = append(tasks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "stream: %v", err)
	}
	return tasks, nil
}

// check validates one task and fills in what has a default (message kinds, references).
func (t *Task) check() error {
	if strings.TrimSpace(t.ID) == "" {
		return fmt.Errorf("the task has no id")
	}
	users := 0
	for i := range t.Messages {
		m := &t.Messages[i]
		switch m.Role {
		case hippocam.RoleUser:
			users++
		case hippocam.RoleSystem:
			if i > 0 && t.Messages[i-1].Role != hippocam.RoleSystem {
				return fmt.Errorf("message %d: system messages come first, before the conversation", i+1)
			}
		case hippocam.RoleTool:
		default:
			return fmt.Errorf("message %d: role %q; a task's messages are system, user or tool", i+1, m.Role)
		}
		if m.Kind == "" {
			m.Kind = hippocam.KindRaw
		}
		if m.Kind != hippocam.KindRaw || m.ID != "" || m.Ref != "" {
			return fmt.Errorf("message %d: only role and content belong in a task's message", i+1)
		}
	}
	if users == 0 {
		return fmt.Errorf("task %q has no user message", t.ID)
	}
	for _, key := range keys(t.Env.Decide) {
		d := t.Env.Decide[key]
		if len(d.Right) == 0 {
			return fmt.Errorf("decision %q has no right value", key)
		}
		if d.Reference == "" {
			d.Reference = d.Right[0]
			t.Env.Decide[key] = d
		} else if !slices.Contains(d.Right, d.Reference) {
			return fmt.Errorf("decision %q: the reference %q is not among the right values", key, d.Reference)
		}
	}
	return t.Env.checkNumeric()
}

// Estimate is the hidden side of one `estimate KEY` line: the true value and the tolerance of the
// reward, max(0, 1 − |x − truth| / tol) for an answer x.
type Estimate struct {
	Truth float64 `json:"truth"`
	Tol   float64 `json:"tol"`
	// noTruth marks an estimate whose JSON lacks its truth (a zero truth is a truth).
	noTruth bool
}

// UnmarshalJSON decodes an estimate and notes whether it has a truth.
func (e *Estimate) UnmarshalJSON(b []byte) error {
	type plain Estimate
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	_, has := fields["truth"]
	e.noTruth = !has
	return nil
}

// Curve is the hidden side of one `estimate-curve KEY over J` line: the true event-free curve
// (J values, non-increasing, in [0, 1]), the realized curve of a larger sample that the feedback
// shows (never the truth itself), and the tolerance of the reward, max(0, 1 − mean_j |x_j −
// truth_j| / tol).
type Curve struct {
	Truth    []float64 `json:"truth"`
	Realized []float64 `json:"realized"`
	Tol      float64   `json:"tol"`
}

// Entities is the hidden side of an `estimate-entities FIELD` line: the entities present, each
// as the pair [its identity value, its field value] (the identity field locates an entity, field
// is the one asked for), the distance in identity within which an answered entity may match a
// true one, and the tolerance of the field's accuracy.
type Entities struct {
	Identity    string      `json:"identity"`
	Field       string      `json:"field"`
	Truth       [][]float64 `json:"truth"`
	TolIdentity float64     `json:"tol_identity"`
	Tol         float64     `json:"tol"`
}

// checkNumeric validates the numeric items: every estimated or curved key a numeric key
// (sim.ParseNumericKey) that no other item of the task shares (an answer line would score both),
// an estimate with a truth, curves of at least one probability that never rise, realized as
// long as the truth, entity fields that are names, at least one true entity, each an [identity,
// value] pair, and positive tolerances.
func (e *Env) checkNumeric() error {
	seen := map[string]string{}
	claim := func(key, what string) error {
		c := canonical(key)
		if other, dup := seen[c]; dup {
			return fmt.Errorf("%s: the same key as %s; an answer line could not tell them apart", what, other)
		}
		seen[c] = what
		return nil
	}
	for _, key := range keys(e.Decide) {
		if err := claim(key, fmt.Sprintf("decision %q", key)); err != nil {
			return err
		}
	}
	for _, key := range keys(e.Estimate) {
		what := fmt.Sprintf("estimate %q", key)
		if err := checkKey(key, what); err != nil {
			return err
		}
		if err := claim(key, what); err != nil {
			return err
		}
		switch est := e.Estimate[key]; {
		case est.noTruth:
			return fmt.Errorf("%s has no truth", what)
		case !(est.Tol > 0):
			return fmt.Errorf("%s: tol must be positive, not %v", what, est.Tol)
		}
	}
	for _, key := range keys(e.Curve) {
		what := fmt.Sprintf("curve %q", key)
		if err := checkKey(key, what); err != nil {
			return err
		}
		if err := claim(key, what); err != nil {
			return err
		}
		if err := e.Curve[key].check(); err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
	}
	if e.Entities != nil {
		if err := e.Entities.check(); err != nil {
			return fmt.Errorf("entities: %v", err)
		}
	}
	return nil
}

// checkKey checks that key is a numeric key.
func checkKey(key, what string) error {
	if _, ok := sim.ParseNumericKey(key); !ok {
		return fmt.Errorf("%s: not a key of the form NAME[dim=value,…]", what)
	}
	return nil
}

// canonical is a key's canonical form (its dimensions sorted), or the key as given when it is
// not a numeric key.
func canonical(key string) string {
	if k, ok := sim.ParseNumericKey(key); ok {
		return k.String()
	}
	return key
}

func (c Curve) check() error {
	if len(c.Truth) == 0 {
		return fmt.Errorf("the truth has no value")
	}
	if len(c.Realized) != len(c.Truth) {
		return fmt.Errorf("realized has %d values, the truth %d", len(c.Realized), len(c.Truth))
	}
	for _, s := range []struct {
		name string
		v    []float64
	}{{"truth", c.Truth}, {"realized", c.Realized}} {
		for j, x := range s.v {
			if x < 0 || x > 1 {
				return fmt.Errorf("%s value %d is %v, not a probability", s.name, j+1, x)
			}
			if j > 0 && x > s.v[j-1] {
				return fmt.Errorf("%s value %d (%v) is above value %d (%v); an event-free curve never rises", s.name, j+1, x, j, s.v[j-1])
			}
		}
	}
	if !(c.Tol > 0) {
		return fmt.Errorf("tol must be positive, not %v", c.Tol)
	}
	return nil
}

func (e *Entities) check() error {
	for _, f := range []struct{ what, name string }{{"identity", e.Identity}, {"field", e.Field}} {
		if k, ok := sim.ParseNumericKey(f.name); !ok || len(k.Dims) > 0 {
			return fmt.Errorf("the %s %q is not a field name", f.what, f.name)
		}
	}
	if e.Identity == e.Field {
		return fmt.Errorf("the identity and the field are both %q", e.Field)
	}
	if len(e.Truth) == 0 {
		return fmt.Errorf("the truth lists no entity")
	}
	for i, p := range e.Truth {
		if len(p) != 2 {
			return fmt.Errorf("truth %d has %d numbers, not 2 (%s, %s)", i+1, len(p), e.Identity, e.Field)
		}
	}
	if !(e.TolIdentity > 0) {
		return fmt.Errorf("tol_identity must be positive, not %v", e.TolIdentity)
	}
	if !(e.Tol > 0) {
		return fmt.Errorf("tol must be positive, not %v", e.Tol)
	}
	return nil
}
