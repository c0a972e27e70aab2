package sim

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
)

// Part 2 of the simulation (docs/sim.md, "Part 2: tasks, advice and routing"): the lines of a
// task (tags, decisions, the router's directive), advice and the runner's feedback, and how the
// main model decides.

// advice is one line of advice: `use KEY = VALUE` or `avoid KEY = VALUE`, limited to tasks
// whose tags include every tag of when and none of notWhen.
type advice struct {
	avoid         bool
	key, value    string
	when, notWhen []string
}

// applies reports whether the advice holds for a task with these tags.
func (a *advice) applies(tags []string) bool {
	for _, t := range a.when {
		if !slices.Contains(tags, t) {
			return false
		}
	}
	for _, t := range a.notWhen {
		if slices.Contains(tags, t) {
			return false
		}
	}
	return true
}

// text is the canonical form of the advice, as PRECIP and PALIM write it.
func (a *advice) text() string {
	var b strings.Builder
	if a.avoid {
		b.WriteString("avoid ")
	} else {
		b.WriteString("use ")
	}
	b.WriteString(a.key + " = " + a.value)
	if len(a.when) > 0 {
		b.WriteString(" when: " + strings.Join(a.when, " "))
	}
	if len(a.notWhen) > 0 {
		b.WriteString(" not when: " + strings.Join(a.notWhen, " "))
	}
	return b.String()
}

// scope identifies the advice for PALIM's merge: its key and its when-set (as a set), whatever
// its kind and its not-when-set.
func (a *advice) scope() string {
	when := slices.Clone(a.when)
	slices.Sort(when)
	return a.key + "\x00" + strings.Join(slices.Compact(when), " ")
}

// feedbackLine is one line of the stream runner's feedback: `feedback: KEY = X right`, `…
// wrong`, `… right, reference KEY = Y`, or for a question `feedback: KEY := X right` / `wrong`.
// It is never a fact.
type feedbackLine struct {
	key, value string
	right      bool
	reference  string // the right value the environment prefers, when it is not value
	question   bool   // KEY := X: the answer to an !ask, which gives no advice
}

// advice is what the feedback counts as outside its own task (tags: the nearest tags line
// before it): use the reference or the right value, or avoid the wrong one. A question's
// feedback gives none.
func (f *feedbackLine) advice(tags []string) (advice, bool) {
	if f.question {
		return advice{}, false
	}
	a := advice{key: f.key, value: f.value, avoid: !f.right, when: slices.Clone(tags)}
	if f.reference != "" {
		a.value = f.reference
	}
	return a, true
}

// readTaskLine reads the part-2 lines that are not directives: tags, decide, advice and
// feedback. It reports whether t was one. A numeric request of part 3 (learn_numeric.go) is read
// as a decision without options: the agent answers it where it answers decisions, and the
// router and a task's title treat it as one.
func readTaskLine(l *line, t string) bool {
	if q, ok := readNumericRequest(t); ok {
		l.kind, l.key = kindDecide, q.text
		if q.kind == reqEntities {
			l.key = q.field
		}
		return true
	}
	if rest, ok := strings.CutPrefix(t, "tags:"); ok {
		if tags, ok := readTags(rest); ok {
			l.kind, l.tags = kindTags, tags
			return true
		}
		return false
	}
	if rest, ok := cutWord(t, "decide"); ok {
		return readDecide(l, rest)
	}
	if rest, ok := strings.CutPrefix(t, "feedback:"); ok {
		if fb, ok := readFeedback(strings.TrimSpace(rest)); ok {
			l.kind, l.fb, l.key = kindFeedback, &fb, fb.key
			return true
		}
		return false
	}
	for _, word := range []string{"use", "avoid"} {
		if rest, ok := cutWord(t, word); ok {
			if a, ok := readAdvice(rest); ok {
				a.avoid = word == "avoid"
				l.kind, l.adv, l.key = kindAdvice, &a, a.key
				return true
			}
		}
	}
	return false
}

// readTags reads tags separated by spaces or commas; every tag is a word of letters, digits,
// '_', '.' and '-'.
func readTags(s string) ([]string, bool) {
	tags := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
	for _, t := range tags {
		if keyLen(t) != len(t) {
			return nil, false
		}
	}
	return tags, true
}

// readDecide reads `KEY: A | B | C` after the word decide. Empty options are dropped; a line
// without any is plain text.
func readDecide(l *line, rest string) bool {
	n := keyLen(rest)
	after, ok := strings.CutPrefix(strings.TrimLeft(rest[n:], " \t"), ":")
	if n == 0 || !ok {
		return false
	}
	var opts []string
	for _, o := range strings.Split(after, "|") {
		if o = strings.TrimSpace(o); o != "" {
			opts = append(opts, o)
		}
	}
	if len(opts) == 0 {
		return false
	}
	l.kind, l.key, l.options = kindDecide, rest[:n], opts
	return true
}

