package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// Algorithm 2 (the Hippocam paper, appendix B.1): ordinary and pressure-driven prefix consolidation.
//
//	ORDINARYCHECK(region): R ← what the region holds ahead of the working tail;
//	                       FOLD(R) if R holds ≥ E_min intent memories and ≥ T_min tokens.
//	PRESSURECONTROL:       P ← request tokens + quantile_q(round sizes);
//	                       if P > ρW: SWEEP(protect the tail);
//	                       still > W: SWEEP(protect only the unfinished round);
//	                       still > W: capacity error before the main model is called.
//	SWEEP(protection):     regions outermost first, then inward: FOLD(R) if |R| > Δmin.
//	FOLD(R):               whole tool exchanges only; m ← PALIM(R); ask for a more concise m up
//	                       to J times while the saving is below Δmin; REPLACE only if
//	                       |R| − |m| ≥ Δmin. A failed or rejected fold leaves R untouched.

// predicted is P of Alg. 2, taken over the requests that read the whole context: the main
// model's with the reserve for the next round and, until JANUS has run, PRECIP's over the same
// context with the room for its answer (componentNeed); the larger counts. PRECIP and PALIM
// read only the context up to the end of their span, and a fold trims its span to what their
// request can hold.
func (st *step) predicted() int {
	round := max(roundQuantile(st.s.Rounds, st.e.cfg.Quantile), st.answerReserve())
	return st.contextTokens() + max(st.agentFrame(true)+round, st.componentNeed())
}

// needed is what the step's largest request needs with room for its answer: what the sweeps
// and recede work to fit within W.
func (st *step) needed() int {
	return st.contextTokens() + max(st.agentFrame(true)+st.answerReserve(), st.componentNeed())
}

// agentNeeded is what the main model's request needs with room for its answer: what must fit W
// for the step to go on. When only the room kept for PRECIP cannot be had (the unfinished round
// alone fills the window), a PRECIP request that would not fit is not sent, and the closed span
// stays in the context as it is until a later fold.
func (st *step) agentNeeded() int {
	return st.contextTokens() + st.agentFrame(true) + st.answerReserve()
}

// componentNeed is what the PRECIP request that consolidates what JANUS closes in this step adds
// to the context it reads (up to the end of the closed span): its frame and the room for its
// answer, kept free until JANUS has run; 0 afterwards. JANUS's own request is a bounded view
// (janusView) and needs no room here. (Sized as JANUS's request, with JANUS's prompt and answer
// room, it kept 1,100 tokens more of W = 16,000 free, and a fact stream on bench context folded
// 22 % more often.)
//
// The room kept here is also what a recall has left when a question comes just before a fold
// was due. Keeping none in a step where no intent is open (JANUS can close none then) cost 13 %
// less again on that fact stream, but at W = 4,000 and 8,000 detail questions then found too
// little room for their recall results (TestAblations, TestLongSessionNeverJams).
func (st *step) componentNeed() int {
	if st.janusDone {
		return 0
	}
	return st.componentFrame(precipPrompt, PrecipToolSpec) + answerRoom(hippocam.CallPrecip, st.e.cfg.Window)
}

// janusAnswerRoom is the room kept for JANUS's answer (operations and guidance): W/8, at most
// 4,096 tokens, as for PALIM.
func janusAnswerRoom(window int) int { return componentAnswerRoom(window) }

// requestTokens is the size of the next main-model request.
func (st *step) requestTokens() int {
	return st.contextTokens() + st.agentFrame(true)
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
	if st.needed() > w {
		// Consolidated knowledge itself has outgrown the window: let it recede.
		if err := st.recede(ctx); err != nil {
			return err
		}
	}
	if need := st.agentNeeded(); need > w {
		req, answer := st.requestTokens(), st.answerReserve()
		return hippocam.Capacityf(need, w,
			"the request needs %d tokens (%d for the context and its framing, %d reserved for the answer) but the context window is %d, even after consolidating everything outside the current round",
			need, req, answer, w)
	}
	return nil
}

// answerReserve is the room kept for the model's answer when deciding whether a request can be
// sent at all: the largest of the request's own bound on its answer (Input.MaxTokens), the
// configured minimum and the q-quantile of the answers in the context (W holds input and
// output). Alg. 2 reserves a whole round (the answer and the next tool results) for its sweeps,
// and so does this engine; but a request whose next round would not fit can still be answered,
// and the next step's pressure control deals with the round's results when they arrive.
func (st *step) answerReserve() int {
	if st.reserve == 0 {
		// A requested bound beyond half the window counts as half: the window holds the answer
		// and its input, and a client's generous default must not refuse every request.
		st.reserve = max(st.e.cfg.MinAnswer, min(st.in.MaxTokens, st.e.cfg.Window/2), 1)
	}
	return max(st.reserve, st.answerQuantile()) // share.go: sizes kept from the last call
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
	if st.e.cfg.Ablations.NoPrefix {
		return nil // the ablation truncates under pressure only, as Table 4 does
	}
	at := st.s.Index(id)
	if at < 0 {
		return nil
	}
	for _, r := range st.regions() {
		if at < r.lo || at >= r.hi {
			continue
		}
		lo, hi := st.eligible(r, st.tailStart(true))
		return st.foldIfDue(ctx, lo, hi)
	}
	return nil
}

