package engine

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
)

// Rebasing a consolidation job (docs/architecture.md §7). A job makes its model calls on the
// session as it was when it began (version V) and holds no lock meanwhile, so steps may answer
// and commit before it is done. Its result is a list of REPLACEs over V's context; Rebase
// carries them onto the newer session instead of running the job again:
//
//   - a REPLACE applies when its span is intact in the newer context: the same messages
//     (messages never change), still side by side and in order, none moved beneath another
//     memory since, and none the first message of an intent open there;
//   - only work the newer session still has pending is applied: what a step ran itself in the
//     meantime is not done twice;
//   - the ids and refs the job allocated are renumbered after the newer session's, in its
//     memories' text too ("[ref:r12]"), so the change commits with the store's version and
//     uniqueness checks;
//   - pending work whose own memory (PRECIP's) could not be placed stays pending for the next
//     run; a prefix fold that could not be placed is only dropped: the next ordinary check or
//     pressure control decides again. Work later steps left stays pending.
//
// The result is what committing the job right away and then the later steps would have given
// whenever those steps did not fold what the job consolidates; when they did, the job's part
// there is dropped, and nothing is lost either way.

// jobWork is what a consolidation job records for Rebase: the session's id sequence when it
// began, and, in the order it did them, the keys of the pending work it did with the number of
// ops done by the end of each.
type jobWork struct {
	baseSeq int64
	items   []string
	ends    []int
}

// did records that the pending work with the given key is done, its ops ending at end.
func (w *jobWork) did(key string, end int) {
	if w != nil {
		w.items = append(w.items, key)
		w.ends = append(w.ends, end)
	}
}

// idPattern finds ids and refs in a memory's text: letters then digits, as NextID makes them.
var idPattern = regexp.MustCompile(`\b[A-Za-z]+[0-9]+\b`)

// Rebase carries res, the result of Consolidate over an earlier version of the session, onto
// newer, the session as it is now, and returns the result to commit in its stead (Change.From
// is newer's version). res itself is returned when newer is the version it started from.
// EINVALID when res is not a consolidation job's result (or has been rebased already);
// ECONFLICT when newer is older than the job's session or is another session.
func (e *Engine) Rebase(newer *hippocam.Session, res *Result) (*Result, error) {
	w := res.job
	if w == nil || res.Session == nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "rebase: not the result of a consolidation job")
	}
	from := res.Change.From
	switch {
	case newer.Tenant != res.Session.Tenant || newer.ID != res.Session.ID || newer.UID != res.Session.UID:
		return nil, hippocam.Errorf(hippocam.ECONFLICT, "rebase: session %q is not the one the job ran on", newer.ID)
	case newer.Version == from:
		return res, nil
	case newer.Version < from || newer.Seq < w.baseSeq:
		return nil, hippocam.Errorf(hippocam.ECONFLICT, "rebase: session %q is at version %d, older than the job's %d", newer.ID, newer.Version, from)
	}
	r := rebasing{w: w, shift: newer.Seq - w.baseSeq, allocated: map[string]bool{}}
	for _, op := range res.Change.Ops {
		if op.Memory != nil {
			r.allocated[op.Memory.ID], r.allocated[op.Memory.Ref] = true, true
		}
	}
	out := newer.Clone()
	out.Context = slices.Clone(newer.Context)
	pending := map[string]bool{}
	if p := newer.Pending; p != nil {
		for _, c := range p.Closures {
			pending[c.Key()] = true
		}
		for _, rf := range p.Reinforce {
			pending[rf.Key()] = true
		}
	}
	open := map[string]bool{}
	for _, in := range newer.Stack {
		open[in.Start] = true
	}
	next := Result{Usage: res.Usage, ModelTime: res.ModelTime, Elapsed: res.Elapsed, JanusFailures: res.JanusFailures}
	var ops []hippocam.Op
	kept := map[string]bool{} // work whose own memory could not be placed: it stays pending
	item := 0
	for i, op := range res.Change.Ops {
		for item < len(w.ends) && i >= w.ends[item] {
			item++
		}
		if op.Append != nil || op.Memory == nil || item >= len(w.items) {
			return nil, fmt.Errorf("rebase: op %d is no REPLACE of pending work", i)
		}
		key := w.items[item]
		own := op.Memory.Kind == hippocam.KindIntentMemory
		if !pending[key] {
			continue // a step ran this work itself meanwhile
		}
		span := make([]string, len(op.Span))
		for k, id := range op.Span {
			span[k] = r.id(id)
		}
		lo, ok := intactSpan(out.Context, span, open)
		if !ok {
			if own {
				kept[key] = true
			}
			continue
		}
		memory := r.message(*op.Memory)
		out.Context = slices.Concat(out.Context[:lo], []hippocam.Message{memory}, out.Context[lo+len(span):])
		ops = append(ops, hippocam.ReplaceOp(span, memory))
		switch {
		case memory.Kind == hippocam.KindPrefixMemory:
			next.PrefixConsolidations++
		case isReinforcement(key):
			next.Reinforced++
		default:
			next.IntentConsolidations++
		}
	}
	done := map[string]bool{}
	for _, key := range w.items {
		done[key] = !kept[key]
	}
	if p := out.Pending; p != nil {
		p.Closures = slices.DeleteFunc(p.Closures, func(c hippocam.ClosedSpan) bool { return done[c.Key()] })
		p.Reinforce = slices.DeleteFunc(p.Reinforce, func(rf hippocam.Reinforcement) bool { return done[rf.Key()] })
		if p.Empty() {
			out.Pending = nil
		}
	}
	out.Seq = newer.Seq + (res.Session.Seq - w.baseSeq)
	out.Usage.Merge(res.Usage)
	out.Consolidations.Intent += next.IntentConsolidations
	out.Consolidations.Prefix += next.PrefixConsolidations
	next.Session = out
	next.Change = hippocam.Change{From: newer.Version, Ops: ops}
	if !out.Pending.Empty() {
		next.Change.Jobs = []hippocam.Job{{Kind: hippocam.JobConsolidate}}
	}
	next.RanPending = res.RanPending
	return &next, nil
}

