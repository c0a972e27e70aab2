package engine

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/hippocam/hippocam"
)

// Every request over the context starts with the same messages: Hippocam's system message, the
// agent's framing and the context's visible messages. A session of 10,000 messages would copy
// all of them into a new slice for every call, and again at its next step. Instead the step
// keeps one array of them (step.prefix) and hands out its leading part, read only; the next
// step of the session takes it over with the context's spare capacity (Session.ClaimContext)
// and appends what its context added. Nothing already handed out is ever written again: where
// the context no longer matches the array (a fold, a framing change, recall exchanges that
// left), the matching part is copied into a new one.

// noSharing makes every step copy its context and every request its prefix, as if none of the
// above existed: the tests compare the requests sent either way.
var noSharing atomic.Bool

// requestPrefix is the messages every request over the context starts with: Hippocam's system
// message, the agent's framing, and the context's first end messages, less the bookkeeping
// messages no model is shown (framing and branch marks). It shares its array with the step's
// other requests: read only.
func (st *step) requestPrefix(end int) []hippocam.Message {
	c, p := st.s.Context, st.prefix
	if noSharing.Load() {
		p = nil
	}
	n := st.sharedHead(p)
	i := 0
	if k := &st.mark; n > 0 && k.holds(c, p) && k.n <= end {
		i, n = k.n, k.vis // known to match: compared when the mark was set
	}
	// The new mark: as far as the context holds no recall exchange.
	markN, markVis, open := i, n, true
	track := func(j, vis int) {
		if open = open && !st.exchange(&c[j]); open {
			markN, markVis = j+1, vis
		}
	}
	if n > 0 {
		for ; i < end && n < len(p); i++ {
			m := &c[i]
			if !m.Kind.Hidden() {
				if !sameMessage(&p[n], m) {
					break
				}
				n++
			}
			track(i, n)
		}
	}
	if n == 0 || (n < len(p) && i < end) {
		// p holds another request from n on (or nothing of this one): a new array with the part
		// that matches, and room to grow.
		q := make([]hippocam.Message, 0, n+end-i+len(st.in.Framing)+1+prefixRoom(end))
		if n > 0 {
			q = append(q, p[:n]...)
		} else {
			q = append(q, st.requestHead()...)
			n, markN, markVis = len(q), 0, len(q)
		}
		p = q
	}
	for ; i < end; i++ { // here n == len(p): p's room is the step's own
		if m := &c[i]; !m.Kind.Hidden() {
			p = append(p, *m)
			n++
		}
		track(i, n)
	}
	st.prefix = p
	st.mark = prefixMark{}
	if markN > 0 {
		st.mark = prefixMark{ctx: unsafe.SliceData(c), p: unsafe.SliceData(p), n: markN, vis: markVis, last: c[markN-1]}
	}
	if checkKept.Load() {
		full := append([]hippocam.Message(nil), st.requestHead()...)
		for i := range c[:end] {
			if !c[i].Kind.Hidden() {
				full = append(full, c[i])
			}
		}
		if !slices.EqualFunc(p[:n], full, func(a, b hippocam.Message) bool { return sameMessage(&a, &b) }) {
			panic(fmt.Sprintf("the shared prefix of %d messages is not the %d of the context", n, len(full)))
		}
	}
	return p[:n:n]
}

// prefixMark says how far the shared prefix is known to match the context without comparing
// them again: the context's first n messages, none a recall exchange, whose visible ones end
// the prefix's first vis. It holds while the context keeps its backing array and its n-th
// message (last), and the prefix its array: messages already in either are never written again.
type prefixMark struct {
	ctx, p *hippocam.Message
	n, vis int
	last   hippocam.Message
}

// holds reports whether the mark still holds for context c and prefix p.
func (k *prefixMark) holds(c, p []hippocam.Message) bool {
	return k.n > 0 && k.ctx == unsafe.SliceData(c) && k.p == unsafe.SliceData(p) && k.n <= len(c) &&
		k.vis <= len(p) && sameMessage(&c[k.n-1], &k.last)
}

// prefixRoom is the spare room a new prefix array of a context of n messages gets, so that the
// next steps append to it in place for a while.
func prefixRoom(n int) int { return 16 + n/8 }

// requestHead is the head of the step's requests over the context: Hippocam's system message and
// the agent's framing, each with its size counted once, so that counting a request does not
// tokenize them again.
func (st *step) requestHead() []hippocam.Message {
	if st.head == nil {
		st.head = append(make([]hippocam.Message, 0, 1+len(st.in.Framing)), st.e.systemMessage())
		for _, m := range st.in.Framing {
			if m.Tokens <= 0 {
				m.Tokens = hippocam.MessageTokens(st.e.tok, &m)
			}
			st.head = append(st.head, m)
		}
	}
	return st.head
}

// sharedHead returns how many messages p holds of the head of the step's requests
// (requestHead): all of them, or 0.
func (st *step) sharedHead(p []hippocam.Message) int {
	head := 1 + len(st.in.Framing)
	if len(p) < head {
		return 0
	}
	if sys := st.e.systemMessage(); !sameMessage(&p[0], &sys) {
		return 0
	}
	for j := range st.in.Framing {
		f, q := &st.in.Framing[j], p[1+j]
		if f.Tokens <= 0 {
			q.Tokens = f.Tokens // requestHead counted it
		}
		if !sameMessage(&q, f) {
			return 0
		}
	}
	return head
}