// readRoute reads `SYSTEM | SCOPE` after #route.
func readRoute(l *line, rest string) {
	system, scope, _ := strings.Cut(rest, "|")
	if system, scope = strings.TrimSpace(system), oneLine(scope); system != "" && scope != "" {
		l.kind, l.route = kindRoute, [2]string{system, scope}
	}
}

// cutAssignment reads `KEY = VALUE…` (not `:=`) and returns the key, the first word after the
// sign (without a trailing ',' or ';') and what follows it.
func cutAssignment(s string) (key, value, rest string, ok bool) {
	n := keyLen(s)
	after, found := strings.CutPrefix(strings.TrimLeft(s[n:], " \t"), "=")
	if n == 0 || !found {
		return "", "", "", false
	}
	after = strings.TrimLeft(after, " \t")
	end := strings.IndexAny(after, " \t")
	if end < 0 {
		end = len(after)
	}
	value = strings.TrimRight(after[:end], ",;")
	if value == "" {
		return "", "", "", false
	}
	return s[:n], value, strings.TrimSpace(after[end:]), true
}

// readAdvice reads `KEY = VALUE[ when: TAGS][ not when: TAGS]` after use or avoid; a ';', ','
// or '—' before `not when:` is ignored.
func readAdvice(s string) (advice, bool) {
	key, value, rest, ok := cutAssignment(s)
	if !ok {
		return advice{}, false
	}
	a := advice{key: key, value: value}
	if after, ok := strings.CutPrefix(rest, "when:"); ok {
		when, not, hasNot := strings.Cut(after, "not when:")
		if a.when, ok = readTags(strings.TrimRight(strings.TrimSpace(when), ";,—")); !ok {
			return advice{}, false
		}
		rest = ""
		if hasNot {
			rest = "not when:" + not
		}
	}
	rest = strings.TrimSpace(strings.TrimLeft(rest, ";,— \t"))
	if after, ok := strings.CutPrefix(rest, "not when:"); ok {
		if a.notWhen, ok = readTags(after); !ok {
			return advice{}, false
		}
	} else if rest != "" {
		return advice{}, false
	}
	return a, true
}

// readFeedback reads what follows `feedback:`.
func readFeedback(s string) (feedbackLine, bool) {
	n := keyLen(s)
	if n == 0 {
		return feedbackLine{}, false
	}
	fb := feedbackLine{key: s[:n]}
	after := strings.TrimLeft(s[n:], " \t")
	if rest, ok := strings.CutPrefix(after, ":="); ok { // a question: the value is all but the verdict
		rest = strings.TrimSpace(rest)
		i := strings.LastIndexAny(rest, " \t")
		verdict := rest[i+1:]
		if i < 0 || (verdict != "right" && verdict != "wrong") {
			return feedbackLine{}, false
		}
		fb.question, fb.value, fb.right = true, strings.TrimSpace(rest[:i]), verdict == "right"
		return fb, fb.value != ""
	}
	_, value, rest, ok := cutAssignment(s)
	if !ok {
		return feedbackLine{}, false
	}
	fb.value = value
	switch {
	case rest == "wrong":
	case rest == "right":
		fb.right = true
	default:
		ref, ok := strings.CutPrefix(rest, "right,")
		if !ok {
			return feedbackLine{}, false
		}
		ref, ok = cutWord(strings.TrimSpace(ref), "reference")
		key, value, tail, found := cutAssignment(ref)
		if !ok || !found || key != fb.key || tail != "" {
			return feedbackLine{}, false
		}
		fb.right, fb.reference = true, value
		if fb.reference == fb.value {
			fb.reference = ""
		}
	}
	return fb, true
}

// adviceWalk reads advice in context order. It remembers the latest tags line, which gives a
// feedback line its conditions.
type adviceWalk struct{ tags []string }

// see reads one line: the advice it counts as, if any. Feedback counts only where feedback is
// set (outside the current task's own messages).
func (w *adviceWalk) see(l *line, feedback bool) (advice, bool) {
	switch l.kind {
	case kindTags:
		w.tags = l.tags
	case kindAdvice:
		return *l.adv, true
	case kindFeedback:
		if feedback {
			return l.fb.advice(w.tags)
		}
	}
	return advice{}, false
}

