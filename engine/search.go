package engine

import (
	"context"
	"encoding/json"
	"fmt"
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
// What a search reads is what the store holds: messages committed before the step. Messages
// that entered during the step (its inputs, a history imported with them) are not in the store
// yet and are not found; a stored hit that this step has since folded is given the ref of the
// new node that holds it.

// SearchTool is the main model's full-text search over the session's archive.
const SearchTool = "search"

// SearchHits is the most hits one search shows.
const SearchHits = 8

// SearchArgs are the arguments of the search tool.
type SearchArgs struct {
	Query string `json:"query"`
}

var searchSchema = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"A name, identifier, key or a few distinctive words, as they would be written in the message you are looking for. Every word must occur in a message for it to match; case and punctuation do not matter."}},"required":["query"]}`)

// SearchToolSpec is the search tool as the main model is offered it.
var SearchToolSpec = hippocam.Tool{Name: SearchTool, Parameters: searchSchema,
	Description: "Search the full archive of this conversation, every original message including those no memory mentions any more, " +
		"for a word, name, identifier or short phrase. Use it when nothing in view names what you need, so you have no [ref:…] to recall. " +
		fmt.Sprintf("Returns up to %d matching messages, the latest first, each with an excerpt and the [ref:…] whose layer holds it; ", SearchHits) +
		"open that ref with recall to read the message where it was said."}

// The text format of search results (search.go writes it; the simulated model reads it). A
// result starts with a header line, then one line per hit, each beginning with ChildMarker:
//
//	--- 1/3 · m57 · tool · in [ref:r12]: …the excerpt…
//	--- 2/3 · m9 · user · in view (not archived): …the excerpt…
//
// The ref tag right after SearchInMarker is the layer holding the hit; an excerpt may hold
// [ref:…] tags of its own, which are not the hit's.
const (
	SearchInMarker = " · in "
	SearchInView   = "in view (not archived)"
)

// internalTool reports whether the engine answers c itself: a plain call of recall or search
// (a tool of the agent's namespaces may bear the same name).
func internalTool(c hippocam.ToolCall) bool {
	return c.Namespace == "" && c.Kind == hippocam.ToolFunction && (c.Name == RecallTool || c.Name == SearchTool)
}

// searchOutcome is what one search call found, or the problem to report to the model instead.
type searchOutcome struct {
	query   string
	hits    []hippocam.SearchHit
	more    bool // the store had more hits than are shown
	problem string
}

// search runs a search call's query against the archive and places each hit in the step's
// tree: a hit still in view has no ref, one this step folded has the ref of its new memory.
func (st *step) search(ctx context.Context, args string) searchOutcome {
	var a SearchArgs
	if err := decodeArgs(args, &a); err != nil {
		return searchOutcome{problem: "Search error: " + err.Error() + `. Call search with {"query": "WORDS"}.`}
	}
	out := searchOutcome{query: oneLineQuote(a.Query, 120)}
	hits, err := st.arch.Search(ctx, a.Query, SearchHits+1)
	switch hippocam.ErrorCode(err) {
	case "":
	case hippocam.ENOTFOUND: // the session is not stored yet: nothing is archived
	case hippocam.EINVALID:
		return searchOutcome{problem: "Search error: " + hippocam.ErrorMessage(err) + `. Call search with {"query": "WORDS"}.`}
	default:
		st.e.log.Warn("search failed", "error", err)
		return searchOutcome{problem: "Search error: the archive cannot be searched right now; answer with what you have."}
	}
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

// renderSearch writes the result of a search within room tokens, and its listing (the hit lines
// without excerpts) for when a deeper layer is opened later ("" for problems).
func (st *step) renderSearch(o searchOutcome, room int) (string, string) {
	if o.problem != "" {
		return o.problem, ""
	}
	if len(o.hits) == 0 {
		return fmt.Sprintf("Search for %s: no message of this conversation holds all of these words. Try other words, or fewer.", o.query), ""
	}
	n := "1 matching message"
	switch {
	case o.more:
		n = fmt.Sprintf("the latest %d of more matching messages", len(o.hits))
	case len(o.hits) > 1:
		n = fmt.Sprintf("%d matching messages", len(o.hits))
	}
	head := fmt.Sprintf("Search for %s: %s, latest first. Recall a hit's [ref:…] to open the layer that holds it.", o.query, n)
	tok := st.e.tok
	used := tok.Count(head) + 1
	var lines, short []string
	for i, h := range o.hits {
		where := SearchInView
		if h.Ref != "" {
			where = "in " + hippocam.RefTag(h.Ref)
		}
		place := fmt.Sprintf("%s%d/%d · %s · %s · %s", ChildMarker, i+1, len(o.hits), h.Message.ID, h.Message.Role, where)
		line := place + ": " + h.Snippet
		if used+tok.Count(line)+1 > room {
			if len(lines) == 0 {
				return fmt.Sprintf("Search error: the window has room for only %d more tokens, too few to show a search result. Answer with what you have.", max(room, 0)), ""
			}
			lines = append(lines, fmt.Sprintf("(%d more hits left out for want of room; search with more words to narrow it.)", len(o.hits)-i))
			break
		}
		used += tok.Count(line) + 1
		lines = append(lines, line)
		short = append(short, place)
	}
	return head + "\n" + strings.Join(lines, "\n"),
		head + " (Shortened since: excerpts left out.)\n" + strings.Join(short, "\n")
}

// oneLineQuote quotes s on one line, cut to about limit bytes.
func oneLineQuote(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > limit {
		s = clip(s, limit)
	}
	return `"` + s + `"`
}
