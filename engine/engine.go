// Package engine runs Hippocam's algorithms over a session (the Hippocam paper §2, appendix B.1):
//
//   - Algorithm 1, one interaction step (step.go): pressure control, JANUS keeping the intent
//     stack (janus.go), the main model answering with progressive recall (agent.go, recall.go),
//     then PRECIP consolidating every closed span, innermost first (precip.go), and the ordinary
//     prefix check.
//   - Algorithm 2, prefix consolidation (prefix.go): the working tail and the regions cut by
//     the open intents (tail.go), the ordinary check, pressure control with its two sweeps, and
//     FOLD through PALIM (palim.go).
//
// The engine knows nothing of HTTP or SQL: it talks to a hippocam.Model and reads the archive
// through hippocam.Archive. A step works on a copy of the session and returns the new state and
// the hippocam.Change that a Store commits in one transaction; if the step fails, nothing of it
// is kept and the session is as it was.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/hippocam/hippocam"
)

// Engine runs steps. It is safe for concurrent use on different sessions.
type Engine struct {
	cfg    Config
	system string // the system message of every request (systemPrompt)
	// systemMessage is that message with its size, counted once (systemMessage).
	systemMessage func() hippocam.Message
	model         hippocam.Model
	tok           hippocam.Tokenizer
	log           *slog.Logger
	// tooLittle remembers spans (by session and first message) that PALIM, after its concise
	// retries, could not fold by Δmin, with the size of the span and of the memory it came to:
	// the span is not asked again until it has grown so that a memory of that size would save
	// Δmin. It lives in memory only; after a restart such a span is tried once more.
	tooLittle *spanMemo
	// verdicts holds, by session, the JANUS verdict its last step left (JanusBeside).
	verdicts *verdicts
	// toolSizes remembers the sizes of the tools requests offer (share.go).
	toolSizes toolSizes
}

// keptSpan is what the engine remembers of a span PALIM could not fold by Δmin: the span's last
// message and size, and the size of the memory PALIM wrote of it.
type keptSpan struct {
	last         string
	size, memory int
}

// spanMemo is a bounded map of span keys to kept spans, safe for concurrent use.
type spanMemo struct {
	mu sync.Mutex
	m  map[string]keptSpan
}

// maxSpanMemo bounds spanMemo; when it is full it starts over.
const maxSpanMemo = 100_000

func (s *spanMemo) get(key string) (keptSpan, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.m[key]
	return k, ok
}

func (s *spanMemo) add(key string, k keptSpan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= maxSpanMemo {
		s.m = map[string]keptSpan{}
	}
	s.m[key] = k
}

// New returns an engine. EINVALID if the configuration is out of range.
func New(cfg Config, model hippocam.Model, tok hippocam.Tokenizer, log *slog.Logger) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{cfg: cfg, model: model, tok: tok, log: log, system: buildSystemPrompt(cfg.SharedPrompts, cfg.Ablations.NoRecall),
		tooLittle: &spanMemo{m: map[string]keptSpan{}}, verdicts: &verdicts{m: map[string]*verdict{}}}
	e.systemMessage = sync.OnceValue(func() hippocam.Message {
		m := hippocam.Message{Role: hippocam.RoleSystem, Content: e.system}
		m.Tokens = hippocam.MessageTokens(e.tok, &m)
		return m
	})
	return e, nil
}

// Tokens counts text with the engine's tokenizer.
func (e *Engine) Tokens(text string) int { return e.tok.Count(text) }

// Tokenizer is the engine's tokenizer.
func (e *Engine) Tokenizer() hippocam.Tokenizer { return e.tok }

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Input is what arrives for one step: new messages from the agent's side (a user message, or
// the results of the agent's own tools), and the main-model request options to pass through.
type Input struct {
	// History holds earlier messages of the conversation Hippocam has not seen yet (a session
	// that begins mid-conversation, or continues after a fork): any role, appended as they are,
	// with no model call. Messages are the step's own, from the user's side.
	History  []hippocam.Message
	Messages []hippocam.Message
	// Framing is the agent's own framing (its leading system and developer messages). It is not
	// part of the context: every request sends it right after Hippocam's system message.
	Framing []hippocam.Message
	// NewFraming records Framing as a new version: its messages are archived beneath a
	// KindFraming mark, appended to the context after the step's inputs (where it took effect).
	NewFraming bool
	// Regenerate names the session's last answer when the same messages are to be answered
	// again (a regeneration): the answer moves beneath a KindBranch mark, so that it is kept but
	// no longer shown, and the step answers anew. Messages and History are then empty.
	Regenerate string
	// Tools are the agent's own tools; recall is added beside them.
	Tools []hippocam.Tool
	// Model, ToolChoice, MaxTokens, Extra and Betas pass through to the main model's calls,
	// and to no other call (Extra: temperature, response_format…, named as in ExtraFormat; see
	// hippocam.Request). An empty Model means the model client's default; MaxTokens 0, none
	// asked for.
	Model       string
	ToolChoice  string
	MaxTokens   int
	Extra       json.RawMessage
	ExtraFormat hippocam.Format
	Betas       []string
	// Advisory, on a session's first step, enters the context as a KindAdvisory message before
	// the step's messages (what a memory system read for the task, docs/learning.md). Ignored on
	// later steps.
	Advisory string
	// LateAdvisory is an advisory that was not ready for the session's first step (its routing
	// finished after the first answer): on a later step it enters as a KindAdvisory message
	// after the step's inputs, unless the context holds that advisory already, so that a
	// caller sending it again adds nothing. Ignored on a first step and on a regeneration.
	LateAdvisory string
	// Defer leaves the step's consolidation (PRECIP for closed intents and for the recall
	// exchanges the answer drew on, then the ordinary prefix check) for after the answer: it is
	// recorded in the session's Pending, the Change enqueues a hippocam.JobConsolidate job, and
	// Engine.Consolidate runs it. Without Defer the step consolidates before it returns, and
	// runs any consolidation it finds pending first. A deferring step that finds consolidation
	// pending answers on the context as it stands, unless PendingDue says the work must come
	// first.
	Defer bool
	// Consolidating says that a job is running the session's pending consolidation right now:
	// the lag bound (Config.MaxLag) leaves the work to it. The window still does not.
	Consolidating bool
	// OnText, when set, receives the answer's text as the main model produces it (streamed when
	// the model is a hippocam.StreamModel, else in one piece once the answer is known), from the
	// step's goroutine or the model's; it must not block. The pieces joined are exactly the
	// Answer's Content.
	OnText func(text string)
	// OnCall, when set, is called before each main-model call of the step with the input tokens
	// of the request it sends (messages, framing and tools, counted with the engine's tokenizer),
	// from the step's goroutine, before any of that call's text reaches OnText; it must not
	// block. A streaming transport reports it where its format announces the input's size
	// before the answer's text.
	OnCall func(inputTokens int)
}

