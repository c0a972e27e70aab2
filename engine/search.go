package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hippocam/hippocam"
)

// Search reaches what no impression names (docs/architecture.md §3). Beside recall, the main
// model is offered a search tool: a full-text query over every original message of the
// session's tree (hippocam.Store.Search), answered inside the step like recall and never shown
// to the agent. Each hit comes with the ref whose layer holds it, so recall can open it in its
// place. Knowledge that receded so far that no memory names it any more is one query away.
//
// The engine treats a search like a recall call in every respect: it is offered only where
// recall is, its exchange is transient and travels in the answer's Trace (and into a reinforcing
// memory, like recall's), and Result.RecallCalls counts searches too (Result.SearchCalls says
// how many of them were), so Config.RecallLimit bounds both together.
//
// What a search reads is what the store holds (messages committed before the step) and the
// messages that entered during the step and were already folded beneath a memory (a history
// imported with the request, which the store cannot see before the step commits); those still in
// view are found as hits in view. A stored hit that this step has since folded is given the ref
// of the new node that holds it.

// SearchTool is the main model's full-text search over the session's archive.
const SearchTool = "search"

// SearchHits is the most hits one page of search results shows; fewer when the room left in
// the window holds fewer.
const SearchHits = 8

// SearchArgs are the arguments of the search tool. After, when set, is the id of the last hit a
// page of results showed: the search then lists the hits older than it, so that a result too
// large for the room comes in pages that together show every hit once.
type SearchArgs struct {
	Query string `json:"query"`
	After string `json:"after,omitempty"`
}

var searchSchema = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"A name, identifier, key or a few distinctive words, as they would be written in the message you are looking for. Every word must occur in a message for it to match; case and punctuation do not matter."},"after":{"type":"string","description":"Only to read on when a search result ends by saying that more hits follow: the message id it gives there (the last hit shown). Repeat the same query with it to get the next, older hits. Leave it out for a new search."}},"required":["query"]}`)

// SearchToolSpec is the search tool as the main model is offered it.
var SearchToolSpec = hippocam.Tool{Name: SearchTool, Parameters: searchSchema,
	Description: "Search the full archive of this conversation, every original message including those no memory mentions any more, " +
		"for a word, name, identifier or short phrase. Use it when nothing in view names what you need, so you have no [ref:…] to recall. " +
		fmt.Sprintf("Returns up to %d matching messages, the latest first, each with an excerpt and the [ref:…] whose layer holds it; ", SearchHits) +
		"open that ref with recall to read the message where it was said. " +
		"When more hits match than fit, the result says so on its last line and gives an id: search again with the same query and that id as \"after\" to get the next, older hits, none of them repeated."}

// The text format of search results (search.go writes it; the simulated model reads it). A
// result starts with a header line, then one line per hit, each beginning with ChildMarker:
//
//	--- 1 · m57 · tool · in [ref:r12]: …the excerpt…
//	--- 2 · m9 · user · in view (not archived): …the excerpt…
//
// The ref tag right after SearchInMarker is the layer holding the hit; an excerpt may hold
// [ref:…] tags of its own, which are not the hit's. Hits are numbered across pages. A page that
// leaves hits for later ends with a line beginning with SearchMore that gives, after
// SearchAfterMarker and in quotes, the id to pass as "after" to read on:
//
//	More hits follow, older than these: search again with the same query and "after": "m9".
const (
	SearchInMarker    = " · in "
	SearchInView      = "in view (not archived)"
	SearchMore        = "More hits follow"
	SearchAfterMarker = `"after": "`
)

// internalTool reports whether the engine answers c itself: a plain call of recall or search
// (a tool of the agent's namespaces may bear the same name).
func internalTool(c hippocam.ToolCall) bool {
	return c.Namespace == "" && c.Kind == hippocam.ToolFunction && (c.Name == RecallTool || c.Name == SearchTool)
}

// searchOutcome is what one search call found, or the problem to report to the model instead.
type searchOutcome struct {
	query   string // quoted for the result's header
	after   string // the hit the page continues after ("" for the first page)
	skipped int    // hits before this page
	hits    []hippocam.SearchHit
	more    bool // the store has older hits than those of this page
	problem string
}

