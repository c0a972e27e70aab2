// Package hippocamsys is the hippocam memory system (docs/learning.md, "The systems", id "hippocam"): a
// cluster is one long Hippocam session. Every finished task enters it as one closed intent, so
// the engine consolidates it as it consolidates any finished work: PRECIP keeps what the task
// established (facts, what its feedback approved or refused), and PALIM folds older memories
// into knowledge where the latest statement of a thing wins, whenever the session's context
// outgrows its window. A task is shown the cluster session's context.
//
// The state is self-contained JSON (State): the cluster session with its context and its whole
// archive, so that it round-trips through any ClusterStore and nothing absorbed is ever lost.
// An update loads it, lets the engine absorb each trajectory (engine.Engine.Absorb) over an
// archive read from the state, and writes the committed change back into a new state.
package hippocamsys

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/icl"
)

// Name is the system's id.
const Name = "hippocam"

// DefaultWindow is System.Window unless set.
const DefaultWindow = 8000

// MinWindow is the smallest window SetBudget keeps a cluster session within.
const MinWindow = 512

var (
	_ hippocam.MemorySystem = (*System)(nil)
	_ learn.Relearner       = (*System)(nil)
	_ hippocam.BudgetSetter = (*System)(nil)
)

// System is the hippocam memory system. It is safe for concurrent use.
type System struct {
	// Window is what the cluster session's context is kept within, in tokens: set it to the
	// advisory budget, so that the advisory is the whole consolidated context. The engine runs
	// the session at a larger window (EngineWindow), which leaves room beside that context for
	// its own requests' framing and answers; its pressure control and its folding thresholds
	// follow from it. The default is DefaultWindow. Read trims whatever still does not fit its
	// budget.
	Window int

	env *learn.Env
}

// New returns the system over env: its model makes the engine's PRECIP and PALIM calls (roles
// precip and palim), its tokenizer counts tokens.
func New(env *learn.Env) *System { return &System{Window: DefaultWindow, env: env} }

// SetBudget keeps the cluster session's context within the advisory budget (at least MinWindow
// tokens), so that the context, which is the advisory, fits it.
func (s *System) SetBudget(tokens int) { s.Window = max(tokens, MinWindow) }

// Name returns "hippocam".
func (s *System) Name() string { return Name }

// Description says what the system keeps and when to choose it; the router reads it.
func (s *System) Description() string {
	return "Keeps the cluster's tasks as one long working memory that consolidates as it grows: each finished task " +
		"becomes a memory of what it established and of what its feedback approved or refused, and older memories merge " +
		"into knowledge where the latest word on a thing wins. A new task sees that consolidated memory. Choose it for " +
		"tasks whose decisions and facts recur over a long stream, where outcomes matter more than exact wording."
}

// State is what a cluster of this system holds: the cluster session (its context, intent
// stack, usage, id sequence), every archived message beneath its refs, and the trajectories
// absorbed, in order.
type State struct {
	Session  hippocam.Session              `json:"session"`
	Archive  map[string][]hippocam.Message `json:"archive,omitempty"`
	Absorbed []Absorbed                    `json:"absorbed,omitempty"`
}

// Absorbed records one trajectory taken in: its id, the label of its intent, and the id of its
// first message in the cluster session and how many it brought, so that its originals can be
// found in the archive.
type Absorbed struct {
	ID       string `json:"id"`
	Label    string `json:"label"`
	First    string `json:"first"`
	Messages int    `json:"messages"`
}

// sessionID names every cluster session inside its state.
const sessionID = "cluster"

// Decode reads a state; an empty one is a fresh cluster session. EINVALID if it is not this
// system's.
func Decode(state json.RawMessage) (*State, error) {
	st := &State{}
	if len(state) > 0 {
		if err := json.Unmarshal(state, st); err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "hippocam state: %v", err)
		}
	}
	if st.Session.ID == "" {
		st.Session = *engine.NewSession("", sessionID, time.Time{})
	}
	if st.Archive == nil {
		st.Archive = map[string][]hippocam.Message{}
	}
	if st.Session.Usage == nil {
		st.Session.Usage = hippocam.Usage{}
	}
	return st, nil
}

func (s *System) engine() (*engine.Engine, error) {
	w := s.Window
	if w <= 0 {
		w = DefaultWindow
	}
	return engine.New(engine.ForWindow(EngineWindow(w)), s.env.Model, s.env.Tok, s.env.Log)
}

