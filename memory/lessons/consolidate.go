package lessons

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
)

//go:embed prompts/consolidate.md
var consolidatePrompt string

var consolidateSchema = json.RawMessage(`{"type":"object","additionalProperties":false,` +
	`"required":["action","duplicate_of","add","delete","reason"],"properties":{` +
	`"action":{"enum":["duplicate","conflict","merge","add"]},"duplicate_of":{"type":"integer"},` +
	`"add":{"type":"array","items":` + draftSchema + `},` +
	`"delete":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["number","reason"],` +
	`"properties":{"number":{"type":"integer"},"reason":{"type":"string"}}}},` +
	`"reason":{"type":"string"}}}`)

// The consolidator's actions.
const (
	ActionDuplicate = "duplicate"
	ActionConflict  = "conflict"
	ActionMerge     = "merge"
	ActionAdd       = "add"
)

// Consolidation is the consolidator's answer on one candidate: what it did, the lessons to add,
// the shown lessons (by number) to retire, and why.
type Consolidation struct {
	Action      string     `json:"action"`
	DuplicateOf int        `json:"duplicate_of"`
	Add         []Draft    `json:"add"`
	Delete      []Deletion `json:"delete"`
	Reason      string     `json:"reason"`
}

// Deletion retires one shown lesson.
type Deletion struct {
	Number int    `json:"number"`
	Reason string `json:"reason"`
}

