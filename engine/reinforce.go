package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// Use reinforces (the Hippocam paper §2.6 and A.8; docs/architecture.md §3). When the main model reached
// its answer through recall (or search), the step's exchanges are consolidated right after the
// answer: PRECIP, told which question they served, writes a short memory of what the answer drew
// on, and that memory takes the exchanges' place just before the answer, with the exchanges
// archived beneath it. A detail that was recalled and used thus stays near the present, and the
// next question about it needs no recall; later folds carry it on like any memory. Only the
// question's own evidence is kept, and a value stated outside recall results wins over a
// recalled one, so that no superseded value is brought back. If PRECIP fails, the exchanges leave
// the context as before (they stay in the answer's trace) and nothing is reinforced.
//
// This departs from the paper in timing only: the paper leaves the exchanges in the context until
// their intent closes, which at small windows crowds out everything else.

// QuestionMarker begins the line of a reinforcement request that quotes the question the recall
// exchanges served.
const QuestionMarker = "The question they served:"

// recallExchanges returns the step's recall exchanges as the context shows them now: earlier
// results shrunk to their listings, the latest in full (what the model saw when it answered).
func (st *step) recallExchanges() []hippocam.Message {
	var out []hippocam.Message
	for _, m := range st.s.Context {
		if st.recallIDs[m.ID] {
			out = append(out, m)
		}
	}
	return out
}

// reinforce consolidates the recall exchanges of the step's answer (trace: as the model last saw
// them), which finish has just appended as the context's last message: the exchanges enter the
// context right before the answer (KindRecall), then PRECIP's memory takes their place. The
// answer's Trace keeps every result as first shown. With Input.Defer the exchanges are committed
// with the step and the memory is left to the consolidation job (Session.Pending).
func (st *step) reinforce(ctx context.Context, trace []hippocam.Message) error {
	if len(trace) == 0 || st.e.cfg.Ablations.NoRecall || !st.stageExchanges(trace) {
		return nil
	}
	if st.in.Defer {
		p := st.pending()
		p.Reinforce = append(p.Reinforce, hippocam.Reinforcement{Answer: st.res.Answer.ID, Start: st.start, Since: p.Steps})
		return nil
	}
	return st.consolidateRecall(ctx, st.res.Answer.ID, true)
}

// stageExchanges puts the exchanges back into the context right before the answer (its last
// message), and their appends right before the answer's in the step's ops. False when the
// answer is not where it should be.
func (st *step) stageExchanges(trace []hippocam.Message) bool {
	c := st.s.Context
	ai := len(c) - 1
	if ai < 0 || c[ai].ID != st.res.Answer.ID {
		return false
	}
	at := -1
	for i := len(st.ops) - 1; i >= 0; i-- {
		if a := st.ops[i].Append; a != nil && a.ID == st.res.Answer.ID {
			at = i
			break
		}
	}
	if at < 0 {
		return false
	}
	exchanges := make([]hippocam.Message, len(trace))
	appends := make([]hippocam.Op, 0, len(exchanges)+len(st.ops)-at)
	for i, m := range trace {
		delete(st.recallIDs, m.ID) // archived material now, no longer a transient exchange
		m.Kind, m.Trace = hippocam.KindRecall, nil
		if m.Tokens == 0 {
			m.Tokens = hippocam.MessageTokens(st.e.tok, &m)
		}
		exchanges[i] = m
		appends = append(appends, hippocam.AppendOp(m))
	}
	next := make([]hippocam.Message, 0, len(c)+len(exchanges))
	st.s.Context = append(append(append(next, c[:ai]...), exchanges...), c[ai])
	st.ops = append(st.ops[:at:at], append(appends, st.ops[at:]...)...)
	return true
}

// recallRunStart is the index of the first of the KindRecall messages right before context
// index i (i itself when there are none).
func (st *step) recallRunStart(i int) int {
	for i > 0 && st.s.Context[i-1].Kind == hippocam.KindRecall {
		i--
	}
	return i
}

