package hippocam

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Full-text search over a session's tree (docs/architecture.md §3 and §8). Every Store answers
// Search with the same reading of a query and of a message, defined here, so that the in-memory,
// SQLite and Postgres stores agree on what matches:
//
//   - A term is a maximal run of letters and digits, compared in lower case. Everything else
//     (spaces, punctuation, quotes, operators such as OR or *) only separates terms, so no query
//     can be a syntax error: "shop_owner" is the two terms shop, owner; `a"b` is a, b.
//   - The query's words (its runs of non-space text) are phrases: a message matches when, for
//     every word, the word's terms occur in its text one right after the other. "shop_owner"
//     thus matches "shop owner" and "Shop-Owner" but not "owner of the shop".
//   - What is searched is the text of the session's original messages: those of kind raw (what
//     the agent, its user and its tools sent, and the main model's answers), in the context or
//     archived at any depth, with the names and arguments of the tools an answer called.
//     Hippocam's own writing (guidance, memories, bookkeeping marks, copies of recall
//     exchanges) is not searched: it restates originals, later, and would crowd them out.
//   - Hits come latest first: in the order the messages entered the session, newest first.

// SearchHit is one message a search found.
type SearchHit struct {
	// Message is the matching original message, as stored.
	Message Message `json:"message"`
	// Ref names the archive node Message is filed directly beneath, so that recall of Ref opens
	// the layer around it; "" when Message sits in the context itself.
	Ref string `json:"ref,omitempty"`
	// Snippet is a short excerpt of Message's text around its first match, on one line.
	Snippet string `json:"snippet"`
}

// MaxSearchTerms bounds the terms of one query, and MaxTermBytes the length of a term: longer
// runs of letters and digits (encoded blobs, say) are not searched for.
const (
	MaxSearchTerms = 32
	MaxTermBytes   = 200
)

// SearchQuery is a parsed query: one phrase per word, each phrase a sequence of terms.
type SearchQuery struct {
	Phrases [][]string
}

// ParseSearchQuery reads a query as every Store does. EINVALID when it holds no term, or more
// than MaxSearchTerms.
func ParseSearchQuery(query string) (SearchQuery, error) {
	var q SearchQuery
	n := 0
	for _, word := range strings.Fields(query) {
		var phrase []string
		for _, t := range SearchTerms(word) {
			if len(t) <= MaxTermBytes {
				phrase = append(phrase, t)
			}
		}
		if len(phrase) == 0 {
			continue
		}
		if n += len(phrase); n > MaxSearchTerms {
			return SearchQuery{}, Errorf(EINVALID, "the query has more than %d words to search for; use a few distinctive ones", MaxSearchTerms)
		}
		q.Phrases = append(q.Phrases, phrase)
	}
	if len(q.Phrases) == 0 {
		return SearchQuery{}, Errorf(EINVALID, "the query has no word to search for (letters or digits)")
	}
	return q, nil
}

// Terms returns every term of q, phrase after phrase.
func (q SearchQuery) Terms() []string {
	var out []string
	for _, p := range q.Phrases {
		out = append(out, p...)
	}
	return out
}

// isTermRune reports whether r belongs to a term.
func isTermRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

// term is one term of a text and where it sits.
type term struct {
	text       string // lower case
	start, end int    // byte offsets in the text
}

// terms splits text into its terms, in order.
func terms(text string) []term {
	var out []term
	start := -1
	for i, r := range text {
		switch in := isTermRune(r); {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			out = append(out, term{lower(text[start:i]), start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, term{lower(text[start:]), start, len(text)})
	}
	return out
}

// lower maps every rune of s to its lower case, one rune for one.
func lower(s string) string {
	return strings.Map(unicode.ToLower, s)
}

// SearchTerms returns the terms of text in order, in lower case.
func SearchTerms(text string) []string {
	ts := terms(text)
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.text
	}
	return out
}

// Searchable reports whether search looks at m: an original message, of kind raw.
func Searchable(m *Message) bool {
	return (m.Kind == KindRaw || m.Kind == "") && m.Ref == ""
}

// SearchText is the text of m that search reads: its content, then the name and arguments of
// each tool it calls, one per line.
func SearchText(m *Message) string {
	if len(m.ToolCalls) == 0 {
		return m.Content
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, c := range m.ToolCalls {
		b.WriteString("\n")
		b.WriteString(c.Name)
		b.WriteString(" ")
		b.WriteString(c.Arguments)
	}
	return b.String()
}

// firstMatch returns the index in ts of the first term that begins an occurrence of one of q's
// phrases, and whether every phrase occurs.
func (q SearchQuery) firstMatch(ts []term) (first int, all bool) {
	first, all = -1, true
	for _, p := range q.Phrases {
		at := -1
		for i := 0; i+len(p) <= len(ts) && at < 0; i++ {
			if phraseAt(ts, i, p) {
				at = i
			}
		}
		if at < 0 {
			all = false
			continue
		}
		if first < 0 || at < first {
			first = at
		}
	}
	return first, all
}

func phraseAt(ts []term, i int, p []string) bool {
	for k, t := range p {
		if ts[i+k].text != t {
			return false
		}
	}
	return true
}

// Matches reports whether text holds every phrase of q.
func (q SearchQuery) Matches(text string) bool {
	_, all := q.firstMatch(terms(text))
	return all
}

// Snippet widths: bytes kept before the first match and in all.
const (
	snippetBefore = 60
	snippetWidth  = 200
)

// Snippet returns a short excerpt of text around the first occurrence of one of q's phrases
// (the start of text when none occurs), on one line: runs of white space become one space, and
// "…" marks where the text was cut.
func (q SearchQuery) Snippet(text string) string {
	start := 0
	ts := terms(text)
	if first, _ := q.firstMatch(ts); first >= 0 {
		start = ts[first].start
	}
	lo := max(0, start-snippetBefore)
	for lo > 0 && !utf8.RuneStart(text[lo]) {
		lo--
	}
	if lo > 0 { // begin at a word when one starts near
		if sp := strings.IndexAny(text[lo:start], " \t\n"); sp >= 0 {
			lo += sp + 1
		}
	}
	hi := min(len(text), lo+snippetWidth)
	for hi < len(text) && !utf8.RuneStart(text[hi]) {
		hi--
	}
	if hi < len(text) { // end at a word when one ends near
		if sp := strings.LastIndexAny(text[max(start, lo):hi], " \t\n"); sp > 0 {
			hi = max(start, lo) + sp
		}
	}
	s := strings.Join(strings.Fields(text[lo:hi]), " ")
	if lo > 0 {
		s = "…" + s
	}
	if hi < len(text) {
		s += "…"
	}
	return s
}
