package hippocamsys

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/memory/icl"
)

// intro opens every advisory of this system.
const intro = "Below is what earlier tasks of the same kind as yours taught, in the consolidated form kept of them, " +
	"oldest first. Those tasks are finished; do not answer them. Where a memory fits your situation, let it guide your answer."

// Read renders the cluster session's context within budget tokens: its memories as they are
// (their archive handles left out, since the task cannot open the cluster's archive), and any
// span the engine could not consolidate as the request, answer and feedback it holds. When the
// whole context does not fit, the knowledge PALIM folded (prefix memories, which stand for all
// that is older) is kept first, then the newest of the rest; what is kept appears in context
// order. An empty state gives an empty advisory. EINVALID for a state that is not this
// system's.
func (s *System) Read(ctx context.Context, state json.RawMessage, task *hippocam.Task, budget int) (hippocam.Advisory, error) {
	if len(state) == 0 || budget <= 0 {
		return hippocam.Advisory{}, nil
	}
	st, err := Decode(state)
	if err != nil {
		return hippocam.Advisory{}, err
	}
	c := st.Session.Context
	blocks := make([]string, len(c))
	var order []int
	for i := range c {
		if blocks[i] = render(&c[i]); blocks[i] != "" {
			order = append(order, i)
		}
	}
	// Priority: prefix memories first, then the newest first.
	slices.SortStableFunc(order, func(a, b int) int {
		pa, pb := c[a].Kind == hippocam.KindPrefixMemory, c[b].Kind == hippocam.KindPrefixMemory
		if pa != pb {
			if pa {
				return -1
			}
			return 1
		}
		return cmp.Compare(b, a)
	})
	tok := s.env.Tok
	used := tok.Count(intro)
	var keep []int
	for _, i := range order {
		if n := tok.Count(blocks[i]) + 1; used+n <= budget {
			used += n
			keep = append(keep, i)
		}
	}
	// Counts of parts need not add up to the count of the whole: drop the least wanted until the
	// whole fits.
	for len(keep) > 0 {
		text := join(blocks, keep)
		if tok.Count(text) <= budget {
			return hippocam.Advisory{Text: text, Entries: len(keep)}, nil
		}
		keep = keep[:len(keep)-1]
	}
	return hippocam.Advisory{}, nil
}

// join renders the kept blocks in context order after the intro.
func join(blocks []string, keep []int) string {
	idx := slices.Sorted(slices.Values(keep))
	parts := []string{intro}
	for _, i := range idx {
		parts = append(parts, blocks[i])
	}
	return strings.Join(parts, "\n\n")
}

// render is one context message as a block of the advisory; "" for what a task needs not see.
// A memory loses its heading, which names its archive handle and how to open it: the task
// works in a session of its own and cannot.
func render(m *hippocam.Message) string {
	content := m.Content
	memory := m.Kind == hippocam.KindIntentMemory || m.Kind == hippocam.KindPrefixMemory
	if head, body, ok := strings.Cut(content, "\n"); memory && ok && strings.HasPrefix(head, hippocam.RefTag(m.Ref)) {
		content = body
	}
	text := strings.TrimSpace(withoutRefTags(content))
	if text == "" {
		return ""
	}
	switch {
	case memory:
		return text
	case m.Kind.Hidden() || m.Kind == hippocam.KindRecall:
		return ""
	case m.Role == hippocam.RoleAssistant:
		return "Answer given:\n" + icl.Quote(text)
	case m.Role == hippocam.RoleTool:
		return "A tool returned:\n" + icl.Quote(text)
	}
	return icl.QuoteCommands(text)
}

// withoutRefTags removes the [ref:…] handles from text.
func withoutRefTags(text string) string {
	for {
		i := strings.Index(text, "[ref:")
		if i < 0 {
			return text
		}
		j := strings.IndexByte(text[i:], ']')
		if j < 0 {
			return text
		}
		text = text[:i] + strings.TrimLeft(text[i+j+1:], " ")
	}
}

// archive reads the cluster session's archive out of the state, for the engine.
type archive struct{ st *State }

func (st *State) archive() hippocam.Archive { return archive{st} }

// Children returns the messages archived beneath ref. ENOTFOUND for a ref the session lacks.
func (a archive) Children(ctx context.Context, ref string) ([]hippocam.Message, error) {
	kids, ok := a.st.Archive[ref]
	if !ok {
		return nil, hippocam.Errorf(hippocam.ENOTFOUND, "no ref %q in the cluster session", ref)
	}
	return slices.Clone(kids), nil
}

// Message returns one message of the session, in the context or archived. ENOTFOUND if none.
func (a archive) Message(ctx context.Context, id string) (*hippocam.Message, error) {
	for _, m := range a.st.Session.Context {
		if m.ID == id {
			return &m, nil
		}
	}
	for _, kids := range a.st.Archive {
		for _, m := range kids {
			if m.ID == id {
				return &m, nil
			}
		}
	}
	return nil, hippocam.Errorf(hippocam.ENOTFOUND, "no message %q in the cluster session", id)
}

// Search finds the original messages of the session's tree that match query, the latest first
// (by the sequence of their ids).
func (a archive) Search(ctx context.Context, query string, limit int) ([]hippocam.SearchHit, error) {
	q, err := hippocam.ParseSearchQuery(query)
	if err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "search: the limit is %d; ask for at least one hit", limit)
	}
	var hits []hippocam.SearchHit
	consider := func(m hippocam.Message, ref string) {
		if hippocam.Searchable(&m) && q.Matches(hippocam.SearchText(&m)) {
			hits = append(hits, hippocam.SearchHit{Message: m, Ref: ref, Snippet: q.Snippet(hippocam.SearchText(&m))})
		}
	}
	for _, m := range a.st.Session.Context {
		consider(m, "")
	}
	for ref, kids := range a.st.Archive {
		for _, m := range kids {
			consider(m, ref)
		}
	}
	slices.SortFunc(hits, func(x, y hippocam.SearchHit) int { return cmp.Compare(idSeq(y.Message.ID), idSeq(x.Message.ID)) })
	return hits[:min(len(hits), limit)], nil
}

func idSeq(id string) int64 {
	n, _ := strconv.ParseInt(strings.TrimLeft(id, "abcdefghijklmnopqrstuvwxyz"), 10, 64)
	return n
}
