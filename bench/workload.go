package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/hippocam/hippocam/sim"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/scenario"
)

// The workload generators (workload_agentic.go, workload_factstream.go, workload_interleaved.go)
// share the script builder below. A script appends client messages, counts their content with
// the tokenizer, and remembers every fact it wrote so that the questions at the end carry the
// right answer and the superseded ones. Filler (table rows, logs, code, prose) never holds a line
// that the simulated model would read as a directive or a fact (docs/sim.md, "Lines the simulation
// reads"): no line of it starts with '#', '!', a list marker or "detail", none contains ":=" or
// "[ref:".

// Workload names.
const (
	NameAgentic     = "agentic"
	NameFactStream  = "fact-stream"
	NameInterleaved = "interleaved"
)

// script builds one workload.
type script struct {
	tok    hippocam.Tokenizer
	rng    *rand.Rand
	lines  []scenario.Line
	tokens int
	facts  map[string]*fact
	order  []string // fact keys, first written first
	// frozen keys are never revised: they probe memory of old facts that stayed true.
	frozen map[string]bool
	qs     []Question
}

// fact is everything a script wrote about one key.
type fact struct {
	key    string
	values []string // in the order written; the last one is the right answer
	detail bool
	first  int // index of the line that first named the key
}

// newScript starts a script whose random choices follow seed; salt keeps the workloads of one
// seed apart.
func newScript(seed int64, salt uint64, tok hippocam.Tokenizer) *script {
	return &script{tok: tok, rng: rand.New(rand.NewPCG(uint64(seed), salt)), facts: map[string]*fact{}, frozen: map[string]bool{}}
}

// add appends one message.
func (s *script) add(role hippocam.Role, content string) {
	s.lines = append(s.lines, scenario.Line{Number: len(s.lines) + 1, Role: role, Content: content})
	s.tokens += s.tok.Count(content)
}

// user appends a user message made of the non-empty parts, one per line.
func (s *script) user(parts ...string) { s.add(hippocam.RoleUser, joinLines(parts)) }

// tool appends a tool result made of the non-empty parts, one per line.
func (s *script) tool(parts ...string) { s.add(hippocam.RoleTool, joinLines(parts)) }

func joinLines(parts []string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n")
}

// set records that the next message writes KEY := value and returns the line.
func (s *script) set(key, value string) string {
	s.record(key, value, false)
	return key + " := " + value
}

// setDetail records that the next message writes the detail KEY := value and returns the line.
func (s *script) setDetail(key, value string) string {
	s.record(key, value, true)
	return "detail " + key + " := " + value
}

func (s *script) record(key, value string, detail bool) {
	f := s.facts[key]
	if f == nil {
		f = &fact{key: key, first: len(s.lines)}
		s.facts[key] = f
		s.order = append(s.order, key)
	}
	f.values = append(f.values, value)
	f.detail = f.detail || detail
}

// fresh returns a value from gen that key has not had yet, so that a superseded value never
// equals the right one.
func (s *script) fresh(key string, gen func() string) string {
	var old []string
	if f := s.facts[key]; f != nil {
		old = f.values
	}
	for i := 0; ; i++ {
		v := gen()
		if i >= 20 {
			v = fmt.Sprintf("%s-%d", v, len(old)+1)
		}
		if !slices.Contains(old, v) {
			return v
		}
	}
}

// ask appends the user message "!ask KEY" and its question.
func (s *script) ask(key string) {
	s.qs = append(s.qs, s.question(key))
	s.user("!ask " + key)
}

// question is what a script knows about key so far, as a Question.
func (s *script) question(key string) Question {
	f := s.facts[key]
	if f == nil {
		return Question{Key: key, Want: key + " := unknown"}
	}
	q := Question{Key: key, Want: key + " := " + f.values[len(f.values)-1], Detail: f.detail}
	for _, v := range f.values[:len(f.values)-1] {
		if a := key + " := " + v; a != q.Want && !slices.Contains(q.Stale, a) {
			q.Stale = append(q.Stale, a)
		}
	}
	return q
}

// unknownKey returns a key shaped like the workload's own that nothing has named.
func (s *script) unknownKey(base string) string {
	for i := 0; ; i++ {
		k := base
		if i > 0 {
			k = fmt.Sprintf("%s%d", base, i+1)
		}
		if s.facts[k] == nil {
			return k
		}
	}
}

// keys returns the fact keys that keep, first written first.
func (s *script) keys(keep func(f *fact) bool) []string {
	var out []string
	for _, k := range s.order {
		if keep(s.facts[k]) {
			out = append(out, k)
		}
	}
	return out
}

// revisable returns the keys of facts with the prefix that may be revised: not details, not
// frozen.
func (s *script) revisable(prefix string) []string {
	return s.keys(func(f *fact) bool { return !f.detail && !s.frozen[f.key] && strings.HasPrefix(f.key, prefix) })
}

// pickKeys returns up to n of keys chosen at random, skipping those in taken, and adds them to
// taken.
func (s *script) pickKeys(keys []string, n int, taken map[string]bool) []string {
	var free []string
	for _, k := range keys {
		if !taken[k] {
			free = append(free, k)
		}
	}
	s.rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	if len(free) > n {
		free = free[:n]
	}
	for _, k := range free {
		taken[k] = true
	}
	return free
}

// askAll asks keys in a random order.
func (s *script) askAll(keys []string) {
	s.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for _, k := range keys {
		s.ask(k)
	}
}

