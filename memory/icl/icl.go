// Package icl is the in-context memory system (docs/learning.md, "The systems", id "icl"): a cluster keeps
// its trajectories verbatim, in order, and a task is shown the most recent of them that fit the
// advisory budget, each as its request, the answer it got and the feedback on it. Nothing is
// summarised, so exact details survive; older experience simply falls out of view when the
// budget is full.
package icl

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
const Name = "icl"

var (
	_ hippocam.MemorySystem = (*System)(nil)
	_ learn.Forgetter       = (*System)(nil)
)

// System is the in-context memory system. It makes no model calls; it only needs the
// tokenizer to keep advisories within their budget. It is safe for concurrent use.
type System struct {
	env *learn.Env
}

// New returns the system over env (env.Tok counts the advisory's tokens).
func New(env *learn.Env) *System { return &System{env: env} }

// Name returns "icl".
func (s *System) Name() string { return Name }

// Description says what the system keeps and when to choose it; the router reads it.
func (s *System) Description() string {
	return "Keeps every earlier task of the cluster word for word: what was asked, the answer, and the feedback it got. " +
		"A new task sees the most recent ones that fit its budget. Choose it when tasks depend on exact details " +
		"(names, numbers, values stated in passing) that a summary would lose, and when the cluster's tasks are few or alike."
}

// State is what a cluster of this system holds: its trajectories, oldest first.
type State struct {
	Trajectories []Entry `json:"trajectories"`
}

// Entry is one trajectory as the system keeps it: the task's request, the answer, the feedback.
type Entry struct {
	ID       string `json:"id"`
	Request  string `json:"request"`
	Answer   string `json:"answer,omitempty"`
	Feedback string `json:"feedback,omitempty"`
}

// Decode reads a state; an empty one is an empty State. EINVALID if it is not this system's.
func Decode(state json.RawMessage) (State, error) {
	var st State
	if len(state) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(state, &st); err != nil {
		return st, hippocam.Errorf(hippocam.EINVALID, "icl state: %v", err)
	}
	return st, nil
}

// Update returns the state with trajs appended, in order. The state it is given is not changed.
// EINVALID for a state that is not this system's.
func (s *System) Update(ctx context.Context, state json.RawMessage, trajs []hippocam.Trajectory) (json.RawMessage, error) {
	st, err := Decode(state)
	if err != nil {
		return nil, err
	}
	for i := range trajs {
		st.Trajectories = append(st.Trajectories, EntryOf(&trajs[i]))
	}
	return json.Marshal(st)
}

// Forget returns the state without the trajectories with the given ids.
func (s *System) Forget(state json.RawMessage, ids []string) (json.RawMessage, error) {
	st, err := Decode(state)
	if err != nil {
		return nil, err
	}
	st.Trajectories = slices.DeleteFunc(st.Trajectories, func(e Entry) bool { return slices.Contains(ids, e.ID) })
	return json.Marshal(st)
}

// Entries counts the trajectories the state keeps (0 for a state it cannot read).
func (s *System) Entries(state json.RawMessage) int {
	st, err := Decode(state)
	if err != nil {
		return 0
	}
	return len(st.Trajectories)
}

// intro opens every advisory of this system.
const intro = "Below are earlier tasks of the same kind as yours, oldest first: each one's request, " +
	"the answer that was given and the feedback that answer received. They are finished; do not answer them. " +
	"Where the feedback shows what was right or wrong in a situation like yours, let it guide your answer."

// Read renders the newest trajectories that fit within budget tokens (the oldest are left out
// first), oldest first, as one advisory text. An empty state, or a budget too small for even the
// newest one, gives an empty advisory. EINVALID for a state that is not this system's.
func (s *System) Read(ctx context.Context, state json.RawMessage, task *hippocam.Task, budget int) (hippocam.Advisory, error) {
	st, err := Decode(state)
	if err != nil {
		return hippocam.Advisory{}, err
	}
	blocks := make([]string, len(st.Trajectories))
	for i := range st.Trajectories {
		blocks[i] = st.Trajectories[i].render()
	}
	text, n := Fit(s.env.Tok, intro, blocks, budget)
	return hippocam.Advisory{Text: text, Entries: n}, nil
}

