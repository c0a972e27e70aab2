package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// Algorithm 2 (seed 000, appendix B.1): ordinary and pressure-driven prefix consolidation.
//
//	ORDINARYCHECK(region): R ← the region's prefix before the working tail;
//	                       FOLD(R) if R holds ≥ E_min intent memories and ≥ T_min tokens.
//	PRESSURECONTROL:       P ← request tokens + quantile_q(round sizes);
//	                       if P > ρW: SWEEP(protect the tail);
//	                       still > W: SWEEP(protect only the unfinished round);
//	                       still > W: capacity error before the main model is called.
//	SWEEP(protection):     for each region from root to innermost: FOLD(R) if |R| > Δmin.
//	FOLD(R):               whole tool exchanges only; m ← PALIM(R); ask for a more concise m up
//	                       to J times while the saving is below Δmin; REPLACE only if
//	                       |R| − |m| ≥ Δmin. A failed or rejected fold leaves R untouched.

// predicted is P of Alg. 2: the largest request the step may send next (the main model's or
// JANUS's, whichever frames the context with more) plus the reserve for the next round.
func (st *step) predicted() int {
	return st.requestTokens() + roundQuantile(st.s.Rounds, st.e.cfg.Quantile)
}

// requestTokens is the size of the next main-model request. JANUS frames the same context with a
// longer prompt; when its request would not fit, JANUS is skipped for the step (repair.go) rather
// than the step refused.
func (st *step) requestTokens() int {
	return tokens(st.s.Context) + st.agentFrame(true)
}

// pressureControl runs PRESSURECONTROL. ECAPACITY when the request cannot fit even after both
// sweeps; the request is then never sent.
func (st *step) pressureControl(ctx context.Context) error {
	w := st.e.cfg.Window
	if float64(st.predicted()) <= st.e.cfg.Pressure*float64(w) {
		return nil
	}
	if err := st.sweep(ctx, true); err != nil {
		return err
	}
	if st.predicted() > w {
		if err := st.sweep(ctx, false); err != nil {
			return err
		}
	}
	if req, answer := st.requestTokens(), st.answerReserve(); req+answer > w {
		return hippocam.Errorf(hippocam.ECAPACITY,
			"the request needs %d tokens (%d for the context and its framing, %d reserved for the answer) but the context window is %d, even after consolidating everything outside the current round",
			req+answer, req, answer, w)
	}
	return nil
}

// answerReserve is the room kept for the model's answer when deciding whether a request can be
// sent at all: the q-quantile of the answers in the context. Alg. 2 reserves a whole round (the
// answer and the next tool results) for its sweeps, and so does this engine; but a request whose
// next round would not fit can still be answered, and the next step's pressure control deals
// with the round's results when they arrive. Failing it would refuse work the window can hold.
func (st *step) answerReserve() int {
	var sizes []int
	for i := range st.s.Context {
		if m := &st.s.Context[i]; m.Role == hippocam.RoleAssistant && !st.recallIDs[m.ID] {
			sizes = append(sizes, m.Tokens)
		}
	}
	return roundQuantile(sizes, st.e.cfg.Quantile)
}

// sweep folds, from the root region to the innermost, every eligible prefix larger than Δmin.
func (st *step) sweep(ctx context.Context, protectTail bool) error {
	for j := 0; ; j++ {
		regs := st.regions() // recomputed: a fold shifts the indices of later regions
		if j >= len(regs) {
			return nil
		}
		lo, hi := st.eligible(regs[j], st.tailStart(protectTail))
		if tokens(st.s.Context[lo:hi]) <= st.e.cfg.MinSaving {
			continue
		}
		if err := st.fold(ctx, lo, hi); err != nil {
			return fmt.Errorf("sweep region %d: %w", j, err)
		}
	}
}

