package numeric

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
)

// The configuration status of a numeric cluster (State.Status).
const (
	// Warming: the cluster keeps its first task's trajectory and waits for its first reuse.
	Warming = "warming"
	// Configured: the bindings are frozen and every event is extracted and learned from.
	Configured = "configured"
	// Failed: configuration failed twice; the cluster gives no numeric advisory for the rest of
	// its life (State.Problem says why).
	Failed = "failed"
)

var (
	// adapterPrompt and extractorPrompt are the system messages of the two roles; the runtime's
	// own contract and the events follow in the instruction.
	//go:embed prompts/adapter.txt
	adapterPrompt string
	//go:embed prompts/extractor.txt
	extractorPrompt string
)

// Repairs is how often an adapter answer or an extracted batch that fails validation is sent
// back with the deterministic error: once (the Routed Continual Learning paper B.1). A second failure is final.
const Repairs = 1

// State is a numeric cluster's state: where its configuration stands, the warm-up it was
// configured from, the frozen bindings, the runtime's data, and what was refused.
type State[B, D any] struct {
	Status string `json:"status,omitempty"`
	// Warmup is the first task's trajectory, as the event text the adapter and the replay
	// read (its source is its trajectory id).
	Warmup *Warmup `json:"warmup,omitempty"`
	// Bindings are the adapter's, frozen once configured.
	Bindings *B `json:"bindings,omitempty"`
	// Problem is why configuration failed (Status Failed).
	Problem string `json:"problem,omitempty"`
	// Data is the runtime's fitted state.
	Data D `json:"data"`
	// Events counts the events learned from (the warm-up is event 0); Sources lists the
	// trajectories they came from, in order.
	Events  int      `json:"events"`
	Sources []string `json:"sources,omitempty"`
	// Refused lists the trajectories whose extracted records failed validation twice: reported
	// here (and in the log), never learned from.
	Refused []Refusal `json:"refused,omitempty"`
}

// Warmup is a cluster's first trajectory, kept until the cluster is configured from it.
type Warmup struct {
	Source string `json:"source"`
	Event  string `json:"event"`
}

// Refusal is one batch that never passed validation.
type Refusal struct {
	Source string `json:"source"`
	Error  string `json:"error"`
}

// System is a numeric memory system: a Runtime with the adapter, the extractor and the state
// around it. It keeps nothing between calls but a small cache of the current tasks' batches
// (so that configuring a cluster and reading it for the same task extract that task once), and
// is safe for concurrent use.
type System[B, X, D any] struct {
	rt  Runtime[B, X, D]
	env *learn.Env

	mu    sync.Mutex
	cache map[string]*X // bindings and event text -> the event's batch, for the current tasks
	order []string
	// states are decoded states by their bytes' hash, for reads: decoding a large state costs
	// a hundred times what advising from it does (BENCHMARKS.md).
	seed   maphash.Seed
	states map[uint64]decoded[B, D]
	hashes []uint64
}

type decoded[B, D any] struct {
	size int
	st   *State[B, D]
}

// cacheSize bounds the batches System remembers; stateCacheSize the decoded states.
const (
	cacheSize      = 64
	stateCacheSize = 8
)

var _ hippocam.MemorySystem = (*System[struct{}, struct{}, struct{}])(nil)
var _ learn.Configurer = (*System[struct{}, struct{}, struct{}])(nil)
var _ learn.Forgetter = (*System[struct{}, struct{}, struct{}])(nil)
var _ hippocam.StateViewer = (*System[struct{}, struct{}, struct{}])(nil)

// NewSystem returns the memory system of rt; its model calls go through env (roles adapter
// and extractor).
func NewSystem[B, X, D any](rt Runtime[B, X, D], env *learn.Env) *System[B, X, D] {
	return &System[B, X, D]{rt: rt, env: env, cache: map[string]*X{}, seed: maphash.MakeSeed(), states: map[uint64]decoded[B, D]{}}
}

// Name returns the runtime's id.
func (s *System[B, X, D]) Name() string { return s.rt.Name() }

// Description returns the runtime's description, for the router.
func (s *System[B, X, D]) Description() string { return s.rt.Description() }

// Decode reads a state of this system; an empty one is a new cluster's. EINVALID if it is not.
func (s *System[B, X, D]) Decode(raw json.RawMessage) (*State[B, D], error) {
	st := &State[B, D]{}
	if len(raw) == 0 || string(raw) == "null" {
		return st, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(st); err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "%s state: %v", s.rt.Name(), err)
	}
	return st, nil
}

