package engine

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
)

// Plausibility validators (docs/architecture.md §5). They stand beside the schema validators of
// contract.go: an answer that parses and fits its schema may still be garbage, and is then
// rejected the same way, with a reason the repair loop (repair.go) quotes back to the component.
// After the bounded corrections the stack or the span stays as it was.
//
// JANUS (CheckJanus), on top of IntentStack.Apply's rules:
//   - depth: the stack after the answer may hold at most Config.MaxDepth intents;
//   - exit conditions must be able to hold: not a word that denies one (ImpossibleCondition:
//     "never", "none", "n/a", …), not text without a letter or digit, not the label repeated;
//   - a purpose this answer closes may not be opened again by the same answer.
//
// PRECIP and PALIM (PrecipOutput.Check, PalimOutput.Check), against their span:
//   - refs: every [ref:ID] the memory names is a ref or id of a span message, or appears in the
//     span's text (its [ref:…] tags, recall handles, recall calls);
//   - fact lines: a line that reads "KEY := VALUE" (after a list marker and an evaluation tag)
//     must be stated by a fact or detail line of the span with the same key and value;
//   - particulars: every number and every identifier-like token (one with a digit or an
//     underscore, a dotted name, a path) of the memory must appear in the text of the messages
//     in view (the span and the context before it: text, tool calls and their arguments, so
//     that a value carried over from an earlier memory counts) or in the instruction (which
//     names the intents), or follow from them (derive.go: a relative date resolved against a
//     date stated there, a unit or number written another way). A full date that follows from
//     nothing is refused whole. For PALIM this applies to the knowledge items only: the
//     narrative may count and summarise.
//
// Matching is case-insensitive and whole-word; a compound token (a path, "12-15", "1,200") that
// does not appear whole is accepted when each of its parts does.

// impossibleConditions are exit conditions that deny there is one, compared lower-cased with
// surrounding punctuation dropped.
var impossibleConditions = map[string]bool{
	"never": true, "none": true, "no": true, "nothing": true, "n/a": true, "na": true,
	"not applicable": true, "null": true, "nil": true, "false": true, "unknown": true,
	"tbd": true, "todo": true, "forever": true, "no condition": true, "no exit condition": true,
	"never done": true, "it never ends": true, "does not end": true, "nothing to do": true,
}

// ImpossibleCondition returns why done cannot serve as the exit condition of an intent labelled
// label, or "" when it can. An empty condition is IntentStack.Apply's to reject.
func ImpossibleCondition(label, done string) string {
	norm := strings.ToLower(strings.Join(strings.Fields(done), " "))
	norm = strings.TrimFunc(norm, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '/' })
	switch {
	case strings.TrimSpace(done) == "":
		return ""
	case norm == "" || !strings.ContainsFunc(norm, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }):
		return fmt.Sprintf("the exit condition %q says nothing", done)
	case impossibleConditions[norm]:
		return fmt.Sprintf("the exit condition %q can never hold", done)
	case hippocam.SameLabel(norm, strings.TrimRight(label, ".!?")):
		return fmt.Sprintf("the exit condition %q only repeats the label", done)
	}
	return ""
}