// consolidateRecall asks PRECIP for the memory of the recall exchanges right before the answer
// with the given id, and puts it in their place. When PRECIP fails: in the step (staged) the
// exchanges leave the context again, never committed, and stay in the answer's trace; in a job
// they are committed already, and a plain memory that names their ref takes their place, so they
// leave the model's view and stay one recall away.
func (st *step) consolidateRecall(ctx context.Context, answer string, staged bool) error {
	ai := st.s.Index(answer)
	if ai < 0 {
		return nil // consolidated or gone since: nothing to do
	}
	if lo := st.recallRunStart(ai); lo == ai {
		return nil
	}
	// PRECIP reads the context up to the exchanges' end with its own frame: make room for it
	// first by folding older regions, as pressure control does (the current round is protected).
	need := func() int {
		return tokens(st.s.Context[:st.s.Index(answer)]) + st.componentFrame(precipPrompt, PrecipToolSpec) + answerRoom(hippocam.CallPrecip, st.e.cfg.Window)
	}
	var err error
	for _, protectTail := range []bool{true, false} {
		if need() <= st.e.cfg.Window {
			break
		}
		if err = st.sweep(ctx, protectTail); err != nil {
			break
		}
	}
	ai = st.s.Index(answer)
	lo, hi := st.recallRunStart(ai), ai
	var memory hippocam.Message
	if err == nil {
		memory, err = st.recallMemory(ctx, lo, hi, st.question(lo), st.s.Context[ai].Content)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var gaveUp *errGaveUp
		if !errors.As(err, &gaveUp) {
			st.e.log.Warn("reinforcing recalled evidence failed", logTenant, st.s.Tenant, logSession, st.s.ID, "error", err)
		}
		if staged {
			st.unstage(lo, hi)
			return nil
		}
		memory = st.recallHandle()
	}
	if _, err := st.replace(lo, hi, memory); err != nil {
		return err
	}
	st.res.Reinforced++
	return nil
}

// unstage takes the staged exchanges [lo, hi) out of the context and their appends out of the
// step's ops: they were never committed.
func (st *step) unstage(lo, hi int) {
	ids := map[string]bool{}
	for _, m := range st.s.Context[lo:hi] {
		ids[m.ID] = true
	}
	st.s.Context = append(st.s.Context[:lo:lo], st.s.Context[hi:]...)
	kept := st.ops[:0]
	for _, op := range st.ops {
		if op.Append == nil || !ids[op.Append.ID] {
			kept = append(kept, op)
		}
	}
	st.ops = kept
}

// recallHandle is the memory that stands for committed recall exchanges PRECIP could not
// consolidate: no model call, only where they are.
func (st *step) recallHandle() hippocam.Message {
	ref := st.s.NextID("r")
	m := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindIntentMemory, Ref: ref,
		Content: hippocam.RefTag(ref) + " I opened my archive to answer an earlier question here; what I looked at is kept beneath this ref."}
	m.Tokens = hippocam.MessageTokens(st.e.tok, &m)
	return m
}

// question returns the text of the user message the step answered: the last raw user message
// before context index at.
func (st *step) question(at int) string {
	for i := at - 1; i >= 0; i-- {
		if m := &st.s.Context[i]; m.Role == hippocam.RoleUser && m.Kind == hippocam.KindRaw {
			return m.Content
		}
	}
	return ""
}

// recallMemory asks PRECIP for the memory of the recall exchanges [lo, hi) that served question
// and led to answer.
func (st *step) recallMemory(ctx context.Context, lo, hi int, question, answer string) (hippocam.Message, error) {
	var b strings.Builder
	b.WriteString(SpanLine(st.s.Context, lo, hi) + "\n")
	b.WriteString("Those messages are my own recall exchanges: I opened archived memories to answer a question. Write the short memory that replaces them: only the evidence the answer drew on, with its exact values, names and identifiers, and where it came from (the ref that held it). Leave out everything else the opened layers held, and keep no value that a message outside these exchanges states differently: that statement is the current one.\n")
	fmt.Fprintf(&b, "%s %s\n", QuestionMarker, quoteBlock(question))
	fmt.Fprintf(&b, "The answer it led to: %s\n", quoteBlock(answer))
	limit := tokens(st.s.Context[lo:hi]) + 256
	var out PrecipOutput
	err := st.contractCall(ctx, hippocam.CallPrecip, precipPrompt, st.requestPrefix(hi), lo, hi, nil, b.String(), PrecipToolSpec, func(args string) error {
		out = PrecipOutput{}
		if err := decodeArgs(args, &out); err != nil {
			return err
		}
		if err := out.Check(st.s.Context[:hi], lo, b.String()); err != nil {
			return err
		}
		if n := st.e.tok.Count(out.Memory); n > limit {
			return fmt.Errorf("the memory has %d tokens, more than the %d-token exchanges it replaces; keep only what the answer drew on", n, limit)
		}
		return nil
	})
	if err != nil {
		return hippocam.Message{}, err
	}
	ref := st.s.NextID("r")
	head := fmt.Sprintf("%s What I recalled from the archive to answer a question, and used.\n", hippocam.RefTag(ref))
	m := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindIntentMemory, Ref: ref, Content: head + strings.TrimSpace(out.Memory)}
	m.Tokens = hippocam.MessageTokens(st.e.tok, &m)
	return m, nil
}

// quoteBlock quotes text on one line, shortened to a few hundred bytes.
func quoteBlock(text string) string {
	text = strings.TrimSpace(text)
	if len(text) > 600 {
		text = clip(text, 600)
	}
	return "«" + strings.ReplaceAll(text, "\n", " ⏎ ") + "»"
}