// frameAllowance is what the engine's requests add to the context, in tokens: its memory
// instructions and tool schemas.
const frameAllowance = 1200

// EngineWindow is the engine's window for a cluster session whose context is to stay within
// context tokens: pressure control starts folding when the context, the requests' framing and
// the room kept for an answer (a sixteenth of the window) pass ρ = 0.8 of the window, so the
// window is (context + framing) / (ρ − 1/16). It is never below 4,000 tokens, which PRECIP's
// own request (its prompt, the span and room to answer) needs.
func EngineWindow(context int) int {
	cfg := engine.ForWindow(engine.DefaultWindow)
	w := int(float64(context+frameAllowance)/(cfg.Pressure-1.0/16)) + 1
	return max(w, 4000)
}

// Update absorbs trajs, in order, each as one closed intent of the cluster session, and returns
// the new state; the state it is given is not changed. A trajectory with nothing to absorb (no
// message, no feedback) is skipped. Errors: EINVALID for a state that is not this system's; the
// engine's errors (a cancelled context), in which case nothing of the update is kept.
func (s *System) Update(ctx context.Context, state json.RawMessage, trajs []hippocam.Trajectory) (json.RawMessage, error) {
	st, err := Decode(state)
	if err != nil {
		return nil, err
	}
	e, err := s.engine()
	if err != nil {
		return nil, err
	}
	for i := range trajs {
		if err := st.absorb(ctx, e, trajs[i].ID, label(&trajs[i]), Messages(&trajs[i])); err != nil {
			return nil, err
		}
	}
	return json.Marshal(st)
}

// absorb takes one trajectory's messages into the cluster session as one closed intent.
func (st *State) absorb(ctx context.Context, e *engine.Engine, id, label string, msgs []hippocam.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	in := hippocam.Intent{Label: label, Done: "the task has ended and its feedback is in"}
	res, err := e.Absorb(ctx, &st.Session, st.archive(), in, msgs)
	if err != nil {
		return fmt.Errorf("absorb %s: %w", id, err)
	}
	first := ""
	for _, op := range res.Change.Ops {
		if op.Append != nil {
			first = op.Append.ID
			break
		}
	}
	st.apply(res)
	st.Absorbed = append(st.Absorbed, Absorbed{ID: id, Label: label, First: first, Messages: len(msgs)})
	return nil
}

// Relearn returns the state as it would be had the trajectories with the given ids never been
// absorbed: what they taught is merged into memories with the rest, so the cluster session is
// rebuilt, absorbing again, in order, the originals of every other trajectory (kept in the
// archive), with the model calls that takes. A state that holds none of them is returned as it
// is. The state it is given is not changed.
func (s *System) Relearn(ctx context.Context, state json.RawMessage, ids []string) (json.RawMessage, error) {
	st, err := Decode(state)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(st.Absorbed, func(a Absorbed) bool { return slices.Contains(ids, a.ID) }) {
		return state, nil
	}
	e, err := s.engine()
	if err != nil {
		return nil, err
	}
	byID := map[string]hippocam.Message{}
	for _, m := range st.Session.Context {
		byID[m.ID] = m
	}
	for _, kids := range st.Archive {
		for _, m := range kids {
			byID[m.ID] = m
		}
	}
	fresh, _ := Decode(nil)
	fresh.Session.Usage = st.Session.Usage.Clone()
	for _, a := range st.Absorbed {
		if slices.Contains(ids, a.ID) {
			continue
		}
		msgs, err := originals(byID, a)
		if err != nil {
			return nil, err
		}
		if err := fresh.absorb(ctx, e, a.ID, a.Label, msgs); err != nil {
			return nil, err
		}
	}
	return json.Marshal(fresh)
}

// originals returns the messages a trajectory brought, by their ids in the cluster session: Absorb
// numbers them in a row from the first.
func originals(byID map[string]hippocam.Message, a Absorbed) ([]hippocam.Message, error) {
	seq, err := strconv.ParseInt(strings.TrimPrefix(a.First, "m"), 10, 64)
	if err != nil || !strings.HasPrefix(a.First, "m") {
		return nil, hippocam.Errorf(hippocam.EINVALID, "hippocam state: trajectory %s starts at %q", a.ID, a.First)
	}
	msgs := make([]hippocam.Message, a.Messages)
	for i := range msgs {
		id := "m" + strconv.FormatInt(seq+int64(i), 10)
		m, ok := byID[id]
		if !ok {
			return nil, hippocam.Errorf(hippocam.EINVALID, "hippocam state: message %s of trajectory %s is missing", id, a.ID)
		}
		m.ID, m.Tokens = "", 0
		msgs[i] = m
	}
	return msgs, nil
}