// sameMessage reports whether a and b are the same message: equal strings and numbers, and
// slices and pointers that share their memory (messages are never changed in place, so shared
// memory holds the same values). Messages equal only in content count as different.
func sameMessage(a, b *hippocam.Message) bool {
	return a.ID == b.ID && a.Role == b.Role && a.Kind == b.Kind && a.Content == b.Content &&
		a.ToolCallID == b.ToolCallID && a.Ref == b.Ref && a.Tokens == b.Tokens && a.Origin == b.Origin &&
		sameSlice(a.ToolCalls, b.ToolCalls) && sameSlice(a.Knowledge, b.Knowledge) &&
		sameSlice(a.Trace, b.Trace) && sameSlice(a.Extra, b.Extra) && sameSlice(a.Parts, b.Parts)
}

// sameSlice reports whether a and b are the same slice: same memory, same length.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// carried is what a step leaves with its context's room (Session.KeepContext) for the session's
// next step: its requests' prefix and the sizes counted over its context.
type carried struct {
	prefix []hippocam.Message
	mark   prefixMark
	sizes  contextSizes
}

// contextSizes holds what pressure control, which asks several times a step, counts over the
// context's first n messages: their tokens and the sizes of the answers among them, sorted. A
// call reads only the messages appended since the last. It covers no recall exchange (those
// are counted at each call), and holds while the context keeps its backing array and its n-th
// message (last): the messages before it are never written again (Session.Clone), and a step
// writes in place only its recall exchanges.
type contextSizes struct {
	array   *hippocam.Message
	n       int
	last    hippocam.Message
	tokens  int
	sorted  []int
	scratch []int
}

// exchange reports whether m is one of the step's recall exchanges.
func (st *step) exchange(m *hippocam.Message) bool {
	return len(st.recallIDs) > 0 && st.recallIDs[m.ID]
}

// countContext brings st.sizes up to the context's first recall exchange, and returns what
// follows it.
func (st *step) countContext() []hippocam.Message {
	c, a := st.s.Context, &st.sizes
	if noSharing.Load() || a.array != unsafe.SliceData(c) || a.n > len(c) || (a.n > 0 && !sameMessage(&c[a.n-1], &a.last)) {
		a.array, a.n, a.tokens, a.sorted = unsafe.SliceData(c), 0, 0, a.sorted[:0]
	}
	fresh := a.n == 0
	for ; a.n < len(c) && !st.exchange(&c[a.n]); a.n++ {
		a.tokens += c[a.n].Tokens
		if c[a.n].Role == hippocam.RoleAssistant {
			if fresh {
				a.sorted = append(a.sorted, c[a.n].Tokens) // sorted below, at once
			} else {
				a.sorted = insertSorted(a.sorted, c[a.n].Tokens)
			}
		}
	}
	if fresh {
		slices.Sort(a.sorted)
	}
	if a.n > 0 {
		a.last = c[a.n-1]
	}
	return c[a.n:]
}

// contextTokens is tokens(st.s.Context).
func (st *step) contextTokens() int {
	n := st.sizes.tokens + tokens(st.countContext())
	if checkKept.Load() && n != tokens(st.s.Context) {
		panic(fmt.Sprintf("context tokens kept give %d, counted again %d", n, tokens(st.s.Context)))
	}
	return n
}

// answerQuantile is the q-quantile of the sizes of the context's answers, recall exchanges left
// out.
func (st *step) answerQuantile() int {
	rest, a := st.countContext(), &st.sizes
	sizes := a.sorted
	if len(rest) > 0 {
		sizes = append(a.scratch[:0], a.sorted...)
		for i := range rest {
			if m := &rest[i]; m.Role == hippocam.RoleAssistant && !st.exchange(m) {
				sizes = insertSorted(sizes, m.Tokens)
			}
		}
		a.scratch = sizes
	}
	q := quantileSorted(sizes, st.e.cfg.Quantile)
	if checkKept.Load() {
		var all []int
		for i := range st.s.Context {
			if m := &st.s.Context[i]; m.Role == hippocam.RoleAssistant && !st.exchange(m) {
				all = append(all, m.Tokens)
			}
		}
		if full := quantileOf(all, st.e.cfg.Quantile); full != q {
			panic(fmt.Sprintf("answer sizes kept give %d, counted again %d", q, full))
		}
	}
	return q
}

// checkKept, set by tests, makes requestPrefix, contextTokens and answerQuantile work everything
// out in full too, and panic when the two differ.
var checkKept atomic.Bool

// insertSorted inserts v into sorted, keeping it sorted.
func insertSorted(sorted []int, v int) []int {
	k, _ := slices.BinarySearch(sorted, v)
	return slices.Insert(sorted, k, v)
}

// toolSizes remembers hippocam.ToolTokens by tool: an agent offers the same tools with every
// request, and tokenizing their schemas again each time was a good part of a step's counting.
type toolSizes struct {
	mu sync.Mutex
	m  map[[3]string]int
}

// maxToolSizes bounds toolSizes: past it, it starts again.
const maxToolSizes = 4096

func (c *toolSizes) count(tok hippocam.Tokenizer, t *hippocam.Tool) int {
	k := [3]string{t.Name, t.Description, string(t.Parameters)}
	c.mu.Lock()
	n, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = hippocam.ToolTokens(tok, t)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxToolSizes {
		c.m = map[[3]string]int{}
	}
	c.m[k] = n
	c.mu.Unlock()
	return n
}
