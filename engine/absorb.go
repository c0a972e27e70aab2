package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
)

// Absorb brings finished work into a session from outside it: msgs, the whole span of one
// intent that has already ended, are appended and consolidated as a step consolidates the span
// of an intent JANUS closed (Alg. 1, lines 5-13): PRECIP writes the span's memory, conditioned on
// the intent and those open beneath it, and REPLACE files the span beneath it; then the ordinary
// prefix check, and pressure control folds older history (PALIM) whenever the context outgrows
// the window. Neither JANUS nor the main model is called. It is how a learning cluster of the
// hippocam memory system takes in a finished task's trajectory (docs/learning.md, "The systems").
//
// The messages get fresh ids of the session; everything else about them is kept. in names the
// intent (Label and Done; Start is set here). Absorb works on a copy of s and returns the result
// whose Change commits it, like Step. EINVALID for no messages or an intent without a label or
// an exit condition. Component failures are not errors: a span PRECIP could not consolidate
// stays in the context as it arrived, for a later fold; the errors are the context's and the
// archive's.
func (e *Engine) Absorb(ctx context.Context, s *hippocam.Session, arch hippocam.Archive, in hippocam.Intent, msgs []hippocam.Message) (_ *Result, err error) {
	if len(msgs) == 0 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "absorb: no messages")
	}
	if strings.TrimSpace(in.Label) == "" || strings.TrimSpace(in.Done) == "" {
		return nil, hippocam.Errorf(hippocam.EINVALID, "absorb: the intent needs a label and an exit condition")
	}
	began := time.Now()
	ctx = hippocam.WithCallSession(ctx, s.Tenant, s.ID) // the model calls below are the session's (an observer files them under it)
	st := e.newStep(s, arch, Input{})
	defer func() { err = st.failed(err) }()
	if err := st.runPending(ctx); err != nil {
		return nil, err
	}
	st.janusDone = true // no JANUS request: pressure need not make room for one
	lo := len(st.s.Context)
	for _, m := range msgs {
		m.ID = st.s.NextID("m")
		m.Tokens = hippocam.MessageTokens(e.tok, &m)
		st.push(m)
	}
	hi := len(st.s.Context)
	in.Start = st.s.Context[lo].ID
	chain := append(st.s.Stack.Labels(), in.Label)
	st.logAbsorbed(in.Label)
	// The span stays protected from folds until PRECIP has consolidated it.
	st.start, st.closing = in.Start, []hippocam.Intent{in}
	if err := st.pressureOutsideSteps(ctx); err != nil {
		return nil, err
	}
	// Folds before the span moved it: find it again by its first message.
	n := hi - lo
	if lo = st.s.Index(in.Start); lo < 0 {
		return nil, fmt.Errorf("absorb: the span of %q left the context before its consolidation", in.Label)
	}
	lo, hi = wholeExchanges(st.s.Context, lo, lo+n)
	if lo, hi, err = st.roomForPrecip(ctx, lo, hi); err != nil {
		return nil, err
	}
	memory, err := st.precip(ctx, lo, hi, chain, []hippocam.Intent{in})
	st.start, st.closing = "", nil
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		e.log.Warn("absorbed span not consolidated; kept as it arrived", logTenant, st.s.Tenant, logSession, st.s.ID, "intent", in.Label, "error", err)
	default:
		m, err := st.replace(lo, hi, memory)
		if err != nil {
			return nil, err
		}
		st.res.IntentConsolidations++
		if err := st.absorbedCheck(ctx, m.ID); err != nil {
			return nil, err
		}
	}
	if err := st.pressureOutsideSteps(ctx); err != nil {
		return nil, err
	}
	return st.result(began), nil
}

// roomForPrecip makes room for PRECIP's request over the span [lo, hi), which reads the whole
// context up to the span's end: when that would not fit the window with PRECIP's prompt and the
// room for its answer, what lies before the span is folded first. It returns the span's range
// after the fold.
func (st *step) roomForPrecip(ctx context.Context, lo, hi int) (int, int, error) {
	need := tokens(st.s.Context[:hi]) + st.componentFrame(precipPrompt, PrecipToolSpec) + answerRoom(hippocam.CallPrecip, st.e.cfg.Window)
	if need <= st.e.cfg.Window || lo == 0 || st.e.cfg.Ablations.NoPrefix {
		return lo, hi, nil
	}
	first, n := st.s.Context[lo].ID, hi-lo
	r := st.regions()[len(st.regions())-1]
	if err := st.fold(ctx, r.lo, lo); err != nil {
		return 0, 0, err
	}
	lo = st.s.Index(first)
	return lo, lo + n, nil
}

// absorbedCheck is the ordinary check (Alg. 2) of a session that takes in absorbed work. Such a
// session has no rounds of its own: its answers are consolidated with the work they belong to,
// so a working tail counted in rounds would span the whole context and no ordinary fold would
// ever come. Here the newest memory is the tail: what lies before it in its region is folded
// (PALIM) once it holds E_min intent memories and T_min tokens.
func (st *step) absorbedCheck(ctx context.Context, id string) error {
	if st.e.cfg.Ablations.NoPrefix {
		return nil
	}
	at := st.s.Index(id)
	for _, r := range st.regions() {
		if at < r.lo || at >= r.hi {
			continue
		}
		lo, hi := wholeExchanges(st.s.Context, r.lo, at)
		return st.foldIfDue(ctx, lo, hi)
	}
	return nil
}

// pressureOutsideSteps runs pressure control for a session that is not answering: a context
// that cannot be brought within the window is not an error here, since no main-model request is
// about to be sent; the next fold gets another chance.
func (st *step) pressureOutsideSteps(ctx context.Context) error {
	err := st.pressureControl(ctx)
	if hippocam.ErrorCode(err) == hippocam.ECAPACITY && ctx.Err() == nil {
		st.e.log.Warn("absorbed history exceeds the window", logTenant, st.s.Tenant, logSession, st.s.ID, "error", err)
		return nil
	}
	return err
}

// logAbsorbed records the absorbed intent in the stack log, opened and closed at once.
func (st *step) logAbsorbed(label string) {
	st.s.StackLog = append(st.s.StackLog, hippocam.StackEvent{Step: st.s.Version + 1, Opened: []string{label}, Closed: []string{label}})
	if n := len(st.s.StackLog); n > hippocam.MaxStackLog {
		st.s.StackLog = append([]hippocam.StackEvent(nil), st.s.StackLog[n-hippocam.MaxStackLog:]...)
	}
}