// rebasing renumbers a job's ids onto a newer session.
type rebasing struct {
	w         *jobWork
	shift     int64
	allocated map[string]bool // the ids and refs of the job's memories
}

// id returns the id or ref the job allocated as id, renumbered after the newer session's; any
// other id as it is.
func (r *rebasing) id(id string) string {
	if !r.allocated[id] || r.shift == 0 {
		return id
	}
	at := len(id)
	for at > 0 && id[at-1] >= '0' && id[at-1] <= '9' {
		at--
	}
	n, err := strconv.ParseInt(id[at:], 10, 64)
	if err != nil || n <= r.w.baseSeq {
		return id
	}
	return id[:at] + strconv.FormatInt(n+r.shift, 10)
}

// text renumbers the job's ids where a memory's text names them.
func (r *rebasing) text(s string) string {
	if r.shift == 0 {
		return s
	}
	return idPattern.ReplaceAllStringFunc(s, r.id)
}

// message returns a job's memory with its id, ref and text renumbered.
func (r *rebasing) message(m hippocam.Message) hippocam.Message {
	m.ID, m.Ref, m.Content = r.id(m.ID), r.id(m.Ref), r.text(m.Content)
	if len(m.Knowledge) > 0 {
		items := make([]hippocam.KnowledgeItem, len(m.Knowledge))
		for i, k := range m.Knowledge {
			k.Fact = r.text(k.Fact)
			if len(k.Revises) > 0 {
				rev := make(hippocam.Revisions, len(k.Revises))
				for j, s := range k.Revises {
					rev[j] = r.text(s)
				}
				k.Revises = rev
			}
			items[i] = k
		}
		m.Knowledge = items
	}
	return m
}

// intactSpan finds span in c: its messages side by side and in order, none the first message of
// an open intent. It returns the index of the first.
func intactSpan(c []hippocam.Message, span []string, open map[string]bool) (int, bool) {
	if len(span) == 0 {
		return 0, false
	}
	lo := slices.IndexFunc(c, func(m hippocam.Message) bool { return m.ID == span[0] })
	if lo < 0 || lo+len(span) > len(c) {
		return 0, false
	}
	for k, id := range span {
		if c[lo+k].ID != id || open[id] {
			return 0, false
		}
	}
	return lo, true
}

// isReinforcement reports whether a pending work key names a reinforcement.
func isReinforcement(key string) bool {
	return strings.HasPrefix(key, (&hippocam.Reinforcement{}).Key())
}
