package engine

import (
	"net/http"
	"strconv"
	"strings"
)

// statusCodes adds to numbers the HTTP status codes that words (the word runs of what a memory
// may draw on, lower-cased) name by a constant: Go's http.StatusBadRequest (the run
// "statusbadrequest"), or the snake-case name other languages use (HTTPStatus.BAD_REQUEST,
// SC_BAD_REQUEST: the run "bad_request", alone or after a prefix). A model that consolidates code
// writes "a bad date gives 400" for a handler that answers http.StatusBadRequest: the number
// follows from the span as surely as "30 seconds" follows from "30s". The table is the standard
// library's (http.StatusText), so no code is named here by hand.
func statusCodes(words map[string]bool, numbers map[string]bool) {
	tails := map[string]bool{} // every word, and every part of a word after one of its '_'
	for w := range words {
		tails[w] = true
		for i := strings.IndexByte(w, '_'); i >= 0; {
			w = w[i+1:]
			tails[w] = true
			i = strings.IndexByte(w, '_')
		}
	}
	for code := 100; code < 600; code++ {
		text := http.StatusText(code)
		if text == "" {
			continue
		}
		parts := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' })
		if words["status"+strings.Join(parts, "")] || (len(parts) > 1 && tails[strings.Join(parts, "_")]) {
			numbers[strconv.Itoa(code)] = true
		}
	}
}