// validate checks the answer against the candidate and the n lessons shown (numbered from 1).
// Whatever is added makes the candidate's decision or restates a lesson being retired: nothing
// beyond the candidate, no rewriting of lessons the candidate does not concern.
func (c *Consolidation) validate(cand *Draft, shown []*Lesson) error {
	c.Action, c.Reason = strings.ToLower(strings.TrimSpace(c.Action)), oneLine(c.Reason)
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	deleted := map[int]bool{}
	for _, d := range c.Delete {
		switch {
		case d.Number < 1 || d.Number > len(shown):
			fail("delete #%d: only lessons #1 to #%d are shown", d.Number, len(shown))
		case deleted[d.Number]:
			fail("delete #%d: named twice", d.Number)
		case oneLine(d.Reason) == "":
			fail("delete #%d: needs a reason", d.Number)
		}
		deleted[d.Number] = true
	}
	for i := range c.Add {
		a := &c.Add[i]
		a.normalize()
		if err := a.validate(); err != nil {
			fail("add %d: %v", i+1, err)
			continue
		}
		restates := false
		for n := range deleted {
			if n >= 1 && n <= len(shown) && a.same(&shown[n-1].Draft) {
				restates = true
			}
		}
		if !a.same(cand) && !restates {
			fail("add %d: %s is neither the candidate's decision nor a restatement of a deleted lesson", i+1, a.Rule())
		}
	}
	switch c.Action {
	case ActionDuplicate:
		if c.DuplicateOf < 1 || c.DuplicateOf > len(shown) || len(c.Add) > 0 || len(c.Delete) > 0 {
			fail("a duplicate names the shown lesson it repeats in duplicate_of and adds and deletes nothing")
		}
	case ActionAdd, ActionConflict, ActionMerge:
		if c.DuplicateOf != 0 {
			fail("duplicate_of must be 0 unless the action is duplicate")
		}
		if len(c.Add) == 0 {
			fail("action %s must add the candidate's lesson", c.Action)
		}
		if c.Action == ActionAdd && len(c.Delete) > 0 {
			fail("action add deletes nothing; a deletion is a conflict or a merge")
		}
		if c.Action == ActionMerge && len(c.Delete) == 0 {
			fail("a merge deletes the lessons it merges")
		}
		if len(c.Add) > len(c.Delete)+1 {
			fail("at most the candidate and one restatement per deleted lesson may be added")
		}
	default:
		fail("action must be duplicate, conflict, merge or add, not %q", c.Action)
	}
	if c.Reason == "" {
		fail("reason must say why")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// candidate is a lesson waiting to enter the state, with what it was learned from.
type candidate struct {
	draft      Draft
	provenance Provenance
}

// consolidate brings one candidate into st: the consolidator compares it with the most similar
// active lessons and st changes as it decides. With no similar lesson there is nothing to compare
// and the candidate is added without a call.
func (s *System) consolidate(ctx context.Context, st *State, c candidate, update int) error {
	active := st.Active()
	var shown []*Lesson
	if len(active) > 0 {
		docs := make([]string, len(active))
		for i, l := range active {
			docs[i] = lessonDoc(&l.Draft)
		}
		for _, i := range s.retriever().Top(lessonDoc(&c.draft), docs, s.compare()) {
			shown = append(shown, active[i])
		}
	}
	if len(shown) == 0 {
		st.add(c.draft, c.provenance, Change{Update: update, Event: "added", Note: c.draft.Evidence})
		return nil
	}
	var b strings.Builder
	b.WriteString("Decide how the candidate lesson enters the lessons already kept.\n\n")
	writeSection(&b, HeadingCandidate, lessonBlock(&c.draft))
	var list strings.Builder
	for i, l := range shown {
		if i > 0 {
			list.WriteString("\n")
		}
		list.WriteString(fmt.Sprintf("%s%d %s", LessonNumberMark, i+1, lessonBlock(&l.Draft)))
	}
	writeSection(&b, HeadingSimilarLessons, list.String())
	var out Consolidation
	err := learn.Call(ctx, s.env, hippocam.CallLessons, consolidatePrompt, strings.TrimSpace(b.String()), consolidateSchema, func(args string) error {
		out = Consolidation{}
		if err := learn.Decode(args, &out); err != nil {
			return err
		}
		return out.validate(&c.draft, shown)
	})
	if err != nil {
		return fmt.Errorf("consolidate %s: %w", c.draft.Rule(), err)
	}
	apply(st, &out, c, shown, update)
	return nil
}

// apply makes the consolidator's decision in st. A lesson added with the candidate's decision
// inherits the candidate's provenance and that of the retired lessons it merges; a restated one
// keeps the provenance of the lesson it restates. Retired lessons are superseded by what was
// added, never removed.
func apply(st *State, out *Consolidation, c candidate, shown []*Lesson, update int) {
	if out.Action == ActionDuplicate {
		return
	}
	retired := make([]*Lesson, 0, len(out.Delete))
	reasons := map[string]string{}
	for _, d := range out.Delete {
		retired = append(retired, shown[d.Number-1])
		reasons[shown[d.Number-1].ID] = oneLine(d.Reason)
	}
	var added []string
	for i := range out.Add {
		a := out.Add[i]
		var from []string
		var prov []Provenance
		if a.same(&c.draft) {
			prov = append(prov, c.provenance)
		}
		for _, r := range retired {
			if a.same(&r.Draft) {
				from = append(from, r.ID)
				prov = append(prov, r.Provenance)
			}
		}
		event, note := "added", out.Reason
		switch {
		case len(from) > 0 && a.same(&c.draft):
			event, note = "merged", "from "+strings.Join(from, ", ")+": "+out.Reason
		case len(from) > 0:
			event, note = "restated", "from "+strings.Join(from, ", ")+": "+out.Reason
		}
		added = append(added, st.add(a, mergeProvenance(prov...), Change{Update: update, Event: event, Note: note}))
	}
	for _, r := range retired {
		st.supersede(r.ID, added, reasons[r.ID], update)
	}
}

// appendCandidate is the append-only baseline's consolidation: every candidate is added as it is.
func appendCandidate(st *State, c candidate, update int) {
	st.add(c.draft, c.provenance, Change{Update: update, Event: "added", Note: c.draft.Evidence})
}

// lessonBlock renders a lesson for the consolidator: its rule, its decision, its evidence.
func lessonBlock(d *Draft) string {
	s := d.Rule() + "\n   decision: " + d.Decision
	if d.Evidence != "" {
		s += "\n   " + EvidenceLabel + " " + d.Evidence
	}
	return s
}

// lessonDoc is the text a lesson is retrieved by.
func lessonDoc(d *Draft) string {
	return d.Rule() + "\n" + d.Decision
}