// guidancePrefix begins the engine's intent guidance, a user message the engine writes after
// JANUS changed the stack (engine/janus.go): never a task's own message.
const guidancePrefix = "(Intent guidance) "

// taskMessage returns the index of the current task's message: the last user message after the
// last answer that is not the engine's guidance, or -1. Its decide lines are the ones to answer
// and its tags are the task's; an advisory before it, which may quote earlier tasks, is not the
// task.
func (r *request) taskMessage(last int) int {
	for i := len(r.msgs) - 1; i > last; i-- {
		if m := &r.msgs[i]; r.directives(i) && m.Role == hippocam.RoleUser && !strings.HasPrefix(m.Content, guidancePrefix) {
			return i
		}
	}
	return -1
}

// taskTags returns the tags of message i, in order, from all its tags lines.
func (r *request) taskTags(i int) []string {
	var tags []string
	for _, l := range r.lines(i) {
		if l.kind == kindTags {
			tags = append(tags, l.tags...)
		}
	}
	return tags
}

// decide answers one decide line of message cur with `KEY = X` (docs/sim.md), or a numeric
// request with its numbers (learn_numeric_agent.go):
//
//  1. The advice for KEY that applies to the task, walked in context order, the latest
//     statement winning: a use of an option makes it the choice and no longer avoided; an avoid
//     adds its value to the avoided set and clears the choice if it was that value. A standing
//     choice decides.
//  2. Otherwise the option at index h mod n among those not avoided (all, if every one is),
//     h the FNV-1a hash of the task message, a zero byte, KEY, a zero byte and the seed.
func (x *exchange) decide(cur int, d *line, seed int64) string {
	if q, ok := readNumericRequest(d.body); ok && d.options == nil {
		return x.numeric(cur, &q)
	}
	r := x.r
	tags := r.taskTags(cur)
	choice, avoided := "", map[string]bool{}
	var w adviceWalk
	for i := range r.msgs {
		if r.recallResult[i] && i <= x.last {
			continue
		}
		ls := r.lines(i)
		for j := range ls {
			a, ok := w.see(&ls[j], i != cur)
			if !ok || a.key != d.key || !a.applies(tags) {
				continue
			}
			switch {
			case a.avoid:
				avoided[a.value] = true
				if choice == a.value {
					choice = ""
				}
			case slices.Contains(d.options, a.value):
				choice = a.value
				delete(avoided, a.value)
			}
		}
	}
	if choice != "" {
		return d.key + " = " + choice
	}
	open := make([]string, 0, len(d.options))
	for _, o := range d.options {
		if !avoided[o] {
			open = append(open, o)
		}
	}
	if len(open) == 0 {
		open = d.options
	}
	return d.key + " = " + open[decideHash(r.msgs[cur].Content, d.key, seed)%uint64(len(open))]
}

// decideHash is the 64-bit FNV-1a hash of the task message, a zero byte, the key, a zero byte
// and the seed in decimal.
func decideHash(message, key string, seed int64) uint64 {
	h := fnv.New64a()
	h.Write([]byte(message))
	h.Write([]byte{0})
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatInt(seed, 10)))
	return h.Sum64()
}

// RequestSeed reads the `seed` field of a chat request's extra fields: the attempt number the
// stream runner sends, which varies the simulated agent's undecided choices. It is 0 when the
// field is absent or not an integer.
func RequestSeed(extra wire.Extra) int64 {
	raw, ok := extra["seed"]
	if !ok {
		return 0
	}
	var seed int64
	if json.Unmarshal(raw, &seed) != nil {
		return 0
	}
	return seed
}

// adviceID names a piece of advice among PALIM's knowledge items: by its key and when-set, so
// that of two with the same, whatever their kinds, the later is kept.
func adviceID(a *advice) string { return "advice " + a.scope() }

// keepLater adds the advice as a neutral knowledge item at the end of items, replacing the item
// of the same key and when-set, if any (at maps item ids to their index). A replaced item is
// left empty until withoutReplaced removes it, so that the indices in at stay valid.
func keepLater(items []hippocam.KnowledgeItem, at map[string]int, a advice) []hippocam.KnowledgeItem {
	id := adviceID(&a)
	if j, ok := at[id]; ok {
		items[j].Fact = ""
	}
	at[id] = len(items)
	return append(items, hippocam.KnowledgeItem{Fact: a.text(), Evaluation: hippocam.EvalNeutral})
}

// withoutReplaced drops the items keepLater emptied.
func withoutReplaced(items []hippocam.KnowledgeItem) []hippocam.KnowledgeItem {
	return slices.DeleteFunc(items, func(it hippocam.KnowledgeItem) bool { return it.Fact == "" })
}