// ReadState is Decode for reading: a state decoded before (the same bytes) is not decoded
// again. The result is shared between readers: it must not be changed (Runtime.Advise does not
// change its data).
func (s *System[B, X, D]) ReadState(raw json.RawMessage) (*State[B, D], error) {
	h := maphash.Bytes(s.seed, raw)
	s.mu.Lock()
	e, ok := s.states[h]
	s.mu.Unlock()
	if ok && e.size == len(raw) {
		return e.st, nil
	}
	st, err := s.Decode(raw)
	if err != nil {
		return nil, err
	}
	s.keep(raw, h, st)
	return st, nil
}

// encode writes a new state and keeps it decoded for the reads that follow (an update in the
// proxy runs in the process that serves the cluster's next task start).
func (s *System[B, X, D]) encode(st *State[B, D]) (json.RawMessage, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	s.keep(raw, maphash.Bytes(s.seed, raw), st)
	return raw, nil
}

// keep remembers st as the decoding of raw, whose hash is h; st must not change afterwards.
func (s *System[B, X, D]) keep(raw json.RawMessage, h uint64, st *State[B, D]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.states[h]; !ok {
		s.states[h] = decoded[B, D]{len(raw), st}
		s.hashes = append(s.hashes, h)
		if len(s.hashes) > stateCacheSize {
			delete(s.states, s.hashes[0])
			s.hashes = s.hashes[1:]
		}
	}
}

// Entries counts what the state holds: the runtime's entries, or 1 for a kept warm-up. A state
// it cannot read counts 0.
func (s *System[B, X, D]) Entries(state json.RawMessage) int {
	st, err := s.Decode(state)
	if err != nil {
		return 0
	}
	if st.Status == Warming {
		return 1
	}
	return s.rt.Entries(&st.Data)
}

// Configure configures a warming cluster on its first reuse (the Routed Continual Learning paper B.1): the adapter binds
// the warm-up's and the current task's fields to the runtime's roles; a fresh runtime replays
// the warm-up under those bindings and prepares the current task; a binding that fails any
// check goes back once with the error, and a second failure ends configuration for good. It
// returns the new state and "configured" or "failed"; nil and "" when there was nothing to do
// (a new cluster, or one configured or failed already). A model error is returned as it is,
// the state untouched, so that a later task tries again.
func (s *System[B, X, D]) Configure(ctx context.Context, state json.RawMessage, task *hippocam.Task) (json.RawMessage, string, error) {
	// Every task start asks; nearly every cluster is past warming: the shared decoded state
	// answers without decoding it again.
	if st, err := s.ReadState(state); err != nil {
		return nil, "", err
	} else if st.Status != Warming || st.Warmup == nil {
		return nil, "", nil
	}
	st, err := s.Decode(state) // a private copy, to configure
	if err != nil {
		return nil, "", err
	}
	if err := s.configure(ctx, st, TaskEvent(task)); err != nil {
		return nil, "", err
	}
	out, err := s.encode(st)
	return out, st.Status, err
}