// foldIfDue folds [lo, hi) when it holds enough: at least E_min intent memories and T_min tokens
// (the ordinary check's condition).
func (st *step) foldIfDue(ctx context.Context, lo, hi int) error {
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
	if st.e.cfg.Ablations.NoPrefix {
		return st.truncate(lo, hi)
	}
	level := 1
	if st.e.cfg.Ablations.FlatSummary {
		for _, m := range st.s.Context[lo:hi] { // one summary: earlier ones are folded again
			if m.Kind == hippocam.KindPrefixMemory {
				level = max(level, foldLevel(&m)+1)
			}
		}
	} else {
		lo, level = st.balance(lo, hi)
	}
	key := st.s.Context[lo].ID + "-" + st.s.Context[hi-1].ID
	if st.failedFolds[key] {
		return nil // this very span already failed in this step
	}
	size := tokens(st.s.Context[lo:hi])
	// Decide from sizes before any call whether a fold can save Δmin: the memory keeps at least
	// the knowledge the span's memories carry (foldFloor), and, for a span that began where one
	// PALIM could not fold did, as much as it wrote of that one. The span is kept without a call
	// until it has grown past that by Δmin; under pressure, what cannot fold recedes (recede).
	memoKey := st.s.Tenant + "\x00" + st.s.ID + "\x00" + st.s.Context[lo].ID
	floor := st.foldFloor(lo, hi, level)
	if kept, ok := st.e.tooLittle.get(memoKey); ok {
		floor = max(floor, kept.memory)
	}
	if size-floor < st.e.cfg.MinSaving {
		st.failedFolds[key] = true
		return nil
	}
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
		st.e.tooLittle.add(memoKey, keptSpan{last: st.s.Context[hi-1].ID, size: size, memory: memory.Tokens})
		return nil
	}
	if _, err := st.replace(lo, hi, memory); err != nil {
		return err
	}
	st.res.PrefixConsolidations++
	return nil
}

// TruncatedMark is the text of the memory the no-prefix ablation leaves of a truncated span.
const TruncatedMark = "Earlier messages were dropped."

// truncate is the no-prefix ablation's FOLD: the span leaves the model's view beneath a marker
// that keeps nothing of it, with no PALIM call. The span stays archived (nothing is ever lost),
// but the marker names none of its content.
func (st *step) truncate(lo, hi int) error {
	if tokens(st.s.Context[lo:hi]) < st.e.cfg.MinSaving {
		return nil
	}
	_, err := st.truncateSpan(lo, hi)
	return err
}

// truncateSpan replaces [lo, hi) by the truncation mark, whatever it saves (recede's last resort
// under the no-prefix ablation). It reports whether the span was replaced.
func (st *step) truncateSpan(lo, hi int) (bool, error) {
	ref := st.s.NextID("r")
	m := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindPrefixMemory, Ref: ref,
		Content: hippocam.RefTag(ref) + " " + TruncatedMark}
	m.Tokens = hippocam.MessageTokens(st.e.tok, &m)
	if m.Tokens >= tokens(st.s.Context[lo:hi]) {
		return false, nil
	}
	if _, err := st.replace(lo, hi, m); err != nil {
		return false, err
	}
	st.res.PrefixConsolidations++
	return true, nil
}

// recede lets consolidated knowledge recede when it has outgrown the window: after both sweeps,
// the step still needs more than W, because what is left outside the current round is mostly
// memories that cannot be folded smaller by the usual means. From the root region inwards, the
// whole eligible prefix (earlier prefix memories included) is folded by PALIM into a memory of a
// named size, for which PALIM turns the knowledge brought forward least recently into
// impressions that point into the archive, and drops even those when they do not fit. What
// recedes stays recoverable: through an impression while one names it, through search after.
// A failed or oversized answer leaves the prefix as it was.
func (st *step) recede(ctx context.Context) error {
	w := st.e.cfg.Window
	again := 0 // recedes of the current region so far
	for j := 0; st.needed() > w; j++ {
		regs := st.regions()
		if j >= len(regs) {
			return nil
		}
		lo, hi := st.eligible(regs[j], st.tailStart(false))
		lo, hi = wholeExchanges(st.s.Context, lo, hi)
		if hi-lo < 1 || (hi-lo == 1 && st.s.Context[lo].Kind == hippocam.KindIntentMemory && st.s.Context[lo].Tokens < minRecededMemory) {
			continue
		}
		ok, err := st.recedeSpan(ctx, lo, hi)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if again++; again < maxRecedes {
			j-- // the region may still hold more to recede
		} else {
			again = 0
		}
	}
	return nil
}

