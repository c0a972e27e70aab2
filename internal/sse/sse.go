// Package sse is Hippocam's one implementation of server-sent events (the text/event-stream
// format of the WHATWG HTML standard): a Writer for every stream Hippocam and the simulated
// model send, a Reader for every stream they receive, and Split, which cuts an answer's text
// into the deltas a stream carries. A wire format adds only its own events on top: the OpenAI
// chat and Responses streams (openai/wire), Anthropic's Messages stream (anthropic), and the
// proxy's and the simulated model's use of them.
package sse

import (
	"bytes"
	"unicode/utf8"
)

// Split cuts s into pieces of at most n bytes each, never inside a UTF-8 character: a piece
// ends before the character that would cross the bound. A character longer than n (n below 4)
// is a piece of its own, and where the bound falls among stray continuation bytes of a broken
// encoding the piece is one byte, so every piece makes progress. The pieces joined are s; an empty s gives no piece. n below 1 counts as 1.
func Split(s string, n int) []string {
	n = max(n, 1)
	if s == "" {
		return nil
	}
	out := make([]string, 0, (len(s)+n-1)/n)
	for s != "" {
		cut := min(n, len(s))
		for cut < len(s) && cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			_, cut = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// lineEnd is the index of the first CR or LF in b, or -1: the two byte searches are each
// vectorised, which bytes.IndexAny's per-byte loop is not, and event data is long.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}
