package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// Use reinforces (seed 000 §2.6 and A.8; docs/architecture.md §3). When the main model reached
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
// them), which finish has just appended as the context's last message. The exchanges are archived
// as they were last shown; the answer's Trace keeps every result as first shown.
func (st *step) reinforce(ctx context.Context, trace []hippocam.Message) error {
	if len(trace) == 0 || st.e.cfg.Ablations.NoRecall {
		return nil
	}
	c := st.s.Context
	ai := len(c) - 1
	if ai < 0 || c[ai].ID != st.res.Answer.ID {
		return nil
	}
	exchanges := make([]hippocam.Message, len(trace))
	for i, m := range trace {
		delete(st.recallIDs, m.ID) // archived material now, no longer a transient exchange
		m.Kind, m.Trace = hippocam.KindRecall, nil
		if m.Tokens == 0 {
			m.Tokens = hippocam.MessageTokens(st.e.tok, &m)
		}
		exchanges[i] = m
	}
	next := make([]hippocam.Message, 0, len(c)+len(exchanges))
	next = append(append(append(next, c[:ai]...), exchanges...), c[ai])
	st.s.Context = next
	lo, hi := ai, ai+len(exchanges)
	// PRECIP reads the context up to the exchanges' end with its own frame: make room for it
	// first by folding older regions, as pressure control does (the current round is protected).
	need := func() int {
		return tokens(st.s.Context[:len(st.s.Context)-1]) + st.componentFrame(precipPrompt, PrecipToolSpec) + answerRoom(hippocam.CallPrecip, st.e.cfg.Window)
	}
	for _, protectTail := range []bool{true, false} {
		if need() <= st.e.cfg.Window {
			break
		}
		if err := st.sweep(ctx, protectTail); err != nil {
			st.dropExchanges(len(exchanges))
			return err
		}
	}
	lo, hi = len(st.s.Context)-1-len(exchanges), len(st.s.Context)-1
	memory, err := st.recallMemory(ctx, lo, hi, st.question(lo), c[ai].Content)
	if err != nil {
		st.dropExchanges(len(exchanges))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var gaveUp *errGaveUp
		if !errors.As(err, &gaveUp) {
			st.e.log.Warn("reinforcing recalled evidence failed; exchanges kept in the trace only", "error", err)
		}
		return nil
	}
	// Commit the exchanges ahead of the answer (right before the op that appends it: folds made
	// to give PRECIP room come after it), then replace them by the memory.
	at := -1
	for i := len(st.ops) - 1; i >= 0; i-- {
		if a := st.ops[i].Append; a != nil && a.ID == st.res.Answer.ID {
			at = i
			break
		}
	}
	if at < 0 {
		st.dropExchanges(len(exchanges))
		return nil
	}
	appends := make([]hippocam.Op, 0, len(exchanges)+len(st.ops)-at)
	for _, m := range exchanges {
		appends = append(appends, hippocam.AppendOp(m))
	}
	st.ops = append(st.ops[:at:at], append(appends, st.ops[at:]...)...)
	if _, err := st.replace(lo, hi, memory); err != nil {
		return err
	}
	st.res.Reinforced++
	return nil
}

// dropExchanges takes the n exchanges that reinforce put back before the answer (the context's
// last message) out of the context again: they were never committed.
func (st *step) dropExchanges(n int) {
	c := st.s.Context
	end := len(c) - 1
	st.s.Context = append(c[:end-n:end-n], c[end])
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
	err := st.contractCall(ctx, hippocam.CallPrecip, precipPrompt, hi, b.String(), PrecipToolSpec, func(args string) error {
		out = PrecipOutput{}
		if err := decodeArgs(args, &out); err != nil {
			return err
		}
		if err := out.Check(st.s.Context[lo:hi], b.String()); err != nil {
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
