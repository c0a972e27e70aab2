package sim

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// Part 3 of the simulation (docs/sim.md, "Part 3: numeric memory"): numeric keys and the lines of
// numeric tasks. A numeric key is NAME[dim=value,…]; the task lines are `obs KEY = N`, `counts
// KEY interval=J at_risk=N events=D`, `det FIELD=N …`, the three requests `estimate KEY`,
// `estimate-curve KEY over J` and `estimate-entities FIELD`, and the adapter's `#bind NAME=ROLE
// …`; the advice lines are `forecast KEY = N ± S (support K)`, `curve KEY = [s1, …] (support K)`
// and `entity FIELD=N … (support K)`; the runner's feedback ends in `outcome KEY = T`. Each
// reader takes a line's body (without list marker and evaluation tag) and reports whether the
// line has its form; a line that almost has it is plain text.

// NumericKey is a numeric quantity and its dimensions, written NAME[dim=value,…] or NAME alone.
// Dims keeps the order in which they were written; the dimensions form a set, so two keys are
// the same key when their names and their sets of dimensions are equal (Same).
type NumericKey struct {
	Name string
	Dims []Dim
}

// Dim is one dimension of a numeric key.
type Dim struct {
	Name, Value string
}

// ParseNumericKey reads s (surrounding spaces aside) as one numeric key: a name of letters,
// digits, '_', '.' and '-', then optionally, with no space before it, a bracketed list of
// `dim=value` separated by commas. A dimension name is a word like the key's name; a value is
// any non-empty text without ',', '[', ']' or '='. A dimension named twice, an empty list or
// anything after the closing bracket makes s no key.
func ParseNumericKey(s string) (NumericKey, bool) {
	k, rest, ok := CutNumericKey(strings.TrimSpace(s))
	return k, ok && strings.TrimSpace(rest) == ""
}

