package engine

import (
	"context"
	"time"

	"github.com/hippocam/hippocam"
)

// Consolidation after the answer (docs/architecture.md §7). With Input.Defer a step answers and
// commits, leaving what Alg. 1 does after the answer for a durable job: the spans of the
// intents JANUS closed (lines 5-13) and the recall exchanges the answer drew on (use reinforces,
// reinforce.go), with the ordinary prefix check after each memory. What is left is written in
// the session itself (Session.Pending), committed with the step together with the job, so the
// job is idempotent: Consolidate removes the work it did from Pending in the change it returns,
// and a second run finds nothing to do.
//
// The job makes its model calls on the session as it was when it started, while later steps
// may answer and commit; Rebase then carries its memories onto the newer session. A step does
// not wait for pending work unless it must (pendingDue): it answers on the context as it
// stands, the pending spans protected from prefix folds meanwhile, and runs the work first only
// when its context would not fit the window without it, when it is past ρW and its own sweep
// could not bring it back for want of anything but pending work to fold, or when the work has
// been pending for more than Config.MaxLag steps. Otherwise, between ρW and W, the step's own
// pressure sweep runs as Alg. 2 says, over what is not pending; it never needs the emergency
// sweep or a recession because of pending work, since above W the work comes first.

// Why a step ran the pending consolidation before answering (Result.PendingReason).
const (
	// PendingWindow: the context with the step's inputs would not fit the window with room
	// for the answer and the next round (Alg. 2's P > W): without the pending memories the
	// step would need the emergency sweep, or could not answer at all. Or it is past ρW and
	// folding everything the sweep may fold (sweepable) would not bring it under: the room
	// Alg. 2 keeps below ρW, which the step's recall results use, is held by pending work.
	PendingWindow = "window"
	// PendingLag: the oldest pending work was left more than Config.MaxLag steps ago, and no
	// job is at it (Input.Consolidating).
	PendingLag = "lag"
	// PendingRegenerate: the step regenerates the last answer, which moves beneath a branch
	// mark; what was left around it is consolidated first, where it stands.
	PendingRegenerate = "regenerate"
	// PendingInline: the step consolidates before answering anyway (Input.Defer unset).
	PendingInline = "inline"
)

// Consolidate runs the consolidation s.Pending describes and returns the result whose Change
// (From s.Version) commits it and clears Pending. With nothing pending the change is empty
// (Change.Ops nil) and need not be committed. Component failures are not errors (the span is
// kept, as in a step); errors are the context's and the archive's. When other commits reached
// the session while it ran, Rebase carries the result onto the newer version.
func (e *Engine) Consolidate(ctx context.Context, s *hippocam.Session, arch hippocam.Archive) (*Result, error) {
	ctx = hippocam.WithCallSession(ctx, s.Tenant, s.ID) // the model calls below are the session's (an observer files them under it)
	began := time.Now()
	st := e.newStep(s, arch, Input{})
	st.job = &jobWork{baseSeq: s.Seq}
	if err := st.runPending(ctx); err != nil {
		return nil, st.failed(err)
	}
	res := st.result(began)
	res.job = st.job
	return res, nil
}

// PendingDue says whether a step for in over s would run the consolidation pending in s before
// answering, and why (PendingWindow, PendingLag, PendingRegenerate, PendingInline); "" when it
// would answer first, or nothing is pending. No model is called.
func (e *Engine) PendingDue(s *hippocam.Session, in Input) string {
	if s.Pending.Empty() {
		return ""
	}
	return e.newStep(s, nil, in).pendingDue()
}

// pendingDue is PendingDue for the step's session and inputs.
func (st *step) pendingDue() string {
	p := st.s.Pending
	switch {
	case p.Empty():
		return ""
	case !st.in.Defer:
		return PendingInline
	case st.in.Regenerate != "":
		return PendingRegenerate
	case st.predicted()+st.inputTokens() > st.e.cfg.Window:
		return PendingWindow
	case float64(st.predicted()+st.inputTokens()-st.sweepable()) > st.e.cfg.Pressure*float64(st.e.cfg.Window):
		// Past ρW, and even folding all that the sweep may fold would not bring it back: the
		// pending spans hold the room Alg. 2 keeps below ρW, which this step's recall results
		// need. An answer's recall exchanges, sized to the room of their own step, wait in the
		// context for their memory; answering on top of them left a later question a few
		// tokens to recall in.
		return PendingWindow
	case p.Lag() >= st.e.cfg.MaxLag && (!st.in.Consolidating || st.e.cfg.MaxLag == 0):
		return PendingLag
	}
	return ""
}

