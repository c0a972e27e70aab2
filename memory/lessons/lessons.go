// Package lessons is the memory system that learns by comparing several attempts at one task
// (docs/learning.md, "The systems", after the Hippo paper on lessons). When a task key's attempts are complete, a judge looks at
// each attempt (ok, or a surprise: wrong, or right by luck), an inductor compares them and writes
// candidate lessons by how many were ok, and a consolidator fits each candidate into the lessons
// already kept: a duplicate is discarded, a conflict is resolved with explicit conditions, lessons
// of the same decision under overlapping conditions are merged. A lesson is a decision (use or
// avoid an option at a decision point) with the conditions under which it holds and those under
// which it does not, its evidence and its provenance. Nothing is deleted: a retired lesson is
// marked superseded, with what replaced it and why, and every lesson keeps its history (§5).
//
// Before a task, the lessons most similar to it are read into the advisory; the agent applies
// those whose conditions fit. The lessons file (Export, Import) is the same state as Markdown,
// for a person to read, edit and version.
package lessons

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
)

// Name is the system's id.
const Name = "lessons"

// Defaults of a System.
const (
	// DefaultReadLessons is how many of the most similar lessons an advisory offers at most.
	DefaultReadLessons = 10
	// DefaultCompareLessons is how many similar lessons the consolidator sees beside a candidate.
	DefaultCompareLessons = 8
)

// System is the lessons memory system. It keeps nothing between calls: everything it knows is in
// the state it is given. It is safe for concurrent use.
type System struct {
	env *learn.Env
	// Retriever ranks lessons by similarity (lexical BM25 by default; an embedding ranker can be
	// put in its place).
	Retriever learn.Retriever
	// ReadLessons and CompareLessons bound the lessons an advisory offers and the lessons the
	// consolidator compares a candidate with (DefaultReadLessons, DefaultCompareLessons when 0).
	ReadLessons, CompareLessons int
	appendOnly                  bool
}

var _ hippocam.MemorySystem = (*System)(nil)

// New returns the lessons system, with its consolidator.
func New(env *learn.Env) *System {
	return &System{env: env, Retriever: learn.NewBM25()}
}

// NewAppendOnly returns the baseline without consolidation: every candidate the inductor writes
// is added as it is. Its id is still Name.
func NewAppendOnly(env *learn.Env) *System {
	s := New(env)
	s.appendOnly = true
	return s
}

// Name returns the system's id.
func (s *System) Name() string { return Name }

// Description tells the router what the system learns and when to choose it.
func (s *System) Description() string {
	return "Lessons drawn by comparing several attempts at the same task: which option to take or " +
		"to avoid at a decision point, and under which conditions. Suits tasks that are run more " +
		"than once and whose outcome turns on a few recurring decisions."
}

func (s *System) retriever() learn.Retriever {
	if s.Retriever == nil {
		return learn.NewBM25()
	}
	return s.Retriever
}

func (s *System) compare() int {
	if s.CompareLessons > 0 {
		return s.CompareLessons
	}
	return DefaultCompareLessons
}

func (s *System) read() int {
	if s.ReadLessons > 0 {
		return s.ReadLessons
	}
	return DefaultReadLessons
}

// Entries counts the active lessons of state (0 for a state that cannot be read).
func (s *System) Entries(state json.RawMessage) int {
	st, err := ParseState(state)
	if err != nil {
		return 0
	}
	return len(st.Active())
}

// advisoryHead opens every advisory.
const advisoryHead = "Lessons from earlier attempts at similar tasks. Each one names an option to take (use) " +
	"or to stay away from (avoid) at a decision point, the conditions under which it holds (when) " +
	"and those that rule it out (not when). Apply only the lessons whose conditions fit this task."

// Read renders the active lessons most similar to task (at most ReadLessons), within budget
// tokens: the most similar are taken first while they fit, then shown in the order they were
// learned, so that where two disagree the newer comes last. When no lesson resembles the task at
// all, the newest stand in for them: the agent picks the applicable ones either way. An empty or
// lesson-less state gives an empty advisory. EINVALID if the state cannot be read.
func (s *System) Read(ctx context.Context, state json.RawMessage, task *hippocam.Task, budget int) (hippocam.Advisory, error) {
	st, err := ParseState(state)
	if err != nil {
		return hippocam.Advisory{}, err
	}
	active := st.Active()
	if len(active) == 0 || task == nil {
		return hippocam.Advisory{}, nil
	}
	docs := make([]string, len(active))
	for i, l := range active {
		docs[i] = lessonDoc(&l.Draft)
	}
	ranked := s.retriever().Top(task.Text(), docs, s.read())
	if len(ranked) == 0 { // nothing resembles the task: the newest lessons stand in
		for i := len(active) - 1; i >= max(0, len(active)-s.read()); i-- {
			ranked = append(ranked, i)
		}
	}
	var chosen []int
	var text string
	for _, i := range ranked {
		j, _ := slices.BinarySearch(chosen, i)
		with := slices.Insert(slices.Clone(chosen), j, i)
		if t := advisoryText(active, with); s.count(t) <= budget {
			chosen, text = with, t
		}
	}
	if len(chosen) == 0 {
		return hippocam.Advisory{}, nil
	}
	return hippocam.Advisory{Text: text, Entries: len(chosen)}, nil
}

// advisoryText renders the chosen lessons (indices into active, ascending).
func advisoryText(active []*Lesson, chosen []int) string {
	lines := []string{advisoryHead, ""}
	for _, i := range chosen {
		lines = append(lines, advisoryEntry(&active[i].Draft))
	}
	return strings.Join(lines, "\n")
}