// apply commits an engine result to the state, as a store would: the new context and
// snapshot, and for every REPLACE the archive node holding its span. The archive map is copied
// first, so that the decoded state a caller may still hold is not changed.
func (st *State) apply(res *engine.Result) {
	byID := map[string]hippocam.Message{}
	for _, m := range st.Session.Context {
		byID[m.ID] = m
	}
	archive := maps.Clone(st.Archive)
	for _, op := range res.Change.Ops {
		switch {
		case op.Append != nil:
			byID[op.Append.ID] = *op.Append
		case op.Memory != nil:
			kids := make([]hippocam.Message, len(op.Span))
			for i, id := range op.Span {
				kids[i] = byID[id]
			}
			archive[op.Memory.Ref] = kids
			byID[op.Memory.ID] = *op.Memory
		}
	}
	st.Archive = archive
	next := *res.Session
	next.Version++
	st.Session = next
}

// Entries counts the messages in the cluster session's context (0 for a state it cannot read).
func (s *System) Entries(state json.RawMessage) int {
	if len(state) == 0 {
		return 0
	}
	st, err := Decode(state)
	if err != nil {
		return 0
	}
	return len(st.Session.Context)
}

// Messages returns what of a trajectory enters the cluster session: its original messages from
// the task's side and the model's (system messages and Hippocam's own, such as the advisory the
// task was shown, left out), whole tool exchanges only, then its feedback as a user message unless
// the last message already is the feedback. A trajectory without messages brings its task's
// user messages.
func Messages(t *hippocam.Trajectory) []hippocam.Message {
	src := t.Messages
	if !hasUser(src) {
		src = append(userMessages(t.Task.Messages), src...)
	}
	var msgs []hippocam.Message
	for _, m := range src {
		if m.Role == hippocam.RoleSystem || (m.Kind != hippocam.KindRaw && m.Kind != "") {
			continue
		}
		msgs = append(msgs, hippocam.Message{Role: m.Role, Kind: hippocam.KindRaw, Content: m.Content,
			ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Parts: m.Parts})
	}
	msgs = wholeExchanges(msgs)
	if fb := strings.TrimSpace(t.Feedback); fb != "" {
		if n := len(msgs); n == 0 || strings.TrimSpace(msgs[n-1].Content) != fb || msgs[n-1].Role != hippocam.RoleUser {
			msgs = append(msgs, hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: fb})
		}
	}
	return msgs
}

func hasUser(msgs []hippocam.Message) bool {
	for _, m := range msgs {
		if m.Role == hippocam.RoleUser {
			return true
		}
	}
	return false
}

func userMessages(msgs []hippocam.Message) []hippocam.Message {
	var out []hippocam.Message
	for _, m := range msgs {
		if m.Role == hippocam.RoleUser {
			out = append(out, m)
		}
	}
	return out
}

// wholeExchanges drops the tool calls no result answers and the results that answer no call,
// and then the assistant messages left with neither text nor calls: a task that ended while its
// tools were running leaves no dangling call in the cluster session.
func wholeExchanges(msgs []hippocam.Message) []hippocam.Message {
	called, answered := map[string]bool{}, map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			called[c.ID] = true
		}
		if m.Role == hippocam.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	out := msgs[:0:0]
	for _, m := range msgs {
		if m.Role == hippocam.RoleTool && !called[m.ToolCallID] {
			continue
		}
		if len(m.ToolCalls) > 0 {
			var calls []hippocam.ToolCall
			for _, c := range m.ToolCalls {
				if answered[c.ID] {
					calls = append(calls, c)
				}
			}
			m.ToolCalls = calls
			if len(calls) == 0 && strings.TrimSpace(m.Content) == "" {
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// label names a trajectory's intent: its task's first line, with the task's id.
func label(t *hippocam.Trajectory) string {
	first := ""
	for _, l := range strings.Split(icl.Request(t), "\n") {
		// The first line that reads as prose, not as a command to a harness.
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "!") {
			first = l
			break
		}
	}
	if r := []rune(first); len(r) > 80 {
		first = string(r[:80]) + "…"
	}
	if first == "" {
		return "task " + t.ID
	}
	return fmt.Sprintf("task %s: %s", t.ID, first)
}