// CheckJanus validates one JANUS answer as a whole against stack: the plausibility rules above,
// then IntentStack.Apply's (opened intents start at start). It returns the new stack and the
// intents closed, innermost first; or, when any rule fails, the stack unchanged and an error
// listing every reason, so that JANUS can correct them all at once.
func CheckJanus(stack hippocam.IntentStack, ops hippocam.StackOps, start string, maxDepth int) (hippocam.IntentStack, []hippocam.Intent, error) {
	var reasons []string
	if d := stack.DepthAfter(ops); d > maxDepth && len(ops.Open) > 0 {
		reasons = append(reasons, fmt.Sprintf("opening %d %s would make the stack %d deep; at most %d may be open, so close finished intents first or open fewer",
			len(ops.Open), plural(len(ops.Open), "intent", "intents"), d, maxDepth))
	}
	for _, o := range ops.Open {
		if why := ImpossibleCondition(o.Label, o.Done); why != "" {
			reasons = append(reasons, fmt.Sprintf("open %q: %s; state what shows that it has succeeded or can no longer succeed", o.Label, why))
		}
		for _, c := range ops.Close {
			if strings.TrimSpace(o.Label) != "" && hippocam.SameLabel(c.Label, o.Label) {
				reasons = append(reasons, fmt.Sprintf("open %q: this answer closes that purpose; an intent is not closed and opened again at once (leave it open if it goes on)", o.Label))
				break
			}
		}
	}
	next, closed, err := stack.Apply(ops, start)
	if err != nil {
		reasons = append(reasons, hippocam.ErrorMessage(err))
	}
	if err := joinReasons(reasons); err != nil {
		return stack, nil, fmt.Errorf("the operations were rejected, none applied: %w", err)
	}
	return next, closed, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Check validates PRECIP's memory: Validate, then its grounding (see above) in the span
// context[lo:] (the messages it replaces, which end the request), the messages before it in view
// and instruction.
func (o *PrecipOutput) Check(context []hippocam.Message, lo int, instruction string) error {
	return joinReasons(o.problems(context, lo, instruction))
}

func (o *PrecipOutput) problems(context []hippocam.Message, lo int, instruction string) []string {
	if err := o.Validate(); err != nil {
		return []string{err.Error()}
	}
	g := newGrounding(context, lo, instruction)
	var reasons []string
	reasons = append(reasons, g.refs("the memory", o.Memory)...)
	reasons = append(reasons, g.text("the memory", withoutRevisions(o.Memory))...)
	return reasons
}

// withoutRevisions leaves out the lines that say which earlier statement a fact replaces: they
// quote a memory outside the span on purpose (revisions win visibly), so the span cannot ground
// them.
func withoutRevisions(text string) string {
	if !strings.Contains(text, RevisesMarker) {
		return text
	}
	lines := strings.Split(text, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if !strings.Contains(l, RevisesMarker) {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

// Check validates PALIM's memory: Validate, then the grounding of its narrative's refs and of its
// knowledge items (see above) in the span context[lo:] (the messages it replaces, which end the
// request), the messages before it in view and instruction.
func (o *PalimOutput) Check(context []hippocam.Message, lo int, instruction string) error {
	return joinReasons(o.problems(context, lo, instruction))
}

func (o *PalimOutput) problems(context []hippocam.Message, lo int, instruction string) []string {
	if err := o.Validate(); err != nil {
		return []string{err.Error()}
	}
	g := newGrounding(context, lo, instruction)
	reasons := g.refs("the narrative", o.Narrative)
	// Kept items are copies of the span's own items, grounded as they stand; an id that names
	// none is quoted back.
	if _, unknown := keptItems(context[lo:], o.Keep); len(unknown) > 0 {
		reasons = append(reasons, fmt.Sprintf("keep names %s, which %s no knowledge item of a memory in the span; keep only ids shown before the items of the memories you consolidate, and write anything else under knowledge",
			listed(unknown), plural(len(unknown), "is", "are")))
	}
	for i, k := range o.Knowledge {
		where := fmt.Sprintf("knowledge[%d]", i)
		reasons = append(reasons, g.refs(where, k.Fact)...)
		reasons = append(reasons, g.text(where, k.Fact)...)
	}
	return reasons
}

// maxReasons bounds the reasons one rejection lists.
const maxReasons = 8

func joinReasons(reasons []string) error {
	if len(reasons) == 0 {
		return nil
	}
	if len(reasons) > maxReasons {
		reasons = append(reasons[:maxReasons:maxReasons], fmt.Sprintf("and %d more", len(reasons)-maxReasons))
	}
	return fmt.Errorf("%s", strings.Join(reasons, "; "))
}

// grounding is what a memory may draw on.
type grounding struct {
	source string              // the text of the messages in view and the instruction, lower-cased
	words  map[string]bool     // the maximal runs of letters, digits and '_' of source
	ids    map[string]bool     // refs and ids of the span's messages
	facts  map[string][]string // key -> the values the span's fact and detail lines give it
	// What follows from source (derive.go, amount.go): its numbers as plain digits (also those
	// written in words), its amounts as "NUMBER UNIT", the dates it states or lets resolve.
	numbers map[string]bool
	amounts map[string]bool
	dates   derivedDates
}

func newGrounding(context []hippocam.Message, lo int, instruction string) *grounding {
	g := &grounding{words: map[string]bool{}, ids: map[string]bool{}, facts: map[string][]string{}}
	var b strings.Builder
	var texts []string // each message's text, lower-cased, then the instruction's
	for i := range context {
		m := &context[i]
		if m.Kind.Hidden() {
			continue
		}
		from := b.Len()
		writeMessageText(&b, m)
		texts = append(texts, strings.ToLower(b.String()[from:]))
		if i < lo {
			continue
		}
		for _, id := range []string{m.ID, m.Ref} {
			if id != "" {
				g.ids[id] = true
			}
		}
		for _, l := range strings.Split(b.String()[from:], "\n") {
			if key, value, ok := factLine(l); ok {
				g.facts[key] = append(g.facts[key], value)
			}
		}
	}
	g.source = strings.ToLower(b.String() + "\n" + instruction)
	texts = append(texts, strings.ToLower(instruction))
	for _, w := range strings.FieldsFunc(g.source, func(r rune) bool { return !wordRune(r) }) {
		g.words[w] = true
	}
	g.numbers = numbersOf(g.source)
	statusCodes(g.words, g.numbers)
	g.amounts = map[string]bool{}
	keys, _ := amounts(g.source)
	for _, k := range keys {
		g.amounts[k] = true
	}
	g.dates = deriveDates(texts)
	return g
}

// derived blanks out of l (lower-cased) the dates and amounts that follow from the source, so
// that their numbers are not looked for one by one, and returns the full dates it writes that
// follow from nothing, and the months of a year (blanked as well: they are reported whole).
func (g *grounding) derived(l string) (string, []string) {
	b := []byte(l)
	blank := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			b[i] = ' '
		}
	}
	var bad []string
	for _, m := range dateMentions(l) {
		switch {
		case g.dates.holds(m.day) || g.found(l[m.lo:m.hi]):
			blank(m.lo, m.hi)
		case m.day.m != 0 && m.day.y != 0: // a full date, or a month of a year
			bad = append(bad, m.day.String())
			blank(m.lo, m.hi)
		}
	}
	keys, at := amounts(l)
	for i, k := range keys {
		if g.amounts[k] {
			blank(at[i][0], at[i][1])
		}
	}
	return string(b), bad
}

// writeMessageText writes what a memory may draw on from m: its text, its tool calls with their
// arguments and its knowledge items.
func writeMessageText(b *strings.Builder, m *hippocam.Message) {
	b.WriteString(m.Content)
	b.WriteByte('\n')
	for _, c := range m.ToolCalls {
		b.WriteString(c.Name)
		b.WriteByte(' ')
		b.WriteString(c.Arguments)
		b.WriteByte('\n')
	}
	for _, k := range m.Knowledge {
		b.WriteString(k.Fact)
		b.WriteByte('\n')
	}
}

// refs returns a reason for every ref text names that the span does not hold.
func (g *grounding) refs(where, text string) []string {
	var bad []string
	for _, ref := range hippocam.ParseRefTags(text) {
		if !g.ids[ref] && !g.found(strings.ToLower(ref)) {
			bad = append(bad, hippocam.RefTag(ref))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s names %s, which the span does not hold; name only refs shown in the messages you consolidate", where, listed(bad))}
}

// text returns reasons for the fact lines of text the span does not state and for the
// particulars of its other lines that appear nowhere in the span.
func (g *grounding) text(where, text string) []string {
	var reasons, missing []string
	for _, l := range strings.Split(text, "\n") {
		if key, value, ok := factLine(l); ok {
			if !contains(g.facts[key], value) {
				reasons = append(reasons, fmt.Sprintf("%s states %q, which no line of the span states; copy facts as the span gives them", where, key+" := "+value))
			}
			continue
		}
		rest, dates := g.derived(strings.ToLower(stripRefTags(l)))
		for _, d := range dates {
			if !contains(missing, d) {
				missing = append(missing, d)
			}
		}
		for _, name := range names(stripRefTags(l)) {
			if !g.namesWord(name) && !contains(missing, name) {
				missing = append(missing, name)
			}
		}
		for _, tok := range particulars(rest) {
			if !g.grounded(tok) && !contains(missing, tok) {
				missing = append(missing, tok)
			}
		}
	}
	if len(missing) > 0 {
		reasons = append(reasons, fmt.Sprintf("%s names %s, which %s nowhere in the span; state only what its messages show", where, listed(missing), plural(len(missing), "appears", "appear")))
	}
	return reasons
}

// grounded reports whether tok (lower-cased) appears in the source, whole or part by part.
func (g *grounding) grounded(tok string) bool {
	if g.words[tok] || g.found(tok) {
		return true
	}
	if digitsOnly := strings.ReplaceAll(tok, ",", ""); digitsOnly != tok && g.found(digitsOnly) || g.numbers[digitsOnly] {
		return true
	}
	parts := strings.FieldsFunc(tok, func(r rune) bool { return !wordRune(r) })
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if !g.words[p] {
			return false
		}
	}
	return true
}

// found reports whether s occurs in the source as a whole word: not preceded or followed by a
// letter, digit or '_'.
func (g *grounding) found(s string) bool {
	if s == "" {
		return false
	}
	src := g.source
	for off := 0; ; {
		i := strings.Index(src[off:], s)
		if i < 0 {
			return false
		}
		i += off
		j := i + len(s)
		before, after := ' ', ' '
		if i > 0 {
			before = lastRune(src[:i])
		}
		if j < len(src) {
			after = firstRune(src[j:])
		}
		if !wordRune(before) && !wordRune(after) {
			return true
		}
		off = i + 1
	}
}

// particulars returns the numbers and identifier-like tokens of a line, lower-cased: maximal
// runs of letters, digits, '_', '.', '/', '-' (and ',' or ':' between digits), trimmed of
// punctuation at their ends, that hold a digit or '_', or a '.' or '/' inside.
func particulars(line string) []string {
	var out []string
	r := []rune(strings.ToLower(line))
	for i := 0; i < len(r); {
		if !tokenRune(r, i) {
			i++
			continue
		}
		j := i
		for j < len(r) && tokenRune(r, j) {
			j++
		}
		tok := strings.TrimFunc(string(r[i:j]), func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) })
		i = j
		if tok == "" {
			continue
		}
		if identifierLike(tok) {
			out = append(out, tok)
		}
	}
	return out
}

// identifierLike reports whether a trimmed token is a number or an identifier: it holds a digit,
// an '_' or a '/', or a '.' inside a dotted name with a part longer than a letter (so "e.g" and
// the pattern "vX.Y.Z" are not one, "shop.csv" is).
func identifierLike(tok string) bool {
	switch {
	case strings.ContainsFunc(tok, unicode.IsDigit), strings.ContainsAny(tok, "_/"):
		return true
	case strings.Contains(tok, "."):
		for i, p := range strings.Split(tok, ".") {
			if i == 0 && len(p) == 2 && p[0] == 'v' {
				p = p[1:] // a version's pattern, "vX.Y.Z", is no particular either
			}
			if utf8.RuneCountInString(p) > 1 {
				return true
			}
		}
	}
	return false
}

// tokenRune reports whether r[i] belongs to a particular.
func tokenRune(r []rune, i int) bool {
	c := r[i]
	switch {
	case wordRune(c), c == '.', c == '/', c == '-':
		return true
	case c == ',' || c == ':':
		return i > 0 && i+1 < len(r) && unicode.IsDigit(r[i-1]) && unicode.IsDigit(r[i+1])
	}
	return false
}

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

func firstRune(s string) rune { r, _ := utf8.DecodeRuneInString(s); return r }

func lastRune(s string) rune { r, _ := utf8.DecodeLastRuneInString(s); return r }

// factLine reads l as a fact line "KEY := VALUE", after a list marker, a knowledge id and an
// evaluation tag (the lines the simulated model writes, docs/sim.md), or as a detail line
// "detail KEY := VALUE".
// KEY is letters, digits, '_', '.' and '-'.
func factLine(l string) (key, value string, ok bool) {
	t := strings.TrimSpace(l)
	for _, mark := range []string{"-", "*", "•"} {
		if rest, cut := strings.CutPrefix(t, mark); cut && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			t = strings.TrimSpace(rest)
			break
		}
	}
	if _, rest, cut := CutKnowledgeID(t); cut {
		t = rest
	}
	for _, tag := range []string{"[neutral]", "[good]", "[bad]"} {
		if rest, cut := strings.CutPrefix(t, tag); cut {
			t = strings.TrimSpace(rest)
			break
		}
	}
	if rest, cut := strings.CutPrefix(t, "detail "); cut {
		t = strings.TrimSpace(rest)
	}
	n := 0
	for i, r := range t {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.' && r != '-' {
			break
		}
		n = i + len(string(r))
	}
	if n == 0 {
		return "", "", false
	}
	rest, cut := strings.CutPrefix(strings.TrimLeft(t[n:], " \t"), ":=")
	if !cut {
		return "", "", false
	}
	return t[:n], strings.TrimSpace(rest), true
}

// stripRefTags removes the [ref:…] tags of l, which the ref rule checks.
func stripRefTags(l string) string {
	for {
		i := strings.Index(l, "[ref:")
		if i < 0 {
			return l
		}
		j := strings.IndexByte(l[i:], ']')
		if j < 0 {
			return l
		}
		l = l[:i] + " " + l[i+j+1:]
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// listed writes up to five items of list, quoted, and how many more there are.
func listed(list []string) string {
	q := make([]string, 0, 6)
	for i, s := range list {
		if i == 5 {
			q = append(q, fmt.Sprintf("and %d more", len(list)-5))
			break
		}
		q = append(q, fmt.Sprintf("%q", s))
	}
	return strings.Join(q, ", ")
}