// configure runs the adapter for a warming state against the current event, and leaves st
// configured or failed. Only a model error is returned.
func (s *System[B, X, D]) configure(ctx context.Context, st *State[B, D], current string) error {
	var got struct {
		b    B
		data D
		cur  *X
	}
	// A model error inside the check is not the adapter's fault: the answer is let through,
	// and the error returned.
	var fatal error
	fail := func(err error, what string) error {
		var model *modelError
		if errors.As(err, &model) {
			fatal = model.err
			return nil
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	instruction := s.header() + "\n\n" + strings.TrimSpace(s.rt.AdapterContract()) +
		"\n\nCompleted task (the warm-up):\n" + st.Warmup.Event + "\n\nCurrent task:\n" + current
	err := learn.Call(ctx, s.once(), hippocam.CallAdapter, adapterPrompt, instruction, s.rt.BindingsSchema(), func(args string) error {
		var b B
		if err := learn.Decode(args, &b); err != nil {
			return err
		}
		if err := s.rt.CheckBindings(&b, []string{st.Warmup.Event, current}); err != nil {
			return fmt.Errorf("the bindings do not fit the tasks: %v", err)
		}
		// A fresh runtime replays the warm-up under the bindings and prepares the current task.
		var d D
		warm, err := s.extract(ctx, &b, st.Warmup.Event)
		if err != nil {
			return fail(err, "replaying the warm-up under these bindings failed")
		}
		s.rt.Ingest(&d, &b, warm, Event{Source: st.Warmup.Source, Index: 0})
		cur, err := s.extract(ctx, &b, current)
		if err != nil {
			return fail(err, "preparing the current task under these bindings failed")
		}
		if err := s.rt.CheckReplay(&d, &b, cur); err != nil {
			return fmt.Errorf("the replayed state cannot serve the current task: %v", err)
		}
		got.b, got.data, got.cur = b, d, cur
		return nil
	})
	switch {
	case fatal != nil:
		return fatal
	case err != nil && !errors.Is(err, learn.ErrGaveUp):
		return err
	case err != nil:
		s.env.Logger().Warn("numeric cluster: configuration failed; the cluster gives no numeric advisory", "system", s.rt.Name(), "error", err)
		st.Status, st.Problem = Failed, err.Error()
		return nil
	}
	s.remember(&got.b, current, got.cur)
	st.Status, st.Bindings, st.Data = Configured, &got.b, got.data
	st.Events, st.Sources = 1, []string{st.Warmup.Source}
	st.Warmup = nil // its records are in the data now
	return nil
}

// modelError carries a model's error out of a validation callback, so that it is not mistaken
// for a validation failure (and shown to the adapter as one).
type modelError struct{ err error }

func (e *modelError) Error() string { return e.err.Error() }

// extract makes the extractor call for one event under bindings b: a batch that fails
// validation goes back once with the error; a second failure is an error wrapping
// learn.ErrGaveUp. A model error is returned as a *modelError.
func (s *System[B, X, D]) extract(ctx context.Context, b *B, event string) (*X, error) {
	bindings, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	instruction := s.header() + "\n" + BindingsLinePrefix + string(bindings) + "\n\n" +
		strings.TrimSpace(s.rt.ExtractorContract(b)) + "\n\n" + EventLine + "\n" + event
	var x *X
	err = learn.Call(ctx, s.once(), hippocam.CallExtractor, extractorPrompt, instruction, s.rt.BatchSchema(b), func(args string) error {
		var got X
		if err := decodeNumbers(args, &got); err != nil {
			return err
		}
		if err := s.rt.CheckBatch(b, &got, event); err != nil {
			return err
		}
		x = &got
		return nil
	})
	if err != nil && !errors.Is(err, learn.ErrGaveUp) {
		return nil, &modelError{err}
	}
	return x, err
}

// decodeNumbers reads args into v strictly, keeping numbers as their literal text.
func decodeNumbers(args string, v any) error {
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the answer is not valid JSON for the schema: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("the answer holds more than one JSON value")
	}
	return nil
}

// once is the environment with the single repair of the Routed Continual Learning paper B.1.
func (s *System[B, X, D]) once() *learn.Env {
	e := *s.env
	e.Corrections = Repairs
	return &e
}

// The lines of the adapter's and the extractor's instructions that a reader of them (the
// simulated model) goes by: the memory system the call is about ("Memory system: NAME
// (OPERATOR)"), the extractor's bindings ("Bindings: JSON"), and the line after which the
// extractor's event follows.
const (
	SystemLinePrefix   = "Memory system: "
	BindingsLinePrefix = "Bindings: "
	EventLine          = "Event:"
)

// header names the runtime a call is about.
func (s *System[B, X, D]) header() string {
	return SystemLinePrefix + s.rt.Name() + " (" + s.rt.Operator() + ")"
}

// current returns the batch of a task's event: the cached one when this process extracted it
// already, else a new extraction.
func (s *System[B, X, D]) current(ctx context.Context, b *B, event string) (*X, error) {
	if x := s.cached(b, event); x != nil {
		return x, nil
	}
	x, err := s.extract(ctx, b, event)
	if err != nil {
		return nil, err
	}
	s.remember(b, event, x)
	return x, nil
}

// batchKey names the batch of an event under bindings b: one System serves every cluster of
// its runtime, and two clusters bound otherwise extract one event otherwise.
func batchKey[B any](b *B, event string) string {
	raw, err := json.Marshal(b)
	if err != nil {
		return ""
	}
	return string(raw) + "\x00" + event
}

// cached returns the batch remembered for event under b, or nil.
func (s *System[B, X, D]) cached(b *B, event string) *X {
	k := batchKey(b, event)
	if k == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cache[k]
}

func (s *System[B, X, D]) remember(b *B, event string, x *X) {
	k := batchKey(b, event)
	if x == nil || k == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cache[k]; ok {
		s.cache[k] = x // the latest extraction under these bindings
		return
	}
	s.cache[k] = x
	s.order = append(s.order, k)
	if len(s.order) > cacheSize {
		delete(s.cache, s.order[0])
		s.order = s.order[1:]
	}
}

// Read renders the runtime's advice for the task: it extracts what the task asks for (its
// event) and lets the runtime predict it from the cluster's data, within budget tokens. A
// cluster that is warming or whose configuration failed gives an empty advisory, as does a
// task that asks for nothing. An extraction that fails validation twice is an error wrapping
// learn.ErrGaveUp (the caller runs the task without advisory).
func (s *System[B, X, D]) Read(ctx context.Context, state json.RawMessage, task *hippocam.Task, budget int) (hippocam.Advisory, error) {
	st, err := s.ReadState(state)
	if err != nil {
		return hippocam.Advisory{}, err
	}
	if st.Status != Configured || st.Bindings == nil || budget <= 0 {
		return hippocam.Advisory{}, nil
	}
	cur, err := s.current(ctx, st.Bindings, TaskEvent(task))
	if err != nil {
		var model *modelError
		if errors.As(err, &model) {
			return hippocam.Advisory{}, model.err
		}
		return hippocam.Advisory{}, fmt.Errorf("%s: the current task's records: %w", s.rt.Name(), err)
	}
	adv := s.rt.Advise(&st.Data, st.Bindings, cur, Event{Source: task.ID, Index: st.Events})
	return render(s.env.Tok, adv, budget), nil
}

// render fits an advice into budget tokens: the heading, as many lines as fit in order, the
// closing line and the caution. Nothing fits, or no line: an empty advisory.
func render(tok hippocam.Tokenizer, adv Advice, budget int) hippocam.Advisory {
	if len(adv.Lines) == 0 {
		return hippocam.Advisory{}
	}
	tail := ""
	if f := strings.TrimSpace(adv.Foot); f != "" {
		tail = "\n" + f
	}
	tail += "\n" + Caution
	text, n := strings.TrimSpace(adv.Head), 0
	for _, l := range adv.Lines {
		next := text + "\n- " + l
		if tok.Count(next+tail) > budget {
			break
		}
		text, n = next, n+1
	}
	if n == 0 {
		return hippocam.Advisory{}
	}
	return hippocam.Advisory{Text: text + tail, Entries: n}
}

// Caution closes every numeric advisory.
const Caution = "These figures are a model's estimates from earlier tasks, not ground truth and not an answer: weigh them against what this task shows."

// Update learns from every trajectory of trajs it has not seen, in order. A new cluster keeps
// its first trajectory as the warm-up. A warming cluster (its first reuse was never
// configured, as when the second task started before the first had ended) is configured here,
// with the trajectory's task as the current one. A configured cluster extracts the trajectory
// and ingests its records; a batch refused twice is recorded in State.Refused and learns
// nothing. A failed cluster learns nothing. A model error fails the whole update: the caller
// keeps the old state.
func (s *System[B, X, D]) Update(ctx context.Context, state json.RawMessage, trajs []hippocam.Trajectory) (json.RawMessage, error) {
	st, err := s.Decode(state)
	if err != nil {
		return nil, err
	}
	for i := range trajs {
		t := &trajs[i]
		if slices.Contains(st.Sources, t.ID) || slices.ContainsFunc(st.Refused, func(r Refusal) bool { return r.Source == t.ID }) ||
			(st.Warmup != nil && st.Warmup.Source == t.ID) {
			continue
		}
		switch st.Status {
		case "":
			st.Status, st.Warmup = Warming, &Warmup{Source: t.ID, Event: TrajectoryEvent(t)}
			continue
		case Warming:
			if err := s.configure(ctx, st, TaskEvent(&t.Task)); err != nil {
				return nil, err
			}
		}
		if st.Status != Configured {
			continue
		}
		x, err := s.trajectoryBatch(ctx, st.Bindings, t)
		var model *modelError
		switch {
		case errors.As(err, &model):
			return nil, fmt.Errorf("%s: trajectory %s: %w", s.rt.Name(), t.ID, model.err)
		case err != nil:
			s.env.Logger().Warn("numeric cluster: a trajectory's records were refused", "system", s.rt.Name(), "trajectory", t.ID, "error", err)
			st.Refused = append(st.Refused, Refusal{Source: t.ID, Error: err.Error()})
			continue
		}
		s.rt.Ingest(&st.Data, st.Bindings, x, Event{Source: t.ID, Index: st.Events})
		st.Events++
		st.Sources = append(st.Sources, t.ID)
	}
	return s.encode(st)
}

// trajectoryBatch extracts a finished task's records. When this process extracted the task's
// own messages at its start (the cached batch of Read or Configure), only the rest of the
// trajectory (what came after the agent's first answer, and the feedback) is extracted, and the
// two batches are joined: the same records at about half the extractor's output. The joined
// batch is checked against the whole trajectory like any other; when it fails, or nothing is
// cached, the whole trajectory is extracted.
func (s *System[B, X, D]) trajectoryBatch(ctx context.Context, b *B, t *hippocam.Trajectory) (*X, error) {
	full := TrajectoryEvent(t)
	first := slices.IndexFunc(t.Messages, func(m hippocam.Message) bool { return m.Role == hippocam.RoleAssistant })
	if first < 0 {
		first = len(t.Messages)
	}
	task := TaskEvent(&t.Task)
	cached := s.cached(b, task)
	if cached == nil || renderEvent(t.Messages[:first], "") != task {
		return s.extract(ctx, b, full)
	}
	rest, err := s.extract(ctx, b, renderEvent(t.Messages[first:], t.Feedback))
	if errors.Is(err, learn.ErrGaveUp) {
		return s.extract(ctx, b, full) // the rest alone would not validate: try the whole
	}
	if err != nil {
		return nil, err
	}
	joined, err := join(cached, rest)
	if err != nil || s.rt.CheckBatch(b, joined, full) != nil {
		return s.extract(ctx, b, full)
	}
	return joined, nil
}

// join puts two batches of one runtime together: every list of the first, then the second's.
// A batch is a JSON object of lists (what is requested, what was observed), so this needs no
// knowledge of the runtime's records.
func join[X any](a, b *X) (*X, error) {
	var ma, mb map[string]json.RawMessage
	for _, p := range []struct {
		x *X
		m *map[string]json.RawMessage
	}{{a, &ma}, {b, &mb}} {
		raw, err := json.Marshal(p.x)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, p.m); err != nil {
			return nil, err
		}
	}
	for k, vb := range mb {
		va, ok := ma[k]
		var la, lb []json.RawMessage
		switch {
		case !ok || string(va) == "null":
			ma[k] = vb
		case string(vb) == "null":
		case json.Unmarshal(va, &la) == nil && json.Unmarshal(vb, &lb) == nil:
			joined, err := json.Marshal(append(la, lb...))
			if err != nil {
				return nil, err
			}
			ma[k] = joined
		default:
			return nil, fmt.Errorf("batches differ in %s, which is not a list", k)
		}
	}
	raw, err := json.Marshal(ma)
	if err != nil {
		return nil, err
	}
	var out X
	if err := decodeNumbers(string(raw), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Forget takes the trajectories with the given ids out of the state: their records from the
// runtime's data, a warm-up that was theirs, their refusals. Bindings stay: they name fields,
// not values.
func (s *System[B, X, D]) Forget(state json.RawMessage, ids []string) (json.RawMessage, error) {
	st, err := s.Decode(state)
	if err != nil {
		return nil, err
	}
	if st.Warmup != nil && slices.Contains(ids, st.Warmup.Source) {
		st.Warmup = nil
		if st.Status == Warming {
			st.Status = ""
		}
	}
	s.rt.Forget(&st.Data, ids)
	st.Sources = slices.DeleteFunc(st.Sources, func(id string) bool { return slices.Contains(ids, id) })
	st.Refused = slices.DeleteFunc(st.Refused, func(r Refusal) bool { return slices.Contains(ids, r.Source) })
	return json.Marshal(st)
}

// TaskEvent is a task as the adapter and the extractor see it: its messages but the framing
// and the agent's own (see renderEvent).
func TaskEvent(t *hippocam.Task) string { return renderEvent(t.Messages, "") }

// TrajectoryEvent is a finished task as the extractor sees it: its messages but the framing and
// the agent's answers, then its feedback.
func TrajectoryEvent(t *hippocam.Trajectory) string { return renderEvent(t.Messages, t.Feedback) }

// renderEvent writes messages as the blocks of an event, each under its sender: what users and
// tools showed the agent. The framing (system messages), what memory added (advisories), the
// engine's hidden marks and the agent's own messages are left out: an agent's answer is a
// candidate, not an observation.
func renderEvent(msgs []hippocam.Message, feedback string) string {
	var b strings.Builder
	block := func(who, content string) {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("[" + who + "]\n" + strings.TrimSpace(content))
	}
	for _, m := range msgs {
		switch {
		case m.Role == hippocam.RoleSystem || m.Role == hippocam.RoleAssistant || m.Kind == hippocam.KindAdvisory || m.Kind.Hidden():
		case m.Role == hippocam.RoleTool:
			block("tool result", m.Content)
		default:
			block("user", m.Content)
		}
	}
	if strings.TrimSpace(feedback) != "" {
		block("feedback", feedback)
	}
	return b.String()
}
