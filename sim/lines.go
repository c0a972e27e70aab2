package sim

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/hippocam/hippocam/engine"
)

// kind classifies one line of message text as the simulation reads it (docs/sim.md, "Lines the
// simulation reads").
type kind int

const (
	kindText       kind = iota // anything the simulation does not react to
	kindOpen                   // #open LABEL | CONDITION
	kindClose                  // #close LABEL
	kindSay                    // !say TEXT
	kindPad                    // !pad N
	kindCall                   // !call TOOL JSON
	kindAsk                    // !ask KEY
	kindUse                    // !use KEY
	kindFact                   // KEY := VALUE
	kindDetail                 // detail KEY := VALUE
	kindImpression             // detail KEY (in the archive)
	kindTags                   // tags: T1 T2 … (part 2, learn_agent.go)
	kindDecide                 // decide KEY: A | B | C
	kindRoute                  // #route SYSTEM | SCOPE
	kindAdvice                 // use KEY = VALUE when: … not when: …, avoid KEY = VALUE …
	kindFeedback               // feedback: KEY = X right / wrong / right, reference KEY = Y
)

// line is one parsed line. Only the fields of its kind are set.
type line struct {
	kind kind
	// raw is the line with the surrounding white space removed and nothing else changed.
	raw string
	// body is raw without its list marker, knowledge id and evaluation tag.
	body string
	// id is the knowledge id the line begins with in a prefix memory (engine.KnowledgeID).
	id string
	// child marks a line that opens a block of a recall result (it begins with ChildMarker).
	child bool

	key, value  string // facts, details, impressions, !ask, !use
	label, cond string // #open, #close
	text        string // !say
	n           int    // !pad
	tool, args  string // !call

	tags    []string      // tags:
	options []string      // decide (with key)
	route   [2]string     // #route: the system and the scope
	adv     *advice       // use, avoid
	fb      *feedbackLine // feedback:
}

// names reports whether l states a fact, a detail or an impression about key.
func (l *line) names(key string) bool {
	switch l.kind {
	case kindFact, kindDetail, kindImpression:
		return l.key == key
	}
	return false
}

// readLines parses every line of text.
func readLines(text string) []line {
	if text == "" {
		return nil
	}
	parts := strings.Split(text, "\n")
	out := make([]line, len(parts))
	for i, p := range parts {
		out[i] = readLine(p)
	}
	return out
}

// readLine parses one line. Before looking at its form it drops the surrounding spaces, one list
// marker followed by a space, a knowledge id and one evaluation tag.
func readLine(s string) line {
	raw := strings.TrimSpace(s)
	l := line{raw: raw, child: strings.HasPrefix(strings.TrimLeft(s, " \t"), engine.ChildMarker)}
	t := raw
	for _, mark := range []string{"-", "*", "•"} {
		if rest, ok := strings.CutPrefix(t, mark); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			t = strings.TrimSpace(rest)
			break
		}
	}
	if id, rest, ok := engine.CutKnowledgeID(t); ok {
		l.id, t = id, rest
	}
	for _, tag := range []string{"[neutral]", "[good]", "[bad]"} {
		if rest, ok := strings.CutPrefix(t, tag); ok {
			t = strings.TrimSpace(rest)
			break
		}
	}
	l.body = t
	if t == "" {
		return l
	}
	switch t[0] {
	case '#':
		readControl(&l, t)
	case '!':
		readAction(&l, t)
	default:
		readKnowledge(&l, t)
	}
	return l
}

