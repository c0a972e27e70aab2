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
// job is idempotent: Consolidate clears Pending in the change it returns, and a second run
// finds nothing to do. Until it has run, the pending spans stay protected from prefix folds,
// and a step that starts before the job ran runs it first (Result.RanPending).

// Consolidate runs the consolidation s.Pending describes and returns the result whose Change
// (From s.Version) commits it and clears Pending. With nothing pending the change is empty
// (Change.Ops nil) and need not be committed. Component failures are not errors (the span is
// kept, as in a step); errors are the context's and the archive's.
func (e *Engine) Consolidate(ctx context.Context, s *hippocam.Session, arch hippocam.Archive) (*Result, error) {
	ctx = hippocam.WithCallSession(ctx, s.Tenant, s.ID) // the model calls below are the session's (an observer files them under it)
	began := time.Now()
	st := e.newStep(s, arch, Input{})
	if err := st.runPending(ctx); err != nil {
		return nil, st.failed(err)
	}
	return st.result(began), nil
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
		p.Closures = append(p.Closures, hippocam.ClosedSpan{Intents: closed, Guidance: guidance, Chain: st.before.Labels()})
	}
	if !st.s.Pending.Empty() {
		st.s.Pending.Start = st.start
		st.res.Deferred = true
	}
	st.closing = nil
}

// runPending runs the session's pending consolidation, if any: the reinforcement of recalled
// evidence first (it happened right after its answer), then each closure in order, each
// followed by the ordinary check. The round the last step served stays protected meanwhile.
func (st *step) runPending(ctx context.Context) error {
	p := st.s.Pending
	if p.Empty() {
		st.s.Pending = nil
		return nil
	}
	st.res.RanPending = true
	saved := st.start
	st.start = p.Start
	defer func() { st.start = saved }()
	if r := p.Reinforce; r != nil {
		if err := st.consolidateRecall(ctx, r.Answer, false); err != nil {
			return err
		}
		p.Reinforce = nil
	}
	for len(p.Closures) > 0 {
		c := p.Closures[0]
		p.Closures = p.Closures[1:] // later closures stay protected while this one is checked
		if err := st.consolidateClosed(ctx, c.Intents, c.Guidance, c.Chain); err != nil {
			return err
		}
	}
	st.s.Pending = nil
	return nil
}
