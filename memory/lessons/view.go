package lessons

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/hippocam/hippocam"
)

// StateView is a lessons state as the REST API and the viewer show it: every lesson, in force or
// not, in the order they were made, and the attempts still waiting for the rest of their task
// key. Its lists are never null.
type StateView struct {
	Updates int           `json:"updates"`
	Lessons []LessonView  `json:"lessons"`
	Waiting []WaitingView `json:"waiting"`
}

// LessonView is one lesson as shown: its decision, its conditions, where it came from, whether it
// is in force (and if not, what replaced it and why) and every change it went through.
type LessonView struct {
	ID       string   `json:"id"`
	Kind     Kind     `json:"kind"`
	Key      string   `json:"key"`
	Value    string   `json:"value"`
	Rule     string   `json:"rule"`
	Decision string   `json:"decision"`
	When     []string `json:"when"`
	NotWhen  []string `json:"not_when"`
	Evidence string   `json:"evidence"`
	// Provenance lists the task keys and attempts (trajectory ids) the lesson was learned from.
	Provenance   ProvenanceView `json:"provenance"`
	Status       Status         `json:"status"`
	SupersededBy []string       `json:"superseded_by"`
	Reason       string         `json:"reason"`
	// Review is set when every attempt the lesson rested on was deleted: a person should confirm
	// or delete it.
	Review  bool     `json:"review"`
	History []Change `json:"history"`
}

// ProvenanceView is a lesson's provenance with both lists always present.
type ProvenanceView struct {
	Tasks    []string `json:"tasks"`
	Attempts []string `json:"attempts"`
}

// WaitingView is one task key whose attempts have not all ended: the trajectory ids that have.
type WaitingView struct {
	Key      string   `json:"key"`
	Attempts []string `json:"attempts"`
}

// View renders state for the REST API. EINVALID if the state cannot be read.
func View(state json.RawMessage) (*StateView, error) {
	st, err := ParseState(state)
	if err != nil {
		return nil, err
	}
	v := &StateView{Updates: st.Updates, Lessons: make([]LessonView, len(st.Lessons)), Waiting: []WaitingView{}}
	for i := range st.Lessons {
		v.Lessons[i] = st.Lessons[i].View()
	}
	for _, key := range slices.Sorted(maps.Keys(st.Waiting)) {
		w := WaitingView{Key: key, Attempts: []string{}}
		for _, t := range st.Waiting[key] {
			w.Attempts = append(w.Attempts, t.ID)
		}
		v.Waiting = append(v.Waiting, w)
	}
	return v, nil
}

// View renders one lesson, with copies of its lists (never null).
func (l *Lesson) View() LessonView {
	return LessonView{
		ID: l.ID, Kind: l.Kind, Key: l.Key, Value: l.Value, Rule: l.Rule(), Decision: l.Decision,
		When: nonNil(l.When), NotWhen: nonNil(l.NotWhen), Evidence: l.Evidence,
		Provenance: ProvenanceView{Tasks: nonNil(l.Provenance.Tasks), Attempts: nonNil(l.Provenance.Attempts)},
		Status:     l.Status, SupersededBy: nonNil(l.SupersededBy), Reason: l.Reason, Review: l.Review,
		History: append([]Change{}, l.History...),
	}
}

func nonNil(s []string) []string { return append([]string{}, s...) }

// DeletedByUser is the reason a lesson its user deleted carries: it is withdrawn (superseded,
// replaced by nothing) and kept, with the deletion in its history.
const DeletedByUser = "deleted by the user"

// Delete returns the state with lesson id withdrawn by its user: marked superseded with reason
// DeletedByUser and a "withdrawn" entry in its history, and no longer marked for review; nothing
// is removed, and the input is not changed. A lesson already out of force is left as it is, and
// changed is false. ENOTFOUND if the state has no lesson id; EINVALID if it cannot be read.
func Delete(state json.RawMessage, id string) (next json.RawMessage, changed bool, err error) {
	st, err := ParseState(state)
	if err != nil {
		return nil, false, err
	}
	if st.Lesson(id) == nil {
		return nil, false, hippocam.Errorf(hippocam.ENOTFOUND, "lesson %q not found", id)
	}
	if st.Lesson(id).Status != Active {
		return state, false, nil
	}
	st = st.clone()
	st.Updates++
	st.supersede(id, nil, DeletedByUser, st.Updates)
	l := st.Lesson(id)
	l.History[len(l.History)-1].Event = "withdrawn"
	l.Review = false
	next, err = st.JSON()
	return next, err == nil, err
}

// Events counts, by event (added, merged, restated, superseded, withdrawn, …), the history
// entries that after holds and before did not: what one update did to the lessons.
func Events(before, after json.RawMessage) (map[string]int, error) {
	b, err := ParseState(before)
	if err != nil {
		return nil, err
	}
	a, err := ParseState(after)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, l := range a.Lessons {
		for _, c := range l.History {
			if c.Update > b.Updates {
				out[c.Event]++
			}
		}
	}
	return out, nil
}

var _ hippocam.StateViewer = (*System)(nil)

// View renders state as View does and counts the lessons in force.
func (s *System) View(state json.RawMessage) (any, int, error) {
	v, err := View(state)
	if err != nil {
		return nil, 0, err
	}
	n := 0
	for _, l := range v.Lessons {
		if l.Status == Active {
			n++
		}
	}
	return v, n, nil
}

var _ hippocam.UpdateObserver = (*System)(nil)

// UpdateEvents lists the changes to lessons counted in the metrics: lessons added, merged with
// another, and superseded (kept, marked).
func (s *System) UpdateEvents() []hippocam.UpdateEvent {
	return []hippocam.UpdateEvent{
		{Kind: "added", Help: "Lessons added by lessons updates."},
		{Kind: "merged", Help: "Lessons merged by lessons updates."},
		{Kind: "superseded", Help: "Lessons superseded by lessons updates (kept, marked)."},
	}
}

// Observe counts the history entries of an update by event, as Events does.
func (s *System) Observe(before, after json.RawMessage) (map[string]int, error) {
	return Events(before, after)
}
