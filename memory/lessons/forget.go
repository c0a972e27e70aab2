package lessons

import (
	"encoding/json"
	"slices"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
)

var _ learn.Forgetter = (*System)(nil)

// ReviewNote is the history note of a lesson whose every attempt was deleted: it rested only on
// them, so it is marked for review (shown, kept active, never silently dropped).
const ReviewNote = "every attempt this lesson was learned from was deleted: review it"

// Forget removes the trajectories with the given ids (deleted sessions) from the state: from the
// attempts applied and waiting, and from every lesson's provenance. A lesson left with no
// attempt it was learned from is marked for review (Lesson.Review and a history entry); it is
// not dropped, since a person may know it still holds. The input is not changed.
func (s *System) Forget(state json.RawMessage, ids []string) (json.RawMessage, error) {
	st, err := ParseState(state)
	if err != nil {
		return nil, err
	}
	st = st.clone()
	gone := func(id string) bool { return slices.Contains(ids, id) }
	changed := false
	if n := len(st.Applied); n > 0 {
		st.Applied = slices.DeleteFunc(st.Applied, gone)
		changed = changed || len(st.Applied) != n
	}
	for key, ts := range st.Waiting {
		kept := slices.DeleteFunc(slices.Clone(ts), func(t hippocam.Trajectory) bool { return gone(t.ID) })
		if len(kept) != len(ts) {
			changed = true
			if len(kept) == 0 {
				delete(st.Waiting, key)
			} else {
				st.Waiting[key] = kept
			}
		}
	}
	for i := range st.Lessons {
		l := &st.Lessons[i]
		n := len(l.Provenance.Attempts)
		if n == 0 {
			continue
		}
		l.Provenance.Attempts = slices.DeleteFunc(l.Provenance.Attempts, gone)
		if len(l.Provenance.Attempts) == n {
			continue
		}
		changed = true
		if len(l.Provenance.Attempts) == 0 && !l.Review {
			st.Updates++
			l.Review = true
			l.History = append(l.History, Change{Update: st.Updates, Event: "review", Note: ReviewNote})
		}
	}
	if !changed {
		return state, nil
	}
	return st.JSON()
}