// recedeSpan lets the knowledge of [lo, hi) recede: PALIM folds it into a memory of a named size
// when its request can hold the span; otherwise, or when PALIM fails or misses the size, the span
// is archived mechanically beneath an index of what it holds (archiveSpan). It reports whether
// the span was replaced.
func (st *step) recedeSpan(ctx context.Context, lo, hi int) (bool, error) {
	w := st.e.cfg.Window
	over := st.needed() - int(st.e.cfg.Pressure*float64(w))
	// PALIM reads the context up to the end of what it folds: fold the oldest part that its
	// request can hold (the most recently brought forward knowledge, at the end, stays).
	limit := w - st.componentFrame(palimPrompt, PalimToolSpec) - componentAnswerRoom(w)
	for hi > lo && tokens(st.s.Context[:hi]) > limit {
		_, hi = wholeExchanges(st.s.Context, lo, hi-1)
	}
	size := 0
	if hi > lo {
		size = tokens(st.s.Context[lo:hi])
	}
	target := max(size-over, minRecededMemory)
	if hi <= lo || st.e.cfg.Ablations.NoPrefix || size < 2*minRecededMemory {
		// PALIM can read next to nothing of it: archive the oldest part instead.
		return st.archiveOldest(lo, over)
	}
	if target >= size {
		return false, nil
	}
	{
		level := 1
		for _, m := range st.s.Context[lo:hi] {
			if m.Kind == hippocam.KindPrefixMemory {
				level = max(level, foldLevel(&m)+1)
			}
		}
		memory, err := st.palimFit(ctx, lo, hi, target, level)
		switch {
		case err != nil && ctx.Err() != nil:
			return false, ctx.Err()
		case err != nil:
			st.e.log.Warn("receding knowledge through PALIM failed; archiving the span", "error", err)
		case memory.Tokens > target || memory.Tokens >= size:
			st.e.log.Info("receding knowledge: PALIM's memory missed its size; archiving the span", "target", target, "memory", memory.Tokens)
		default:
			if _, err := st.replace(lo, hi, memory); err != nil {
				return false, err
			}
			st.res.PrefixConsolidations++
			st.res.Receded++
			return true, nil
		}
	}
	return st.archiveOldest(lo, over)
}

// archiveOldest archives mechanically the oldest whole exchanges of the eligible prefix that
// starts at lo, as many as save at least over tokens (or the whole prefix), when PALIM cannot do
// it: archiveSpan, or the truncation mark under the no-prefix ablation.
func (st *step) archiveOldest(lo, over int) (bool, error) {
	c := st.s.Context
	_, end := st.eligible(st.regionAt(lo), st.tailStart(false))
	hi := lo
	for hi < end && tokens(c[lo:hi]) < over+minRecededMemory {
		hi++
	}
	lo, hi = wholeExchanges(c, lo, hi)
	if hi <= lo {
		return false, nil
	}
	if st.e.cfg.Ablations.NoPrefix {
		return st.truncateSpan(lo, hi)
	}
	return st.archiveSpan(lo, hi)
}

// regionAt returns the region that holds context index i.
func (st *step) regionAt(i int) region {
	for _, r := range st.regions() {
		if i >= r.lo && i < r.hi {
			return r
		}
	}
	return region{lo: i, hi: i}
}

// archiveSpan is the last resort that keeps a session from jamming when not even PALIM can read
// what must recede (a single message close to the window's size, say): the span moves into the
// archive beneath a memory that only lists what it holds, one line per message (who, how
// large, how it begins), so that the model can still recall it by its ref and page through it.
// No model is called; nothing is lost.
func (st *step) archiveSpan(lo, hi int) (bool, error) {
	ref := st.s.NextID("r")
	var b strings.Builder
	fmt.Fprintf(&b, "%s Archived without consolidation, to make room (%s1) (recall the ref for the messages themselves):\n", hippocam.RefTag(ref), levelMark)
	for _, m := range st.s.Context[lo:hi] {
		first, _, _ := strings.Cut(strings.TrimSpace(m.Content), "\n")
		what := string(m.Role)
		if m.Consolidated() {
			what = "memory " + hippocam.RefTag(m.Ref)
		} else if len(m.ToolCalls) > 0 {
			what += " calling " + m.ToolCalls[0].Name
		}
		fmt.Fprintf(&b, "- %s, %d tokens: %s\n", what, m.Tokens, clip(first, 80))
	}
	memory := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindPrefixMemory, Ref: ref, Content: strings.TrimRight(b.String(), "\n")}
	memory.Tokens = hippocam.MessageTokens(st.e.tok, &memory)
	if memory.Tokens >= tokens(st.s.Context[lo:hi]) {
		return false, nil
	}
	if _, err := st.replace(lo, hi, memory); err != nil {
		return false, err
	}
	st.res.PrefixConsolidations++
	st.res.Receded++
	st.e.log.Info("archived a span without consolidation to keep the step within the window", "messages", hi-lo, "ref", ref)
	return true, nil
}

// maxRecedes bounds how often one region's knowledge recedes in one step.
const maxRecedes = 2

// minRecededMemory is the smallest memory a region's knowledge is asked to recede into.
const minRecededMemory = 64

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