// workload returns what the script built.
func (s *script) workload(name string, target int) *Workload {
	return &Workload{Name: name, Variant: variantName(target), LengthTokens: s.tokens, Lines: s.lines, Questions: s.qs}
}

// variantName names a size: "16k" for 16,000 tokens.
func variantName(tokens int) string {
	if tokens >= 1000 {
		return fmt.Sprintf("%dk", (tokens+500)/1000)
	}
	return fmt.Sprintf("%d", tokens)
}

// budgetFor is the size of the next block when about tokens are wanted and the workload should
// stop near target: never more than what is left, never less than a floor that keeps the block
// meaningful.
func (s *script) budgetFor(tokens, target int) int {
	return max(60, min(tokens, target-s.tokens))
}

// --- filler ---

// fill calls gen until its lines hold about tokens tokens (at least one line).
func (s *script) fill(tokens int, gen func(i int) string) []string {
	var out []string
	for n := 0; n < tokens || len(out) == 0; {
		l := gen(len(out))
		n += s.tok.Count(l) + 1
		out = append(out, l)
	}
	return out
}

// rows is tabular filler in the style of scenarios/gen.py.
func (s *script) rows(name string, tokens int) []string {
	return s.fill(tokens, func(i int) string {
		return fmt.Sprintf("row %04d | %s | 2026-%02d-%02d | item-%d | qty %d | %.2f", i, name, s.rng.IntN(12)+1, s.rng.IntN(28)+1, s.rng.IntN(9000)+1000, s.rng.IntN(9)+1, float64(s.rng.IntN(99900)+100)/100)
	})
}

// logs is log-file filler for service svc.
func (s *script) logs(svc string, tokens int) []string {
	levels := []string{"INFO", "INFO", "INFO", "WARN", "DEBUG"}
	paths := []string{"/api/items", "/api/orders", "/healthz", "/api/users", "/metrics"}
	return s.fill(tokens, func(i int) string {
		return fmt.Sprintf("2026-04-%02d %02d:%02d:%02d %s %s GET %s/%d status 200 in %d ms", s.rng.IntN(28)+1, s.rng.IntN(24), s.rng.IntN(60), s.rng.IntN(60), pick(s.rng, levels), svc, pick(s.rng, paths), s.rng.IntN(9000), s.rng.IntN(400)+1)
	})
}

// code is source-file filler in the style of scenarios/gen.py (no ":=" in it).
func (s *script) code(name string, tokens int) []string {
	words := []string{"parse", "render", "index", "merge", "flush", "retry", "decode", "schedule", "lookup", "commit"}
	return s.fill(tokens, func(i int) string {
		if i == 0 {
			return "// file " + name
		}
		return fmt.Sprintf("func %s%d(x int) int { return %sHelper(x + %d) }", pick(s.rng, words), i, pick(s.rng, words), s.rng.IntN(99)+1)
	})
}

// prose is filler text, one sentence per line.
func (s *script) prose(tokens int) []string {
	return s.fill(tokens, func(int) string { return s.sentence() })
}

var (
	proseOpen  = []string{"The", "Our", "Each", "Every", "One", "That", "This"}
	proseAdj   = []string{"quiet", "early", "careful", "second", "small", "busy", "late", "usual", "northern", "shared"}
	proseNoun  = []string{"team", "meeting", "report", "garden", "market", "budget", "station", "library", "harbour", "schedule", "kitchen", "workshop", "committee", "delivery"}
	proseVerb  = []string{"reviewed", "moved", "discussed", "opened", "finished", "postponed", "cleaned", "checked", "announced", "welcomed"}
	prosePrep  = []string{"after", "before", "near", "behind", "during", "beside"}
	proseClose = []string{"as planned", "without much fuss", "on a rainy afternoon", "for the third time", "while everyone waited", "in good spirits"}
)

// sentence is one line of prose.
func (s *script) sentence() string {
	r := s.rng
	return fmt.Sprintf("%s %s %s %s the %s %s the %s %s.", pick(r, proseOpen), pick(r, proseAdj), pick(r, proseNoun), pick(r, proseVerb), pick(r, proseNoun), pick(r, prosePrep), pick(r, proseNoun), pick(r, proseClose))
}

// mix puts the fact lines among the filler lines at random places, keeping each list's order.
func (s *script) mix(facts, filler []string) []string {
	out := make([]string, 0, len(facts)+len(filler))
	fi, li := 0, 0
	for fi < len(facts) || li < len(filler) {
		left := len(facts) - fi + len(filler) - li
		if fi < len(facts) && s.rng.IntN(left) < len(facts)-fi {
			out = append(out, facts[fi])
			fi++
		} else {
			out = append(out, filler[li])
			li++
		}
	}
	return out
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// --- reading lines as the simulated model does (sim.Fact, sim.Ask, sim.Body) ---

// factLine reports the fact or detail a line states, as the simulated model reads it.
func factLine(s string) (key, value string, detail, ok bool) { return sim.Fact(s) }

// simBody is a line without its surrounding spaces, list marker and evaluation tag.
func simBody(s string) string { return sim.Body(s) }

// askLine reports the key of an `!ask KEY` line.
func askLine(s string) (string, bool) { return sim.Ask(s) }

// asks reports whether content holds an `!ask` line.
func asks(content string) bool {
	for _, l := range strings.Split(content, "\n") {
		if _, ok := askLine(l); ok {
			return true
		}
	}
	return false
}
