package hippocam

import (
	"context"
	"sync"
)

// The context of a model call can say whose call it is and carry a note its caller fills in
// after reading the answer. Neither changes the call: they are there for an observer of the
// calls, such as the recorder of `hippocam serve --record` (package record).

type callSessionKey struct{}

type callSession struct{ tenant, id string }

// WithCallSession returns ctx marked as working for session id of tenant (id empty: for the
// tenant, no one session): the model calls made with it are that session's.
func WithCallSession(ctx context.Context, tenant, id string) context.Context {
	return context.WithValue(ctx, callSessionKey{}, callSession{tenant, id})
}

// CallSession returns the tenant and session WithCallSession put in ctx; ok is false when none
// did.
func CallSession(ctx context.Context) (tenant, id string, ok bool) {
	s, ok := ctx.Value(callSessionKey{}).(callSession)
	return s.tenant, s.id, ok
}

// CallCase is what a component call showed and asked, in the terms `hippocam check` judges an
// answer by (engine.Check): the role, the messages of the session the request showed (Hippocam's
// system message, the role prompt and the instruction left out), where the span a PALIM or
// PRECIP call consolidates begins in them (it ends with them), and the intent stack JANUS judged
// or PRECIP closed the innermost intent of. Tool is the name of the tool whose call, when the
// model made one, is the answer (else its text is).
type CallCase struct {
	Role     CallRole
	Messages []Message
	Lo       int
	Stack    IntentStack
	Tool     string
}

// CallNote travels with one attempt of a structured call (WithCallNote) and tells an observer
// what only the caller knows: which attempt of the contract it is, its case, and the problems
// the caller found with the answer. An observer that records the call holds its record back
// (Hold) until the caller is Done with the answer.
type CallNote struct {
	// Attempt counts the attempts of the contract from 1: attempt n+1 quotes back the problems
	// of attempt n.
	Attempt int
	// Case returns the call's case; nil for a call that has none (a learning call).
	Case func() *CallCase

	mu       sync.Mutex
	problems []string
	held     []func(*CallNote)
	done     bool
}

type callNoteKey struct{}

// WithCallNote returns ctx carrying n for the calls made with it.
func WithCallNote(ctx context.Context, n *CallNote) context.Context {
	return context.WithValue(ctx, callNoteKey{}, n)
}

// CallNoteOf returns the note of ctx, or nil.
func CallNoteOf(ctx context.Context) *CallNote {
	n, _ := ctx.Value(callNoteKey{}).(*CallNote)
	return n
}

// Hold keeps fn until Done, which calls it with the note; when Done has already been called,
// Hold calls fn at once.
func (n *CallNote) Hold(fn func(*CallNote)) {
	n.mu.Lock()
	if !n.done {
		n.held = append(n.held, fn)
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	fn(n)
}

// Refuse records the problems the caller found with the answer, the reasons it refused it.
func (n *CallNote) Refuse(problems ...string) {
	n.mu.Lock()
	n.problems = append(n.problems, problems...)
	n.mu.Unlock()
}

// Problems returns what Refuse recorded.
func (n *CallNote) Problems() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.problems...)
}

// Done says the caller has judged the answer: the functions Hold kept are called, once.
func (n *CallNote) Done() {
	n.mu.Lock()
	held := n.held
	n.held, n.done = nil, true
	n.mu.Unlock()
	for _, fn := range held {
		fn(n)
	}
}