// Fit joins head and the longest run of the newest blocks whose text, with head, counts at most
// budget tokens, in their order, and says how many blocks it took. With no block taken the text
// is empty.
func Fit(tok hippocam.Tokenizer, head string, blocks []string, budget int) (string, int) {
	if budget <= 0 || len(blocks) == 0 {
		return "", 0
	}
	used := tok.Count(head)
	from := len(blocks)
	for from > 0 {
		n := tok.Count(blocks[from-1]) + 1 // the blank line between blocks
		if used+n > budget {
			break
		}
		used += n
		from--
	}
	// Counts of parts need not add up to the count of the whole: check the whole, and drop the
	// oldest block taken until it fits.
	for ; from < len(blocks); from++ {
		text := head + "\n\n" + strings.Join(blocks[from:], "\n\n")
		if tok.Count(text) <= budget {
			return text, len(blocks) - from
		}
	}
	return "", 0
}

// render is the entry as a block of an advisory.
func (e *Entry) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Earlier task %s\nRequest:\n%s\n", e.ID, QuoteCommands(e.Request))
	if e.Answer != "" {
		b.WriteString("Answer given:\n" + Quote(e.Answer) + "\n")
	}
	if e.Feedback != "" {
		b.WriteString("Feedback on that answer:\n" + strings.TrimSpace(e.Feedback) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// EntryOf is a trajectory as this system keeps it: its request (the task's own messages, its
// framing left out, since tasks of one agent share it), the text of the answers the agent's
// model gave, with the names of the tools it called, and the feedback.
func EntryOf(t *hippocam.Trajectory) Entry {
	e := Entry{ID: t.ID, Request: Request(t), Feedback: strings.TrimSpace(t.Feedback)}
	var answers []string
	for _, m := range t.Messages {
		if m.Role != hippocam.RoleAssistant || !original(m.Kind) {
			continue
		}
		if text := strings.TrimSpace(m.Content); text != "" {
			answers = append(answers, text)
		}
		for _, c := range m.ToolCalls {
			answers = append(answers, "(called the tool "+c.Name+")")
		}
	}
	e.Answer = strings.Join(answers, "\n")
	return e
}

// Request is the text of a trajectory's request: the user messages of its task, or, when the
// task lists none, the original user messages of the trajectory that came before its first
// answer.
func Request(t *hippocam.Trajectory) string {
	var parts []string
	for _, m := range t.Task.Messages {
		if m.Role == hippocam.RoleUser {
			parts = append(parts, strings.TrimSpace(m.Content))
		}
	}
	if len(parts) == 0 {
		for _, m := range t.Messages {
			if m.Role == hippocam.RoleAssistant {
				break
			}
			if m.Role == hippocam.RoleUser && original(m.Kind) {
				parts = append(parts, strings.TrimSpace(m.Content))
			}
		}
	}
	return strings.Join(parts, "\n")
}

// original reports whether messages of kind k came from the task itself rather than from
// Hippocam (advisories, memories, marks).
func original(k hippocam.Kind) bool { return k == hippocam.KindRaw || k == "" }

// QuoteCommands marks the lines of an earlier request that ask for something to be done (a line
// opening with '#' or '!', or one that poses a decision) as a quotation, so that the model
// reading the advisory sees what was asked then without taking it as asked now. Other lines
// (the title, the situation, stated facts) stay as they were.
func QuoteCommands(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") || strings.HasPrefix(t, "!") || strings.HasPrefix(t, "decide ") {
			lines[i] = "> " + t
		}
	}
	return strings.Join(lines, "\n")
}

// Quote marks every line of text as a quotation.
func Quote(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines {
		lines[i] = "> " + strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}
