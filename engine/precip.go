package engine

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// PRECIP (the Hippocam paper §2.3, appendix B.2.2) consolidates the work of a closed intent into a
// first-person memory, conditioned on the whole intent chain, that replaces the work in the
// context (Alg. 1, lines 5-13).

//go:embed prompts/precip.txt
var precipPrompt string

// closedSpan is one group of closures consolidated together: the context range it covers and the
// intents it closes, innermost first.
type closedSpan struct {
	closing []hippocam.Intent
}

// consolidateClosed runs PRECIP on every closed span, innermost first, then the ordinary prefix
// check in the region of the last memory committed.
//
// A closed intent's span runs from its first message up to, not including, the guidance that
// closed it, or the user's new request that began the step, whichever comes first. When an intent that stays open began at the same message, the span starts just
// after it, so that the open intent keeps its first message. An enclosing closure whose span adds
// only guidance to the inner one is coalesced with it: one memory for both.
func (st *step) consolidateClosed(ctx context.Context, closed []hippocam.Intent, guidanceID string, chain []string) error {
	if len(closed) == 0 {
		return nil
	}
	// chain: the stack as it was when these intents closed, broadest first.
	var groups []closedSpan
	for _, in := range closed {
		if n := len(groups); n > 0 && st.onlyGuidanceAdded(groups[n-1].closing[0], in) {
			groups[n-1].closing = append(groups[n-1].closing, in)
			continue
		}
		groups = append(groups, closedSpan{closing: []hippocam.Intent{in}})
	}
	last := ""
	for _, g := range groups {
		outer := g.closing[len(g.closing)-1]
		lo, hi := st.spanOf(outer, guidanceID)
		lo, hi = wholeExchanges(st.s.Context, lo, hi)
		if lo >= hi {
			st.e.log.Warn("closed intent has no span to consolidate", "intent", outer.Label)
			continue
		}
		memory, err := st.precip(ctx, lo, hi, chain, g.closing)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var gaveUp *errGaveUp
			if !errors.As(err, &gaveUp) {
				st.e.log.Warn("intent consolidation failed; span kept", "intent", outer.Label, "error", err)
			}
			continue
		}
		m, err := st.replace(lo, hi, memory)
		if err != nil {
			return err
		}
		st.res.IntentConsolidations++
		last = m.ID
	}
	st.closing = nil
	if last != "" {
		return st.ordinaryCheck(ctx, last)
	}
	return nil
}

// spanOf returns the context range of a closed intent's span (see consolidateClosed).
func (st *step) spanOf(in hippocam.Intent, guidanceID string) (int, int) {
	lo, hi := st.s.Index(in.Start), st.s.Index(guidanceID)
	if lo < 0 || hi < 0 || lo >= hi {
		return 0, 0
	}
	for _, open := range st.s.Stack {
		if open.Start == in.Start {
			lo++
			break
		}
	}
	if s := st.s.Index(st.start); s > lo && s < hi && st.s.Context[s].Role == hippocam.RoleUser {
		// The round began with a new request from the user, the one that led JANUS to close
		// the intent: it opens the next work and is the step's to answer, not the closed
		// intent's. (A tool result that finishes the work belongs to the intent; its round
		// begins with the assistant message that called the tool, inside the span.)
		hi = s
	}
	return lo, hi
}

// onlyGuidanceAdded reports whether outer's span differs from inner's only by guidance messages.
func (st *step) onlyGuidanceAdded(inner, outer hippocam.Intent) bool {
	lo, innerLo := st.s.Index(outer.Start), st.s.Index(inner.Start)
	if lo < 0 || innerLo < 0 || lo > innerLo {
		return false
	}
	for _, m := range st.s.Context[lo:innerLo] {
		if m.Kind != hippocam.KindGuidance {
			return false
		}
	}
	return true
}

// precip asks PRECIP for the memory of span and renders it as an intent memory with a fresh ref.
func (st *step) precip(ctx context.Context, lo, hi int, chain []string, closing []hippocam.Intent) (hippocam.Message, error) {
	labels := make([]string, len(closing))
	for i, c := range closing {
		labels[i] = c.Label
	}
	var b strings.Builder
	b.WriteString(SpanLine(st.s.Context, lo, hi) + "\n")
	if st.e.cfg.Ablations.NoIntentConditioning {
		// The ablation: the work alone, without the intents it served.
		b.WriteString("That work has just finished. Write the memory that will replace those messages.\n")
	} else {
		b.WriteString("That work served the intent chain below, and its innermost part has just closed. Write the memory that will replace those messages.\n")
		b.WriteString(ChainPrefix + strings.Join(chain, ChainSeparator) + "\n")
		b.WriteString(ClosingPrefix + strings.Join(labels, ChainSeparator) + "\n")
		for _, c := range closing {
			fmt.Fprintf(&b, "Exit condition of %q: %s\n", c.Label, c.Done)
		}
	}
	limit := tokens(st.s.Context[lo:hi]) + 256
	var out PrecipOutput
	err := st.contractCall(ctx, hippocam.CallPrecip, precipPrompt, st.requestPrefix(hi), lo, hi, chainStack(chain, closing), b.String(), PrecipToolSpec, func(args string) error {
		out = PrecipOutput{}
		if err := decodeArgs(args, &out); err != nil {
			return err
		}
		if err := out.Check(st.s.Context[:hi], lo, b.String()); err != nil { // schema and plausibility (plausible.go)
			return err
		}
		if n := st.e.tok.Count(out.Memory); n > limit {
			return fmt.Errorf("the memory has %d tokens, more than the %d-token work it replaces; keep only what the intents need", n, limit)
		}
		return nil
	})
	if err != nil {
		return hippocam.Message{}, err
	}
	ref := st.s.NextID("r")
	head := fmt.Sprintf("%s Memory of my finished work on %s (intent chain: %s).\n",
		hippocam.RefTag(ref), quoteLabels(labels), strings.Join(chain, ChainSeparator))
	m := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindIntentMemory, Ref: ref, Content: head + strings.TrimSpace(out.Memory)}
	m.Tokens = hippocam.MessageTokens(st.e.tok, &m)
	return m, nil
}

func quoteLabels(labels []string) string {
	q := make([]string, len(labels))
	for i, l := range labels {
		q[i] = fmt.Sprintf("%q", l)
	}
	return strings.Join(q, " and ")
}

// chainStack is the stack a PRECIP call's instruction names: the chain's intents, broadest
// first, with the exit conditions of those closing.
func chainStack(chain []string, closing []hippocam.Intent) hippocam.IntentStack {
	stack := make(hippocam.IntentStack, len(chain))
	for i, l := range chain {
		stack[i].Label = l
		for _, c := range closing {
			if c.Label == l {
				stack[i].Done = c.Done
			}
		}
	}
	return stack
}