// search runs a search call's query against the archive and places each hit in the step's
// tree: a hit still in view has no ref, one this step folded has the ref of its new memory. With
// After, the page starts with the hit just older than that one.
func (st *step) search(ctx context.Context, args string) searchOutcome {
	var a SearchArgs
	if err := decodeArgs(args, &a); err != nil {
		return searchOutcome{problem: "Search error: " + err.Error() + `. Call search with {"query": "WORDS"}.`}
	}
	out := searchOutcome{query: oneLineQuote(a.Query, 120), after: strings.TrimSpace(a.After)}
	hits, skipped, err := st.searchFrom(ctx, a.Query, out.after)
	switch hippocam.ErrorCode(err) {
	case "":
	case hippocam.ENOTFOUND: // the session is not stored yet: nothing is archived
		if out.after != "" {
			return searchOutcome{problem: fmt.Sprintf("Search error: %q is not one of the hits of %s, so there is nothing to read on from. Search again without \"after\" to start from the latest hit.", out.after, out.query)}
		}
	case hippocam.EINVALID:
		return searchOutcome{problem: "Search error: " + hippocam.ErrorMessage(err) + `. Call search with {"query": "WORDS"}.`}
	default:
		st.e.log.Warn("search failed", "error", err)
		return searchOutcome{problem: "Search error: the archive cannot be searched right now; answer with what you have."}
	}
	out.skipped = skipped
	if len(hits) > SearchHits {
		hits, out.more = hits[:SearchHits], true
	}
	folded := map[string]string{} // message id → the ref of the node this step filed it under
	for ref, kids := range st.nodes {
		for i := range kids {
			folded[kids[i].ID] = ref
		}
	}
	for i := range hits {
		if h := &hits[i]; h.Ref == "" {
			h.Ref = folded[h.Message.ID]
		}
	}
	out.hits = hits
	return out
}

// searchFrom returns up to SearchHits+1 hits of query, latest first, starting just after the hit
// whose message id is after (from the latest when after is ""), and how many hits come before
// them. The store answers the latest hits up to a limit, so a later page asks for more each time
// until the anchor and a page beyond it are in. ENOTFOUND when after is not a hit of the query.
func (st *step) searchFrom(ctx context.Context, query, after string) ([]hippocam.SearchHit, int, error) {
	if after == "" {
		hits, err := st.searchAll(ctx, query, SearchHits+1)
		return hits, 0, err
	}
	for limit := 4 * (SearchHits + 1); ; limit *= 4 {
		hits, err := st.searchAll(ctx, query, limit)
		if err != nil {
			return nil, 0, err
		}
		at := -1
		for i := range hits {
			if hits[i].Message.ID == after {
				at = i
				break
			}
		}
		complete := len(hits) < limit // the store had no more hits than these
		switch {
		case at >= 0 && (complete || len(hits)-at-1 > SearchHits):
			return hits[at+1 : min(len(hits), at+2+SearchHits)], at + 1, nil
		case at < 0 && complete:
			return nil, 0, hippocam.Errorf(hippocam.ENOTFOUND, "search: %s is not a hit", after)
		}
	}
}

// searchAll returns up to limit hits of query, latest first: those among the messages that
// entered in this step and that the step already filed beneath a memory (a long history arriving
// at once is folded before it is stored, and the store cannot see it yet), then the store's. The
// step's own messages are newer than every stored one, so they lead. ENOTFOUND from the store
// (a session not stored yet) counts as no hits when the step has some.
func (st *step) searchAll(ctx context.Context, query string, limit int) ([]hippocam.SearchHit, error) {
	var fresh []hippocam.SearchHit
	if q, err := hippocam.ParseSearchQuery(query); err == nil {
		for ref, kids := range st.nodes {
			for i := range kids {
				m := &kids[i]
				if seqOf(m.ID) <= st.storedSeq || !hippocam.Searchable(m) || !q.Matches(hippocam.SearchText(m)) {
					continue
				}
				fresh = append(fresh, hippocam.SearchHit{Message: *m, Ref: ref, Snippet: q.Snippet(hippocam.SearchText(m))})
			}
		}
		slices.SortFunc(fresh, func(a, b hippocam.SearchHit) int { return cmp.Compare(seqOf(b.Message.ID), seqOf(a.Message.ID)) })
	}
	if len(fresh) >= limit {
		return fresh[:limit], nil
	}
	stored, err := st.arch.Search(ctx, query, limit-len(fresh))
	if err != nil && !(len(fresh) > 0 && hippocam.ErrorCode(err) == hippocam.ENOTFOUND) {
		return nil, err
	}
	return append(fresh, stored...), nil
}

// seqOf is idSeq's number, 0 for an id of another form.
func seqOf(id string) int64 {
	n, _ := idSeq(id)
	return n
}