// cutWord returns what follows word in t when t is word alone or word and white space.
func cutWord(t, word string) (string, bool) {
	rest, ok := strings.CutPrefix(t, word)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// readControl reads the lines JANUS reacts to.
func readControl(l *line, t string) {
	if rest, ok := cutWord(t, "#open"); ok {
		l.kind = kindOpen
		label, cond, _ := strings.Cut(rest, "|")
		l.label, l.cond = strings.TrimSpace(label), strings.TrimSpace(cond)
	} else if rest, ok := cutWord(t, "#close"); ok {
		l.kind, l.label = kindClose, rest
	} else if rest, ok := cutWord(t, "#route"); ok {
		readRoute(l, rest)
	}
}

// readAction reads the lines the main model reacts to. A malformed one (!pad without a number,
// !call without a tool, !ask or !use without a key) is plain text.
func readAction(l *line, t string) {
	if rest, ok := cutWord(t, "!say"); ok {
		l.kind, l.text = kindSay, rest
	} else if rest, ok := cutWord(t, "!pad"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
			l.kind, l.n = kindPad, n
		}
	} else if rest, ok := cutWord(t, "!call"); ok && rest != "" {
		tool, args := rest, ""
		if i := strings.IndexAny(rest, " \t"); i >= 0 {
			tool, args = rest[:i], rest[i:]
		}
		l.kind, l.tool, l.args = kindCall, tool, strings.TrimSpace(args)
		if l.args == "" {
			l.args = "{}"
		}
	} else if rest, ok := cutWord(t, "!ask"); ok && rest != "" {
		l.kind, l.key = kindAsk, strings.Fields(rest)[0]
	} else if rest, ok := cutWord(t, "!use"); ok && rest != "" {
		l.kind, l.key = kindUse, strings.Fields(rest)[0]
	}
}

// readKnowledge reads facts, details and impressions.
func readKnowledge(l *line, t string) {
	if readTaskLine(l, t) {
		return
	}
	if rest, ok := cutWord(t, "detail"); ok {
		if key, value, ok := splitFact(rest); ok {
			l.kind, l.key, l.value = kindDetail, key, value
			return
		}
		if k, ok := strings.CutSuffix(rest, strings.TrimSpace(engine.ImpressionSuffix)); ok {
			if k = strings.TrimSpace(k); k != "" && keyLen(k) == len(k) {
				l.kind, l.key = kindImpression, k
				return
			}
		}
	}
	if key, value, ok := splitFact(t); ok {
		l.kind, l.key, l.value = kindFact, key, value
	}
}

// splitFact splits "KEY := VALUE"; the spaces around := are optional.
func splitFact(t string) (key, value string, ok bool) {
	n := keyLen(t)
	if n == 0 {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(strings.TrimLeft(t[n:], " \t"), ":=")
	if !ok {
		return "", "", false
	}
	return t[:n], strings.TrimSpace(rest), true
}

// keyLen is the length in bytes of the key at the start of t: letters, digits, '_', '.' and '-'.
func keyLen(t string) int {
	for i, r := range t {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.' && r != '-' {
			return i
		}
	}
	return len(t)
}

// factText is the canonical text of a fact.
func factText(key, value string) string { return key + " := " + value }

// impressionText is the canonical text of an impression about key.
func impressionText(key string) string { return "detail " + key + engine.ImpressionSuffix }

// oneLine folds a label or condition onto a single line, so that text built from it never
// starts a new line the simulation could misread.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Fact reads one line the way the simulation does and reports the fact or detail it states
// (`KEY := VALUE`, `detail KEY := VALUE`), for tools that score answers or check scripts.
func Fact(s string) (key, value string, detail, ok bool) {
	switch l := readLine(s); l.kind {
	case kindFact:
		return l.key, l.value, false, true
	case kindDetail:
		return l.key, l.value, true, true
	}
	return "", "", false, false
}

// Ask reports the key of an `!ask KEY` line.
func Ask(s string) (string, bool) {
	l := readLine(s)
	return l.key, l.kind == kindAsk
}

// Use reports the key of a `!use KEY` line.
func Use(s string) (string, bool) {
	l := readLine(s)
	return l.key, l.kind == kindUse
}

// Body returns a line as the simulation reads it: without surrounding spaces, its list marker and
// its evaluation tag.
func Body(s string) string { return readLine(s).body }
