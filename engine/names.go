package engine

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names in a memory (plausible.go): a capitalised word inside a sentence names a person, a
// place, a product or a thing of the kind, so it must appear in the messages in view or the
// instruction, in any case. The first word of a sentence, of a quotation or of a parenthesis is
// capitalised for another reason and is not checked; nor are "I", the months and the weekdays.

// namesWord reports whether the source holds the name w, or a word of the same stem: one that
// shares its first letters but for the last three, and at least four ("Swedish" for "Sweden",
// "Americans" for "America"), so that a demonym or a plural is not an invention.
func (g *grounding) namesWord(w string) bool {
	if g.words[w] {
		return true
	}
	need := max(4, len(w)-3)
	if len(w) < need {
		return false
	}
	for v := range g.words {
		if len(v) >= need && v[:need] == w[:need] {
			return true
		}
	}
	return false
}

// commonCapitals are words capitalised inside a sentence that name nothing new.
var commonCapitals = map[string]bool{"i": true, "i'm": true, "i've": true, "i'd": true, "i'll": true, "ok": true}

// names returns the capitalised words of line (as written) that name something, lower-cased.
func names(line string) []string {
	var out []string
	prev := '.' // the last non-space rune before the word; the line starts a sentence
	for i := 0; i < len(line); {
		r, n := utf8.DecodeRuneInString(line[i:])
		if !unicode.IsLetter(r) {
			if !unicode.IsSpace(r) {
				prev = r
			}
			i += n
			continue
		}
		j := i
		for j < len(line) {
			c, m := utf8.DecodeRuneInString(line[j:])
			if !wordRune(c) {
				break
			}
			j += m
		}
		word := line[i:j]
		if unicode.IsUpper(r) && !strings.ContainsRune(".!?:;\"'([{“‘«—–-•*", prev) {
			w := strings.ToLower(word)
			if !commonCapitals[w] && monthNumber(w) == 0 && weekdays[w] == 0 && w != "sunday" {
				out = append(out, w)
			}
		}
		prev = 'a'
		i = j
	}
	return out
}
