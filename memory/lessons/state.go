package lessons

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/hippocam/hippocam"
)

// Kind says whether a lesson recommends a choice or warns against it.
type Kind string

const (
	Use   Kind = "use"
	Avoid Kind = "avoid"
)

// Status says whether a lesson is still in force. A superseded lesson stays in the state, with
// what replaced it and why: lessons are never removed.
type Status string

const (
	Active     Status = "active"
	Superseded Status = "superseded"
)

// Draft is a lesson as a model writes it: the shape of an inductor's candidate and of a lesson
// the consolidator adds. Key names the decision point (letters, digits, '_', '.', '-') and Value
// the option chosen or avoided; Decision says the same in words for a model that reads it. When
// lists the conditions under which the lesson holds (all must be met; none means always), NotWhen
// those under which it does not.
type Draft struct {
	Kind     Kind     `json:"kind"`
	Key      string   `json:"key"`
	Value    string   `json:"value"`
	Decision string   `json:"decision"`
	When     []string `json:"when"`
	NotWhen  []string `json:"not_when"`
	Evidence string   `json:"evidence"`
}

// Lesson is one kept lesson: its draft, where it came from, whether it is in force, and every
// change it went through.
type Lesson struct {
	ID string `json:"id"`
	Draft
	Provenance Provenance `json:"provenance"`
	Status     Status     `json:"status"`
	// SupersededBy names the lessons that replaced this one (none when it was withdrawn), and
	// Reason says why it was superseded.
	SupersededBy []string `json:"superseded_by,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	History      []Change `json:"history,omitempty"`
	// Review marks a lesson whose every attempt was deleted (Forget): it stays, shown for a
	// person to confirm or withdraw.
	Review bool `json:"review,omitempty"`
}

// Provenance is what a lesson was learned from: the task keys and the attempts (trajectory ids).
type Provenance struct {
	Tasks    []string `json:"tasks,omitempty"`
	Attempts []string `json:"attempts,omitempty"`
}

// Change is one entry of a lesson's history. Update numbers the state change that made it
// (State.Updates at the time); Event is one of added, merged, restated, superseded, edited,
// imported or withdrawn.
type Change struct {
	Update int    `json:"update"`
	Event  string `json:"event"`
	Note   string `json:"note,omitempty"`
}

// State is a lessons cluster's state: every lesson ever kept, in the order they were made.
type State struct {
	// Next numbers the next lesson's id (L1, L2, …); Updates counts the changes applied.
	Next    int `json:"next"`
	Updates int `json:"updates"`
	// Applied lists the trajectories learned from: an update that meets one again skips it.
	Applied []string `json:"applied,omitempty"`
	Lessons []Lesson `json:"lessons"`
	// Waiting holds, per task key, the attempts that arrived before the rest of their key
	// (Task.Attempts says how many there are): they are learned from together, once all have
	// come, or when Flush is asked to.
	Waiting map[string][]hippocam.Trajectory `json:"waiting,omitempty"`
}

// ParseState reads a state; an empty one is a state without lessons. EINVALID if it cannot be
// read.
func ParseState(raw json.RawMessage) (*State, error) {
	st := &State{Lessons: []Lesson{}}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return st, nil
	}
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "lessons state: %v", err)
	}
	if st.Lessons == nil {
		st.Lessons = []Lesson{}
	}
	return st, nil
}

// JSON encodes the state canonically: the same state always gives the same bytes.
func (st *State) JSON() (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(st); err != nil {
		return nil, hippocam.Errorf(hippocam.EINTERNAL, "encode lessons state: %v", err)
	}
	return json.RawMessage(bytes.TrimSpace(b.Bytes())), nil
}

// Active returns the lessons in force, in the order they were made.
func (st *State) Active() []*Lesson {
	var out []*Lesson
	for i := range st.Lessons {
		if st.Lessons[i].Status == Active {
			out = append(out, &st.Lessons[i])
		}
	}
	return out
}

// Lesson finds a lesson by id (nil if none).
func (st *State) Lesson(id string) *Lesson {
	for i := range st.Lessons {
		if st.Lessons[i].ID == id {
			return &st.Lessons[i]
		}
	}
	return nil
}

// add appends a new active lesson with the next id and returns that id.
func (st *State) add(d Draft, p Provenance, c Change) string {
	id := st.newID()
	st.Lessons = append(st.Lessons, Lesson{ID: id, Draft: d, Provenance: p, Status: Active, History: []Change{c}})
	return id
}

// newID takes the next free lesson id (ids a lessons file brought in are taken too).
func (st *State) newID() string {
	for {
		st.Next++
		if id := fmt.Sprintf("L%d", st.Next); st.Lesson(id) == nil {
			return id
		}
	}
}

// supersede marks lesson id as replaced by the lessons in by, for reason.
func (st *State) supersede(id string, by []string, reason string, update int) {
	l := st.Lesson(id)
	l.Status, l.SupersededBy, l.Reason = Superseded, slices.Clone(by), reason
	note := reason
	if len(by) > 0 {
		note = "by " + strings.Join(by, ", ") + ": " + reason
	}
	l.History = append(l.History, Change{Update: update, Event: "superseded", Note: note})
}

// clone returns a deep copy of st, so that an update can be computed whole before it is kept.
func (st *State) clone() *State {
	c := *st
	c.Applied = slices.Clone(st.Applied)
	c.Lessons = make([]Lesson, len(st.Lessons))
	for i, l := range st.Lessons {
		l.When, l.NotWhen = slices.Clone(l.When), slices.Clone(l.NotWhen)
		l.Provenance = Provenance{Tasks: slices.Clone(l.Provenance.Tasks), Attempts: slices.Clone(l.Provenance.Attempts)}
		l.SupersededBy, l.History = slices.Clone(l.SupersededBy), slices.Clone(l.History)
		c.Lessons[i] = l
	}
	if st.Waiting != nil {
		c.Waiting = make(map[string][]hippocam.Trajectory, len(st.Waiting))
		for k, ts := range st.Waiting {
			c.Waiting[k] = slices.Clone(ts)
		}
	}
	return &c
}

// normalize puts a draft in its canonical form: text on one line, conditions trimmed, without
// repeats and sorted.
func (d *Draft) normalize() {
	d.Kind = Kind(strings.ToLower(oneLine(string(d.Kind))))
	d.Key, d.Value = oneLine(d.Key), oneLine(d.Value)
	d.Decision, d.Evidence = oneLine(d.Decision), oneLine(d.Evidence)
	d.When, d.NotWhen = conditionSet(d.When), conditionSet(d.NotWhen)
}

func conditionSet(in []string) []string {
	out := []string{}
	for _, c := range in {
		if c = oneLine(c); c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// validate checks a normalized draft.
func (d *Draft) validate() error {
	var problems []string
	if d.Kind != Use && d.Kind != Avoid {
		problems = append(problems, fmt.Sprintf("kind must be %q or %q, not %q", Use, Avoid, d.Kind))
	}
	if d.Key == "" || !isKey(d.Key) {
		problems = append(problems, fmt.Sprintf("key %q must be one identifier of letters, digits, '_', '.' or '-'", d.Key))
	}
	if d.Value == "" || strings.ContainsAny(d.Value, ",;") {
		problems = append(problems, fmt.Sprintf("value %q must be a non-empty option without ',' or ';'", d.Value))
	}
	if d.Decision == "" {
		problems = append(problems, "decision must say the lesson in words")
	}
	for _, c := range slices.Concat(d.When, d.NotWhen) {
		if strings.ContainsAny(c, ",;") || strings.Contains(c, "when:") {
			problems = append(problems, fmt.Sprintf("condition %q must be a short phrase without ',' or ';'", c))
		}
	}
	for _, c := range d.When {
		if slices.Contains(d.NotWhen, c) {
			problems = append(problems, fmt.Sprintf("condition %q is both in when and in not_when", c))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func isKey(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.' && r != '-' {
			return false
		}
	}
	return true
}

// Rule renders the draft on one line: `use KEY = VALUE when: A, B; not when: C`.
func (d *Draft) Rule() string {
	var b strings.Builder
	b.WriteString(string(d.Kind) + " " + d.Key + " = " + d.Value)
	if len(d.When) > 0 {
		b.WriteString(" when: " + strings.Join(d.When, ", "))
	}
	if len(d.NotWhen) > 0 {
		b.WriteString("; not when: " + strings.Join(d.NotWhen, ", "))
	}
	return b.String()
}

// same reports whether two drafts make the same decision (kind, key and value).
func (d *Draft) same(o *Draft) bool { return d.Kind == o.Kind && d.Key == o.Key && d.Value == o.Value }

// mergeProvenance is the union of ps, in order.
func mergeProvenance(ps ...Provenance) Provenance {
	var out Provenance
	for _, p := range ps {
		for _, t := range p.Tasks {
			if !slices.Contains(out.Tasks, t) {
				out.Tasks = append(out.Tasks, t)
			}
		}
		for _, a := range p.Attempts {
			if !slices.Contains(out.Attempts, a) {
				out.Attempts = append(out.Attempts, a)
			}
		}
	}
	return out
}
