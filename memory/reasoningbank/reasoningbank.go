// Package reasoningbank is the reasoning_bank memory system (docs/learning.md; the Routed Continual Learning paper §4.2
// and D.4, adapting ReasoningBank): after every finished task a judge call decides from the
// visible trajectory alone whether the attempt succeeded, and an extraction call, with the
// prompt for a success or the one for a failure, turns it into at most three notes (title, when
// the note applies, what to do). Before a task, the notes of the single earlier task whose
// request is most like this one are read out; a task never reads its own notes.
package reasoningbank

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
const Name = "reasoning_bank"

// description is what the router reads about the system.
const description = "Keeps a few short notes per finished task (what worked, or what went wrong) and, before a " +
	"task, offers the notes of the one earlier task whose request reads most like it. Suits varied tasks " +
	"where the closest earlier example carries the useful lesson; it keeps no facts and no full histories."

// System is the reasoning_bank memory system. It keeps nothing between calls and is safe for
// concurrent use.
type System struct {
	env       *learn.Env
	retriever learn.Retriever
}

var _ hippocam.MemorySystem = (*System)(nil)

// New returns the system; its model calls go through env (roles rb_judge and rb_extract), and
// similar requests are found with BM25.
func New(env *learn.Env) *System {
	return &System{env: env, retriever: learn.NewBM25()}
}

// Name returns "reasoning_bank".
func (s *System) Name() string { return Name }

// Description says what the system learns and when to choose it.
func (s *System) Description() string { return description }

// State is the system's state: one record per trajectory learned from, in the order learned.
type State struct {
	Records []Record `json:"records"`
}

// Record is what one trajectory left: the request it answered, the judge's verdict and the notes
// drawn from it.
type Record struct {
	// Trajectory is the trajectory's id (idempotence); Task and Key name the task it ran.
	Trajectory string `json:"trajectory"`
	Task       string `json:"task"`
	Key        string `json:"key,omitempty"`
	// Request is the task's own text (its non-system messages): what similarity is measured on.
	Request   string `json:"request"`
	Outcome   string `json:"outcome"`
	Rationale string `json:"rationale"`
	Items     []Item `json:"items"`
}

// Item is one note: a title, when it applies (and when not), and what to do.
type Item struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Content     string `json:"content"`
}

// decodeState reads a state; an empty one is a state with no records. EINVALID if it is not a
// state of this system.
func decodeState(raw json.RawMessage) (*State, error) {
	st := &State{}
	if len(raw) == 0 || string(raw) == "null" {
		return st, nil
	}
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "reasoning_bank state: %v", err)
	}
	return st, nil
}

// Entries counts the notes the state holds. A state it cannot read counts 0.
func (s *System) Entries(state json.RawMessage) int {
	st, err := decodeState(state)
	if err != nil {
		return 0
	}
	n := 0
	for _, r := range st.Records {
		n += len(r.Items)
	}
	return n
}

// Read renders every note of the most similar earlier trajectory that has notes (BM25 over the
// stored requests, the newest first among equals, the task's own excluded), as many as fit budget tokens, in their order.
// Advisory.Entries counts the notes shown. EINVALID for a state it cannot read.
func (s *System) Read(ctx context.Context, state json.RawMessage, task *hippocam.Task, budget int) (hippocam.Advisory, error) {
	st, err := decodeState(state)
	if err != nil {
		return hippocam.Advisory{}, err
	}
	// Newest first, so that of two requests that read alike the more recent experience wins
	// (the retriever breaks ties by position).
	var docs []string
	var recs []*Record
	for i := len(st.Records) - 1; i >= 0; i-- {
		r := &st.Records[i]
		if len(r.Items) == 0 || r.Task == task.ID {
			continue
		}
		docs, recs = append(docs, r.Request), append(recs, r)
	}
	if len(docs) == 0 || budget <= 0 {
		return hippocam.Advisory{}, nil
	}
	best := s.retriever.Top(request(task), docs, 1)
	if len(best) == 0 {
		return hippocam.Advisory{}, nil
	}
	text, n := renderItems(s.env.Tok, recs[best[0]].Items, budget)
	return hippocam.Advisory{Text: text, Entries: n}, nil
}

// Update judges and mines every trajectory of trajs it has not learned from yet, in order, and
// returns the state with their records appended. A judge or extraction whose answers keep
// breaking the contract fails the whole update (an error wrapping learn.ErrGaveUp), as does a
// model error: state is never changed in place and nothing is half-applied. EINVALID for a state
// it cannot read.
func (s *System) Update(ctx context.Context, state json.RawMessage, trajs []hippocam.Trajectory) (json.RawMessage, error) {
	st, err := decodeState(state)
	if err != nil {
		return nil, err
	}
	next := State{Records: slices.Clone(st.Records)}
	for i := range trajs {
		t := &trajs[i]
		if slices.ContainsFunc(next.Records, func(r Record) bool { return r.Trajectory == t.ID }) {
			continue
		}
		rec, err := s.learn(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("reasoning_bank: trajectory %s: %w", t.ID, err)
		}
		next.Records = append(next.Records, *rec)
	}
	return json.Marshal(next)
}

// learn makes the two calls for one trajectory.
func (s *System) learn(ctx context.Context, t *hippocam.Trajectory) (*Record, error) {
	req := request(&t.Task)
	shown := renderTrajectory(t)
	verdict, err := s.judge(ctx, req, shown, t.Feedback)
	if err != nil {
		return nil, err
	}
	items, err := s.extract(ctx, req, shown, t.Feedback, verdict)
	if err != nil {
		return nil, err
	}
	return &Record{Trajectory: t.ID, Task: t.Task.ID, Key: t.Task.Key, Request: req,
		Outcome: verdict.Outcome, Rationale: verdict.Rationale, Items: items}, nil
}

// request is a task's own text: its non-system messages, in order. The framing is shared by many
// tasks and says little about which one this is.
func request(t *hippocam.Task) string {
	var parts []string
	for _, m := range t.Messages {
		if m.Role != hippocam.RoleSystem {
			parts = append(parts, m.Content)
		}
	}
	if len(parts) == 0 {
		return t.Text()
	}
	return strings.Join(parts, "\n")
}

var _ learn.Forgetter = (*System)(nil)

// Forget returns the state without the records of the trajectories with the given ids (a
// deleted session leaves nothing behind). EINVALID for a state it cannot read.
func (s *System) Forget(state json.RawMessage, ids []string) (json.RawMessage, error) {
	st, err := decodeState(state)
	if err != nil {
		return nil, err
	}
	next := State{Records: slices.DeleteFunc(slices.Clone(st.Records), func(r Record) bool { return slices.Contains(ids, r.Trajectory) })}
	return json.Marshal(next)
}