// searchLine is one hit of a search result, with its excerpt cut to at most excerpt bytes (the
// whole excerpt when excerpt < 0), and its place alone, for the listing.
func searchLine(i int, h *hippocam.SearchHit, excerpt int) (line, place string) {
	where := SearchInView
	if h.Ref != "" {
		where = "in " + hippocam.RefTag(h.Ref)
	}
	place = fmt.Sprintf("%s%d · %s · %s · %s", ChildMarker, i+1, h.Message.ID, h.Message.Role, where)
	snippet := h.Snippet
	if excerpt >= 0 && len(snippet) > excerpt {
		snippet = clip(snippet, excerpt) + fmt.Sprintf(" (excerpt cut for want of room; recall %s to read the message page by page)", h.Message.ID)
	}
	return place + ": " + snippet, place
}

// renderSearch writes one page of a search result within room tokens, and its listing (the hit
// lines without excerpts) for when a deeper layer is opened later ("" for problems). The hits
// that fit are shown, latest first; if some are left, the last line says how to read on from
// the last one shown. ok is false when the room does not hold even one hit (the text is then
// the error for the model).
func (st *step) renderSearch(o searchOutcome, room int) (text, listing string, ok bool) {
	if o.problem != "" {
		return o.problem, "", true
	}
	if len(o.hits) == 0 {
		if o.after != "" {
			return fmt.Sprintf("Search for %s, continued after %s: no older message holds all of these words; every hit has been listed.", o.query, o.after), "", true
		}
		return fmt.Sprintf("Search for %s: no message of this conversation holds all of these words. Try other words, or fewer.", o.query), "", true
	}
	var head string
	switch {
	case o.after != "":
		head = fmt.Sprintf("Search for %s, continued: the matching messages older than %s, latest first, from hit %d on.", o.query, o.after, o.skipped+1)
	case o.more:
		head = fmt.Sprintf("Search for %s: the latest matching messages first; more follow.", o.query)
	case len(o.hits) == 1:
		head = fmt.Sprintf("Search for %s: 1 matching message.", o.query)
	default:
		head = fmt.Sprintf("Search for %s: %d matching messages, latest first.", o.query, len(o.hits))
	}
	head += " Recall a hit's [ref:…] to open the layer that holds it."
	more := func(id string) string {
		return fmt.Sprintf("%s, older than these: search again with the same query and %s%s\".", SearchMore, SearchAfterMarker, id)
	}
	tok := st.e.tok
	used := tok.Count(head) + 1
	var lines, short []string
	for i := range o.hits {
		line, place := searchLine(o.skipped+i, &o.hits[i], -1)
		tail := 0 // room for the line to read on after this hit, if hits are left after it
		if i+1 < len(o.hits) || o.more {
			tail = tok.Count(more(o.hits[i].Message.ID)) + 1
		}
		if used+tok.Count(line)+1+tail > room {
			if len(lines) > 0 {
				break
			}
			// Not even one whole hit fits: show the first with as much of its excerpt as fits
			// (recall of its message id reads the message itself page by page).
			if line, place = st.cutHit(o.skipped, &o.hits[0], room-used-tail); line == "" {
				return fmt.Sprintf("Search error: the window has room for only %d more tokens, too few to show a search result. Answer with what you have.", max(room, 0)), "", false
			}
		}
		used += tok.Count(line) + 1
		lines = append(lines, line)
		short = append(short, place)
	}
	if len(lines) < len(o.hits) || o.more {
		tail := more(o.hits[len(lines)-1].Message.ID)
		lines = append(lines, tail)
		short = append(short, tail)
	}
	return head + "\n" + strings.Join(lines, "\n"),
		head + " (Shortened since: excerpts left out.)\n" + strings.Join(short, "\n"), true
}

// cutHit is hit h (the (i+1)th) with its excerpt cut to fit budget tokens, or "" when not even
// its place and a few words of the excerpt fit.
func (st *step) cutHit(i int, h *hippocam.SearchHit, budget int) (line, place string) {
	tok := st.e.tok
	lo, hi := 0, len(h.Snippet)
	for lo < hi { // the longest cut that fits, by binary search over byte lengths
		mid := (lo + hi + 1) / 2
		if l, _ := searchLine(i, h, mid); tok.Count(l)+1 <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo < 16 {
		return "", ""
	}
	return searchLine(i, h, lo)
}

// oneLineQuote quotes s on one line, cut to about limit bytes.
func oneLineQuote(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > limit {
		s = clip(s, limit)
	}
	return `"` + s + `"`
}