// advisoryEntry is one lesson as the agent reads it: the rule, then the decision in words.
func advisoryEntry(d *Draft) string {
	return "- " + d.Rule() + "\n  decision: " + d.Decision
}

func (s *System) count(text string) int {
	if s.env != nil && s.env.Tok != nil {
		return s.env.Tok.Count(text)
	}
	return (len(text) + 3) / 4
}

// Update learns from trajs: the attempts of one task key (trajectories of several keys are taken
// key by key, in the order they first appear). Attempts already applied are skipped; with nothing
// new, state comes back unchanged. The new state is computed whole and returned; if any call
// fails (an error wrapping learn.ErrGaveUp when answers kept breaking their contract, or the
// model's own error), Update returns the error and no state: nothing is half-applied.
func (s *System) Update(ctx context.Context, state json.RawMessage, trajs []hippocam.Trajectory) (json.RawMessage, error) {
	st, err := ParseState(state)
	if err != nil {
		return nil, err
	}
	st = st.clone()
	groups := newAttempts(st, trajs)
	if len(groups) == 0 {
		return state, nil
	}
	for _, g := range groups {
		if g = st.gather(g); g == nil {
			continue // more attempts of this key are to come
		}
		if err := s.learnGroup(ctx, st, g); err != nil {
			return nil, err
		}
	}
	return st.JSON()
}

// learnGroup learns from one key's attempts and records them as applied.
func (s *System) learnGroup(ctx context.Context, st *State, g []*hippocam.Trajectory) error {
	st.Updates++
	if err := s.learn(ctx, st, g, st.Updates); err != nil {
		return err
	}
	for _, t := range g {
		st.Applied = append(st.Applied, t.ID)
	}
	return nil
}

// gather adds g to the attempts of its key already waiting and returns them all when as many
// have come as their Task.Attempts says; else it keeps them waiting and returns nil.
func (st *State) gather(g []*hippocam.Trajectory) []*hippocam.Trajectory {
	key := taskKey(g[0])
	var all []*hippocam.Trajectory
	have := map[string]bool{}
	for i := range st.Waiting[key] {
		all = append(all, &st.Waiting[key][i])
		have[st.Waiting[key][i].ID] = true
	}
	for _, t := range g {
		if !have[t.ID] {
			all = append(all, t)
		}
	}
	need := 0
	for _, t := range all {
		need = max(need, t.Task.Attempts)
	}
	if len(all) >= need {
		delete(st.Waiting, key)
		return all
	}
	if st.Waiting == nil {
		st.Waiting = map[string][]hippocam.Trajectory{}
	}
	waiting := make([]hippocam.Trajectory, len(all))
	for i, t := range all {
		waiting[i] = *t
	}
	st.Waiting[key] = waiting
	return nil
}

// Flush learns now from the attempts of key that are waiting for the rest of their key (the
// client ended the task early: POST /api/tasks/{key}/learn). Nothing waiting: the state as it
// was.
func (s *System) Flush(ctx context.Context, state json.RawMessage, key string) (json.RawMessage, error) {
	st, err := ParseState(state)
	if err != nil {
		return nil, err
	}
	st = st.clone()
	w := st.Waiting[key]
	if len(w) == 0 {
		return state, nil
	}
	g := make([]*hippocam.Trajectory, len(w))
	for i := range w {
		g[i] = &w[i]
	}
	delete(st.Waiting, key)
	if err := s.learnGroup(ctx, st, g); err != nil {
		return nil, err
	}
	return st.JSON()
}

// newAttempts groups the trajectories st has not applied by task key, in order of appearance.
func newAttempts(st *State, trajs []hippocam.Trajectory) [][]*hippocam.Trajectory {
	var keys []string
	groups := map[string][]*hippocam.Trajectory{}
	seen := map[string]bool{}
	for _, id := range st.Applied {
		seen[id] = true
	}
	for i := range trajs {
		t := &trajs[i]
		if seen[t.ID] {
			continue
		}
		seen[t.ID] = true
		k := taskKey(t)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], t)
	}
	out := make([][]*hippocam.Trajectory, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out
}

// taskKey is the key grouping a trajectory's attempts: the task's key, else its id.
func taskKey(t *hippocam.Trajectory) string {
	if t.Task.Key != "" {
		return t.Task.Key
	}
	return t.Task.ID
}

// learn runs judge, inductor and consolidator over one task key's attempts, changing st.
func (s *System) learn(ctx context.Context, st *State, attempts []*hippocam.Trajectory, update int) error {
	judgedAll := make([]judged, len(attempts))
	ok := 0
	for i, t := range attempts {
		v, err := judgeAttempt(ctx, s.env, t)
		if err != nil {
			return err
		}
		judgedAll[i] = judged{traj: t, verdict: v}
		if v.OK() {
			ok++
		}
	}
	if ok == len(attempts) { // every attempt was ok: nothing to learn from the comparison
		return nil
	}
	drafts, err := induce(ctx, s.env, judgedAll)
	if err != nil {
		return err
	}
	prov := Provenance{Tasks: []string{taskKey(attempts[0])}}
	for _, t := range attempts {
		prov.Attempts = append(prov.Attempts, t.ID)
	}
	for _, d := range drafts {
		c := candidate{draft: d, provenance: prov}
		if s.appendOnly {
			appendCandidate(st, c, update)
			continue
		}
		if err := s.consolidate(ctx, st, c, update); err != nil {
			return fmt.Errorf("lessons of %s: %w", prov.Tasks[0], err)
		}
	}
	return nil
}
