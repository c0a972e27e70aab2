package engine

import (
	"math"
	"sort"

	"github.com/hippocam/hippocam"
)

// roundQuantile is s in Alg. 2: the q-quantile of observed round sizes (nearest rank), or 0
// before any round has been observed.
func roundQuantile(rounds []int, q float64) int {
	return quantileOf(append([]int(nil), rounds...), q)
}

// quantileOf is roundQuantile over sizes, which it sorts.
func quantileOf(sizes []int, q float64) int {
	sort.Ints(sizes)
	return quantileSorted(sizes, q)
}

// quantileSorted is roundQuantile over sizes sorted.
func quantileSorted(sizes []int, q float64) int {
	if len(sizes) == 0 {
		return 0
	}
	rank := int(math.Ceil(q*float64(len(sizes)))) - 1
	rank = max(0, min(rank, len(sizes)-1))
	return sizes[rank]
}

// tailBudget is B = min(αW, max(B_min, K·quantile_q(R))) (paper §2.4).
func (c *Config) tailBudget(rounds []int) int {
	b := max(c.TailMinTokens, c.TailRounds*roundQuantile(rounds, c.Quantile))
	return min(int(c.TailCap*float64(c.Window)), b)
}

// isRound reports whether context message i is a complete interaction round's answer: a
// main-model answer (not a transient recall exchange) whose tool calls, if any, all have results.
// Guidance and memories are user messages and never rounds.
func (st *step) isRound(i int) bool {
	c := st.s.Context
	m := &c[i]
	if m.Role != hippocam.RoleAssistant || st.recallIDs[m.ID] {
		return false
	}
	results := 0
	for j := i + 1; j < len(c) && c[j].Role == hippocam.RoleTool && !st.recallIDs[c[j].ID]; j++ {
		results++
	}
	return results >= len(m.ToolCalls)
}

// protectedFrom is the index where the protected part of the context begins: the unfinished
// round this step serves and, until PRECIP has consolidated them, the spans of the intents JANUS
// closed in this step.
func (st *step) protectedFrom() int {
	from := len(st.s.Context)
	if i := st.s.Index(st.start); i >= 0 {
		from = i
	}
	for _, in := range st.closing {
		if i := st.s.Index(in.Start); i >= 0 {
			from = min(from, i)
		}
	}
	if p := st.s.Pending; p != nil {
		for _, c := range p.Closures {
			for _, in := range c.Intents {
				if i := st.s.Index(in.Start); i >= 0 {
					from = min(from, i)
				}
			}
		}
		for _, r := range p.Reinforce {
			if i := st.s.Index(r.Answer); i >= 0 {
				from = min(from, st.recallRunStart(i))
			}
		}
	}
	// The messages JANUS has not reviewed yet (an earlier call failed) keep their directives for
	// its next call: they are protected too, unless they have grown past half the window, when
	// holding them back would jam the session.
	if st.s.Transcript.JanusCovered != "" {
		if i := st.reviewFrom(); i < from && tokens(st.s.Context[i:]) < st.e.cfg.Window/2 {
			from = i
		}
	}
	return from
}

// tailStart returns the index of the first message of the working tail. With protectTail, the
// tail is the shortest suffix holding at least K rounds and B tokens, widened so that it never
// splits a tool exchange; without it (the emergency sweep) only the unfinished round is kept.
func (st *step) tailStart(protectTail bool) int {
	from := st.protectedFrom()
	if !protectTail {
		return exchangeStart(st.s.Context, from)
	}
	c := st.s.Context
	budget := st.e.cfg.tailBudget(st.s.Rounds)
	rounds, size, i := 0, 0, len(c)
	for i > 0 && (rounds < st.e.cfg.TailRounds || size < budget) {
		i--
		if st.recallIDs[c[i].ID] {
			continue // recall exchanges are neither rounds nor tail tokens
		}
		size += c[i].Tokens
		if st.isRound(i) {
			rounds++
		}
	}
	return exchangeStart(c, min(i, from))
}

// exchangeStart moves i back so that it does not fall inside a tool exchange: if c[i] is a tool
// result, the exchange begins at the assistant message that made the call.
func exchangeStart(c []hippocam.Message, i int) int {
	for i > 0 && i < len(c) && c[i].Role == hippocam.RoleTool {
		i--
	}
	return i
}

// region is one part of the context cut by the open intents' first messages (paper §2.4):
// region 0 precedes the stack, region j ≥ 1 is local to intent j. [lo, hi) excludes the region's
// opening guidance and the leading system messages.
type region struct {
	depth  int
	lo, hi int
}

// regions returns C_0 … C_d. An intent whose first message is missing from the context (which
// would be a bug) yields an empty region rather than a wrong one.
func (st *step) regions() []region {
	c := st.s.Context
	lead := 0
	for lead < len(c) && c[lead].Role == hippocam.RoleSystem {
		lead++
	}
	starts := make([]int, len(st.s.Stack))
	for j, in := range st.s.Stack {
		starts[j] = st.s.Index(in.Start)
	}
	out := make([]region, 0, len(starts)+1)
	lo := lead
	for j := 0; j <= len(starts); j++ {
		hi := len(c)
		if j < len(starts) {
			hi = starts[j]
		}
		if hi < 0 || lo < 0 {
			out = append(out, region{depth: j, lo: 0, hi: 0})
		} else {
			out = append(out, region{depth: j, lo: lo, hi: max(lo, hi)})
		}
		if j < len(starts) {
			lo = -1
			if starts[j] >= 0 {
				lo = max(lead, starts[j]+1)
			}
		}
	}
	return out
}

// eligible is a region's prefix before the working tail, restricted to whole tool exchanges
// (Alg. 2, FOLD line 29). It returns an empty range when nothing qualifies.
func (st *step) eligible(r region, tail int) (int, int) {
	return wholeExchanges(st.s.Context, r.lo, min(r.hi, tail))
}

// wholeExchanges shrinks [lo, hi) so that it holds no part of a tool exchange without the rest:
// leading tool results whose call lies before lo are dropped, and the range ends before any
// assistant message whose results are not all inside it.
func wholeExchanges(c []hippocam.Message, lo, hi int) (int, int) {
	for lo < hi && c[lo].Role == hippocam.RoleTool {
		lo++
	}
	for i := lo; i < hi; i++ {
		if len(c[i].ToolCalls) == 0 {
			continue
		}
		want := len(c[i].ToolCalls)
		got := 0
		j := i + 1
		for ; j < len(c) && c[j].Role == hippocam.RoleTool; j++ {
			got++
		}
		if got < want || j > hi {
			return lo, max(lo, i)
		}
	}
	return lo, max(lo, hi)
}