// Result is what one step produced.
type Result struct {
	// Session is the new state; Change is what a Store must commit to reach it.
	Session *hippocam.Session
	Change  hippocam.Change
	// Answer is the main model's final answer, as appended to the context. Its Trace holds the
	// step's recall exchanges.
	Answer hippocam.Message
	// FinishReason is the main model's.
	FinishReason string
	// Usage is what this step's model calls consumed, by role.
	Usage hippocam.Usage
	// MaxRequestTokens is the largest main-model request of the step.
	MaxRequestTokens int
	// RecallCalls counts the step's recall and search calls (Config.RecallLimit bounds both);
	// SearchCalls says how many of them were searches.
	RecallCalls, SearchCalls int
	// IntentConsolidations and PrefixConsolidations count this step's committed REPLACEs;
	// Receded counts the prefix consolidations that let knowledge recede to fit a named size,
	// and Reinforced the memories of recalled evidence written after the answer.
	IntentConsolidations, PrefixConsolidations int
	Receded, Reinforced                        int
	// JanusFailures counts the JANUS calls of the step that left the stack unchanged because
	// JANUS failed (its answers kept breaking the contract, or no answer came).
	JanusFailures int
	// RanPending is set when the step found consolidation pending and ran it before answering,
	// for the reason PendingReason gives (PendingWindow, PendingLag, PendingRegenerate,
	// PendingInline); Deferred when it left its own for a job (Input.Defer).
	RanPending, Deferred bool
	// Verdict is what became of a JANUS verdict in this step: with JanusGate the step's own,
	// with JanusBeside the one the session's previous step left (VerdictApplied, VerdictSkip,
	// VerdictFailed, VerdictDropped), or "" when there was none. VerdictWait is how long the
	// step waited for that verdict (JanusBeside: its JANUS call was still running).
	Verdict       string
	VerdictWait   time.Duration
	PendingReason string
	// Lag is how many steps, this one included, have answered since the oldest consolidation
	// still pending was left (Pending.Lag); 0 when the step answered with none pending.
	Lag int
	// Elapsed is the step's wall time, and ModelTime the part spent waiting for models.
	Elapsed, ModelTime time.Duration
	// job is what Rebase needs of a consolidation job's result (Consolidate); nil for a step.
	job *jobWork
}

// StepError is the error of a step that failed after it had made model calls. Nothing of the
// step is kept, but its calls were paid for: Usage is what they consumed, by role, for the
// caller to record (add it to the stored session's usage, or to its own accounting when the
// session was never stored). It unwraps to the failure itself, so hippocam.ErrorCode, errors.Is
// and errors.As see through it.
type StepError struct {
	Err   error
	Usage hippocam.Usage
}

// Error returns the failure's text.
func (e *StepError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *StepError) Unwrap() error { return e.Err }

// UsageOf returns the model usage a failed step's error carries (see StepError), or nil.
func UsageOf(err error) hippocam.Usage {
	var se *StepError
	if errors.As(err, &se) {
		return se.Usage
	}
	return nil
}

// failed wraps err, a failure of the step, in a StepError when the step made model calls.
func (st *step) failed(err error) error {
	if err == nil || len(st.res.Usage) == 0 {
		return err
	}
	return &StepError{Err: err, Usage: st.res.Usage.Clone()}
}

// FinishReasonOr returns the main model's finish reason, or def for a nil result (a retried
// request, answered from the store).
func (r *Result) FinishReasonOr(def string) string {
	if r == nil {
		return def
	}
	return r.FinishReason
}

// NewSession returns an empty session.
func NewSession(tenant, id string, now time.Time) *hippocam.Session {
	return &hippocam.Session{Tenant: tenant, ID: id, Usage: hippocam.Usage{}, CreatedAt: now, UpdatedAt: now}
}

// Advance loads a session from st (creating it when absent), runs one step and commits it.
// It returns the step's result; on any error nothing is committed.
func (e *Engine) Advance(ctx context.Context, st hippocam.Store, tenant, id string, in Input) (*Result, error) {
	s, err := st.Session(ctx, tenant, id)
	if hippocam.ErrorCode(err) == hippocam.ENOTFOUND {
		s = NewSession(tenant, id, time.Now().UTC())
		if err = st.CreateSession(ctx, s); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	res, err := e.Step(ctx, s, hippocam.SessionArchive(st, tenant, id), in)
	if err != nil {
		return nil, err
	}
	res.Session.UpdatedAt = time.Now().UTC()
	if err := st.Commit(ctx, res.Session, res.Change); err != nil {
		return nil, err
	}
	return res, nil
}