// ordinaryCheck runs ORDINARYCHECK on the region holding the message with the given id.
func (st *step) ordinaryCheck(ctx context.Context, id string) error {
	at := st.s.Index(id)
	if at < 0 {
		return nil
	}
	for _, r := range st.regions() {
		if at < r.lo || at >= r.hi {
			continue
		}
		lo, hi := st.eligible(r, st.tailStart(true))
		memories := 0
		for _, m := range st.s.Context[lo:hi] {
			if m.Kind == hippocam.KindIntentMemory {
				memories++
			}
		}
		if memories >= st.e.cfg.MinIntentMems && tokens(st.s.Context[lo:hi]) >= st.e.cfg.MinPrefix {
			return st.fold(ctx, lo, hi)
		}
		return nil
	}
	return nil
}

// fold is FOLD(R) for R = [lo, hi) of the context (already whole tool exchanges). Only errors
// that must stop the step (a cancelled context) are returned; a failed or rejected PALIM leaves
// R untouched.
func (st *step) fold(ctx context.Context, lo, hi int) error {
	lo, hi = wholeExchanges(st.s.Context, lo, hi)
	// PALIM's request must fit the window with room for its answer: fold the oldest part that
	// does, and leave the rest to a later fold.
	limit := st.e.cfg.Window - st.componentFrame(palimPrompt, PalimToolSpec) - componentAnswerRoom(st.e.cfg.Window)
	for hi > lo && tokens(st.s.Context[:hi]) > limit {
		lo, hi = wholeExchanges(st.s.Context, lo, hi-1)
	}
	if lo >= hi {
		return nil
	}
	lo, level := st.balance(lo, hi)
	key := st.s.Context[lo].ID + "-" + st.s.Context[hi-1].ID
	if st.failedFolds[key] {
		return nil // this very span already failed in this step
	}
	size := tokens(st.s.Context[lo:hi])
	memory, err := st.palim(ctx, lo, hi, size, level)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var gaveUp *errGaveUp
		if !errors.As(err, &gaveUp) {
			st.e.log.Warn("prefix consolidation failed; prefix kept", "error", err)
		}
		st.failedFolds[key] = true
		return nil
	}
	if size-memory.Tokens < st.e.cfg.MinSaving {
		st.e.log.Info("prefix consolidation saved too little; prefix kept", "tokens", size, "memory", memory.Tokens)
		st.failedFolds[key] = true
		return nil
	}
	if _, err := st.replace(lo, hi, memory); err != nil {
		return err
	}
	st.res.PrefixConsolidations++
	return nil
}

// balance chooses where a fold of [lo, hi) starts so that the message tree stays shallow. Alg. 2
// folds the whole eligible prefix, earlier prefix memories included; done at every fold, that
// makes a chain as deep as the number of folds, and recalling a detail from the start of a long
// session then takes one recall per fold. Instead, prefix memories carry a level, and a fold takes
// in the earlier prefix memories at its front only as a binary counter carries: a level-1
// memory of new work absorbs a level-1 memory before it and becomes level 2, which absorbs a
// level-2 memory before it, and so on. Memories of other levels stay beside it in the context,
// oldest (highest level) first, and are consolidated again once a new memory reaches their level.
// The depth of the tree, and so of any recall, grows with the logarithm of the folds. If what
// remains would be too small to save Δmin, the whole prefix is folded, as Alg. 2 does.
func (st *step) balance(lo, hi int) (int, int) {
	c := st.s.Context
	end := lo // the leading run of prefix memories is [lo, end)
	for end < hi && c[end].Kind == hippocam.KindPrefixMemory {
		end++
	}
	level, start := 1, end
	for start > lo && foldLevel(&c[start-1]) == level {
		start--
		level++
	}
	if start == lo || tokens(c[start:hi]) > st.e.cfg.MinSaving {
		return start, level
	}
	top := level // everything is folded: the new memory sits above every one it takes in
	for i := lo; i < end; i++ {
		top = max(top, foldLevel(&c[i])+1)
	}
	return lo, top
}

// foldLevel reads a prefix memory's level from its first line ("… (level N) …"); memories
// written without one count as level 1.
func foldLevel(m *hippocam.Message) int {
	line, _, _ := strings.Cut(m.Content, "\n")
	if i := strings.Index(line, levelMark); i >= 0 {
		var n int
		if _, err := fmt.Sscanf(line[i+len(levelMark):], "%d", &n); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

// levelMark precedes a prefix memory's level in its first line.
const levelMark = "(level "