// sweepable is the most the step's ordinary pressure sweep could free: every region's eligible
// prefix before the working tail and the protected part (pending spans included) that is
// larger than Δmin, counted whole as though its memory cost nothing.
func (st *step) sweepable() int {
	tail := st.tailStart(true)
	n := 0
	for _, r := range st.regions() {
		lo, hi := st.eligible(r, tail)
		if t := tokens(st.s.Context[lo:hi]); t > st.e.cfg.MinSaving {
			n += t
		}
	}
	return n
}

// inputTokens is the size of the messages the step will append.
func (st *step) inputTokens() int {
	n := 0
	for _, msgs := range [][]hippocam.Message{st.in.History, st.in.Messages} {
		for i := range msgs {
			n += hippocam.MessageTokens(st.e.tok, &msgs[i])
		}
	}
	return n
}

// runPendingIfDue runs the pending consolidation before the step answers when pendingDue says
// so; otherwise the step answers with the work still pending, and counts itself in its lag.
func (st *step) runPendingIfDue(ctx context.Context) error {
	if why := st.pendingDue(); why != "" {
		st.res.PendingReason = why
		return st.runPending(ctx)
	}
	if p := st.s.Pending; !p.Empty() {
		p.Steps++
		st.res.Lag = p.Lag()
	}
	return nil
}

// pending returns the session's pending consolidation, creating it.
func (st *step) pending() *hippocam.Pending {
	if st.s.Pending == nil {
		st.s.Pending = &hippocam.Pending{}
	}
	return st.s.Pending
}

// deferClosed leaves the consolidation of the intents JANUS closed in this step for the job,
// protecting the step's round meanwhile.
func (st *step) deferClosed(closed []hippocam.Intent, guidance string) {
	if len(closed) > 0 {
		p := st.pending()
		p.Closures = append(p.Closures, hippocam.ClosedSpan{Intents: closed, Guidance: guidance, Chain: st.before.Labels(), Start: st.start, Since: p.Steps})
	}
	if !st.s.Pending.Empty() {
		st.s.Pending.Start = st.start
		st.res.Deferred = true
	}
	st.closing = nil
}

// runPending runs the session's pending consolidation, if any: the reinforcements of recalled
// evidence first (each happened right after its answer, and touches only the exchanges before
// it), then each closure in order, each followed by the ordinary check. Each piece of work runs
// with the round of the step that left it as the step's own (it is protected, and a closure's
// span stops at a new request that began it), as it would have right after that step.
func (st *step) runPending(ctx context.Context) error {
	p := st.s.Pending
	if p.Empty() {
		st.s.Pending = nil
		return nil
	}
	st.res.RanPending = true
	saved := st.start
	defer func() { st.start = saved }()
	round := func(start string) {
		if st.start = start; start == "" {
			st.start = p.Start
		}
	}
	for len(p.Reinforce) > 0 {
		r := p.Reinforce[0]
		round(r.Start)
		// The answer's exchanges stay protected (they are still listed) while PRECIP reads them.
		if err := st.consolidateRecall(ctx, r.Answer, false); err != nil {
			return err
		}
		p.Reinforce = p.Reinforce[1:]
		st.job.did(r.Key(), len(st.ops))
	}
	for len(p.Closures) > 0 {
		c := p.Closures[0]
		round(c.Start)
		p.Closures = p.Closures[1:] // later closures stay protected while this one is checked
		if err := st.consolidateClosed(ctx, c.Intents, c.Guidance, c.Chain); err != nil {
			return err
		}
		st.job.did(c.Key(), len(st.ops))
	}
	st.s.Pending = nil
	return nil
}