// CutNumericKey reads the numeric key at the start of s (as ParseNumericKey) and returns what
// follows it, untrimmed.
func CutNumericKey(s string) (key NumericKey, rest string, ok bool) {
	n := keyLen(s)
	if n == 0 {
		return NumericKey{}, s, false
	}
	k := NumericKey{Name: s[:n]}
	rest = s[n:]
	inner, ok := strings.CutPrefix(rest, "[")
	if !ok {
		return k, rest, true
	}
	end := strings.IndexByte(inner, ']')
	if end < 0 {
		return NumericKey{}, s, false
	}
	for _, part := range strings.Split(inner[:end], ",") {
		name, value, found := strings.Cut(part, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !found || name == "" || keyLen(name) != len(name) || value == "" || strings.ContainsAny(value, "[]=") {
			return NumericKey{}, s, false
		}
		if _, dup := k.Dim(name); dup {
			return NumericKey{}, s, false
		}
		k.Dims = append(k.Dims, Dim{Name: name, Value: value})
	}
	return k, inner[end+1:], true
}

// Dim returns the value of the dimension called name.
func (k NumericKey) Dim(name string) (string, bool) {
	for _, d := range k.Dims {
		if d.Name == name {
			return d.Value, true
		}
	}
	return "", false
}

// String is the key's canonical form: its name, then its dimensions sorted by name in
// brackets, as memory/numeric's Key.String renders them; a key without dimensions is its name.
func (k NumericKey) String() string {
	return canonicalKey(k.Name, k.Dims)
}

// canonicalKey renders a name and dimensions sorted by name.
func canonicalKey(name string, dims []Dim) string {
	if len(dims) == 0 {
		return name
	}
	sorted := slices.Clone(dims)
	slices.SortFunc(sorted, func(a, b Dim) int { return strings.Compare(a.Name, b.Name) })
	parts := make([]string, len(sorted))
	for i, d := range sorted {
		parts[i] = d.Name + "=" + d.Value
	}
	return name + "[" + strings.Join(parts, ",") + "]"
}

// Same reports whether k and o are the same key: the same name and the same set of dimensions.
func (k NumericKey) Same(o NumericKey) bool { return k.String() == o.String() }

// Loose reports whether k and o match loosely: the same name and the same dimensions once those
// whose values are numbers are left out (sales[store=north,week=11] matches
// sales[week=12,store=north], not sales[store=south,week=12]).
func (k NumericKey) Loose(o NumericKey) bool {
	categorical := func(dims []Dim) []Dim {
		var out []Dim
		for _, d := range dims {
			if _, ok := finite(d.Value); !ok {
				out = append(out, d)
			}
		}
		return out
	}
	return k.Name == o.Name && canonicalKey("", categorical(k.Dims)) == canonicalKey("", categorical(o.Dims))
}

// finite reads s as a finite number.
func finite(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// numberLiteral reports whether s is a number as JSON writes one (-?int frac? exp?), so that an
// extracted record can carry it verbatim.
func numberLiteral(s string) bool {
	i := 0
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch n := digits(); {
	case n == 0, n > 1 && s[i-n] == '0':
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// plainNumber writes a number plainly: no exponent, as few digits as tell it apart.
func plainNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// curveNumber writes one value of a computed curve: three decimals at most.
func curveNumber(f float64) string { return plainNumber(math.Round(f*1000) / 1000) }

// field is one `NAME=N` of a counts, det or entity line: N as written.
type field struct{ name, literal string }

// readFields reads space-separated `NAME=N` pairs, N a number literal, no name twice.
func readFields(s string) ([]field, bool) {
	var fs []field
	for _, w := range strings.Fields(s) {
		name, literal, ok := strings.Cut(w, "=")
		if !ok || name == "" || keyLen(name) != len(name) || !numberLiteral(literal) {
			return nil, false
		}
		if _, dup := fieldValue(fs, name); dup {
			return nil, false
		}
		fs = append(fs, field{name, literal})
	}
	return fs, len(fs) > 0
}

// fieldValue returns the literal of the field called name.
func fieldValue(fs []field, name string) (string, bool) {
	for _, f := range fs {
		if f.name == name {
			return f.literal, true
		}
	}
	return "", false
}

// keyed is the start of many numeric lines: a key after a leading word, as written, and what
// follows it.
type keyed struct {
	key  NumericKey
	text string // the key as written
	rest string // what follows the key, trimmed
}

// cutKeyed reads `WORD KEY…` and returns the key and the rest.
func cutKeyed(body, word string) (keyed, bool) {
	after, ok := cutWord(body, word)
	if !ok {
		return keyed{}, false
	}
	k, rest, ok := CutNumericKey(after)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return keyed{}, false
	}
	return keyed{key: k, text: after[:len(after)-len(rest)], rest: strings.TrimSpace(rest)}, true
}

// cutEquals reads `= VALUE` and returns VALUE trimmed.
func cutEquals(s string) (string, bool) {
	v, ok := strings.CutPrefix(s, "=")
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// readList reads `[a, b, …]` at the start of s: one or more number literals. It returns them and
// what follows the closing bracket, trimmed.
func readList(s string) (values []string, rest string, ok bool) {
	inner, ok := strings.CutPrefix(s, "[")
	end := strings.IndexByte(inner, ']')
	if !ok || end < 0 {
		return nil, "", false
	}
	for _, v := range strings.Split(inner[:end], ",") {
		if v = strings.TrimSpace(v); !numberLiteral(v) {
			return nil, "", false
		}
		values = append(values, v)
	}
	return values, strings.TrimSpace(inner[end+1:]), true
}

// cutSupport reads an optional `(support K)` at the end of s, K a whole number; support is -1
// without one. ok is false when s ends with something else.
func cutSupport(s string) (rest string, support int, ok bool) {
	s = strings.TrimSpace(s)
	inner, found := strings.CutSuffix(s, ")")
	i := strings.LastIndex(inner, "(support ")
	if !found || i < 0 {
		return s, -1, true
	}
	k, err := strconv.Atoi(strings.TrimSpace(inner[i+len("(support "):]))
	if err != nil || k < 0 {
		return s, -1, false
	}
	return strings.TrimSpace(inner[:i]), k, true
}

// obsLine is `obs KEY = N`: a visible measurement.
type obsLine struct {
	keyed
	value string
}

func readObs(body string) (obsLine, bool) {
	k, ok := cutKeyed(body, "obs")
	if !ok {
		return obsLine{}, false
	}
	v, ok := cutEquals(k.rest)
	return obsLine{k, v}, ok && numberLiteral(v)
}

// countsLine is `counts KEY interval=J at_risk=N events=D`: the visible aggregate of one
// interval (the three fields in any order).
type countsLine struct {
	keyed
	interval, atRisk, events string
}

func readCounts(body string) (countsLine, bool) {
	k, ok := cutKeyed(body, "counts")
	if !ok {
		return countsLine{}, false
	}
	fs, ok := readFields(k.rest)
	if !ok || len(fs) != 3 {
		return countsLine{}, false
	}
	c := countsLine{keyed: k}
	var okI, okN, okD bool
	c.interval, okI = fieldValue(fs, "interval")
	c.atRisk, okN = fieldValue(fs, "at_risk")
	c.events, okD = fieldValue(fs, "events")
	if j, err := strconv.Atoi(c.interval); !okI || !okN || !okD || err != nil || j < 1 {
		return countsLine{}, false
	}
	return c, true
}

// readDet reads `det FIELD=N FIELD=N …`: one detection of an unnamed entity, its fields in
// order.
func readDet(body string) ([]field, bool) {
	rest, ok := cutWord(body, "det")
	if !ok {
		return nil, false
	}
	return readFields(rest)
}

// The three numeric requests.
const (
	reqEstimate = "estimate"
	reqCurve    = "estimate-curve"
	reqEntities = "estimate-entities"
)

// numericRequest is a line that asks the agent for numbers: `estimate KEY`, `estimate-curve KEY
// over J` or `estimate-entities FIELD`.
type numericRequest struct {
	kind  string // reqEstimate, reqCurve or reqEntities
	keyed        // estimate and estimate-curve
	over  int    // estimate-curve: J
	field string // estimate-entities
}

// readNumericRequest reads one of the three requests.
func readNumericRequest(body string) (numericRequest, bool) {
	if k, ok := cutKeyed(body, reqEstimate); ok && k.rest == "" {
		return numericRequest{kind: reqEstimate, keyed: k}, true
	}
	if k, ok := cutKeyed(body, reqCurve); ok {
		n, found := cutWord(k.rest, "over")
		j, err := strconv.Atoi(n)
		if found && err == nil && j >= 1 && numberLiteral(n) {
			return numericRequest{kind: reqCurve, keyed: k, over: j}, true
		}
		return numericRequest{}, false
	}
	if f, ok := cutWord(body, reqEntities); ok && f != "" && keyLen(f) == len(f) {
		return numericRequest{kind: reqEntities, field: f}, true
	}
	return numericRequest{}, false
}

// systemFor is the numeric memory system that serves a request.
func (q *numericRequest) systemFor() string {
	switch q.kind {
	case reqEstimate:
		return regressionSystem
	case reqCurve:
		return hazardSystem
	}
	return entitiesSystem
}

// forecastLine is the advice `forecast KEY = N`, optionally followed by `± S` and `(support K)`.
type forecastLine struct {
	keyed
	value string
}

func readForecast(body string) (forecastLine, bool) {
	k, ok := cutKeyed(body, "forecast")
	if !ok {
		return forecastLine{}, false
	}
	rest, _, ok := cutSupport(k.rest)
	v, found := cutEquals(rest)
	if !ok || !found {
		return forecastLine{}, false
	}
	value, spread, hasSpread := strings.Cut(v, "±")
	value, spread = strings.TrimSpace(value), strings.TrimSpace(spread)
	if !numberLiteral(value) || (hasSpread && !numberLiteral(spread)) {
		return forecastLine{}, false
	}
	return forecastLine{k, value}, true
}

// curveLine is the advice `curve KEY = [s1, …, sJ]`, optionally followed by `(support K)`.
type curveLine struct {
	keyed
	values []string
}

func readCurve(body string) (curveLine, bool) {
	k, ok := cutKeyed(body, "curve")
	if !ok {
		return curveLine{}, false
	}
	v, found := cutEquals(k.rest)
	values, rest, ok := readList(v)
	if rest, _, okSupport := cutSupport(rest); !found || !ok || !okSupport || rest != "" {
		return curveLine{}, false
	}
	return curveLine{k, values}, true
}

// entityLine is the advice `entity FIELD=N FIELD=N … (support K)`: a persistent entity, its
// identity field first; support is -1 when the line gives none.
type entityLine struct {
	fields  []field
	support int
}

func readEntity(body string) (entityLine, bool) {
	rest, ok := cutWord(body, "entity")
	if !ok {
		return entityLine{}, false
	}
	rest, support, ok := cutSupport(rest)
	fs, okFields := readFields(rest)
	return entityLine{fs, support}, ok && okFields
}

// outcomeLine is the outcome part of a numeric feedback line (`feedback: KEY = X, outcome KEY =
// T` or `feedback: KEY: no answer, outcome KEY = T`): T is one number, or a curve (list set).
type outcomeLine struct {
	keyed
	value string
	list  []string
}

// outcomeMarker comes before the outcome of a numeric feedback line.
const outcomeMarker = ", outcome "

func readOutcome(body string) (outcomeLine, bool) {
	if !strings.HasPrefix(body, "feedback:") {
		return outcomeLine{}, false
	}
	i := strings.LastIndex(body, outcomeMarker)
	if i < 0 {
		return outcomeLine{}, false
	}
	k, ok := cutKeyed("outcome "+body[i+len(outcomeMarker):], "outcome")
	v, found := cutEquals(k.rest)
	if !ok || !found {
		return outcomeLine{}, false
	}
	if numberLiteral(v) {
		return outcomeLine{keyed: k, value: v}, true
	}
	if list, rest, ok := readList(v); ok && rest == "" {
		return outcomeLine{keyed: k, list: list}, true
	}
	return outcomeLine{}, false
}

// readBind reads `#bind NAME=ROLE …`: the adapter's directive, pairs in order.
func readBind(body string) ([][2]string, bool) {
	rest, ok := cutWord(body, "#bind")
	if !ok {
		return nil, false
	}
	var pairs [][2]string
	for _, w := range strings.Fields(rest) {
		name, role, ok := strings.Cut(w, "=")
		if !ok || name == "" || role == "" {
			return nil, false
		}
		pairs = append(pairs, [2]string{name, role})
	}
	return pairs, len(pairs) > 0
}
