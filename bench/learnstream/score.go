package learnstream

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam/sim"
)

// Score is how one attempt did: its reward (the mean of its items) and the feedback that ends it,
// one line per item (docs/sim.md parts 2 and 3).
type Score struct {
	Reward   float64
	Feedback string
	// Scored is false for a task with no item: it earns no reward.
	Scored bool
}

// score reads the answers of an attempt (every answer of its session, in order: the latest line
// for a key counts) against the task's environment. A decision or a question scores 1 when right
// and 0 when wrong; an estimate max(0, 1 − |x − truth| / tol); a curve max(0, 1 − mean_j |x_j −
// truth_j| / tol); the entities F1 × accuracy (scoreEntities). An item without an answer scores
// 0.
func score(t *Task, answers []string) Score {
	a := readAnswers(answers)
	var lines []string
	total := 0.0
	add := func(reward float64, line string) {
		total += reward
		lines = append(lines, line)
	}
	for _, key := range order(t, keys(t.Env.Decide), "decide ") {
		d := t.Env.Decide[key]
		x, ok := a.assigned[canonical(key)]
		switch {
		case !ok:
			add(0, "feedback: "+key+": no answer, wrong")
		case !slices.Contains(d.Right, x):
			add(0, "feedback: "+key+" = "+x+" wrong")
		case x == d.Reference:
			add(1, "feedback: "+key+" = "+x+" right")
		default:
			add(1, "feedback: "+key+" = "+x+" right, reference "+key+" = "+d.Reference)
		}
	}
	for _, key := range order(t, keys(t.Env.Ask), "!ask ") {
		x, ok := a.asked[key]
		switch {
		case !ok:
			add(0, "feedback: "+key+": no answer, wrong")
		case x == strings.TrimSpace(t.Env.Ask[key]):
			add(1, "feedback: "+key+" := "+x+" right")
		default:
			add(0, "feedback: "+key+" := "+x+" wrong")
		}
	}
	for _, key := range numericOrder(t, keys(t.Env.Estimate), "estimate ") {
		add(scoreEstimate(key, t.Env.Estimate[key], a))
	}
	for _, key := range numericOrder(t, keys(t.Env.Curve), "estimate-curve ") {
		add(scoreCurve(key, t.Env.Curve[key], a))
	}
	if e := t.Env.Entities; e != nil {
		add(scoreEntities(e, a.entities))
	}
	n := t.Items()
	if n == 0 {
		return Score{}
	}
	return Score{Reward: total / float64(n), Feedback: strings.Join(lines, "\n"), Scored: true}
}

// answered is what an attempt's answers say: per key (canonical, sim.NumericKey.String) the value
// of its latest `KEY = X` line (decisions, estimates, curves), per question the latest `KEY :=
// X`, and the `entity …` lines of the latest answer that has any.
type answered struct {
	assigned, asked map[string]string
	entities        []string
}

// readAnswers reads the answers' lines. A key is read as sim.CutNumericKey reads it, so the '='
// inside a key's brackets is not the sign of its line.
func readAnswers(answers []string) answered {
	a := answered{assigned: map[string]string{}, asked: map[string]string{}}
	for _, text := range answers {
		var entities []string
		for _, l := range strings.Split(text, "\n") {
			if key, value, _, ok := sim.Fact(l); ok {
				a.asked[key] = value
				continue
			}
			body := sim.Body(l)
			if rest, ok := strings.CutPrefix(body, "entity "); ok {
				entities = append(entities, rest)
				continue
			}
			k, rest, ok := sim.CutNumericKey(body)
			value, isLine := strings.CutPrefix(strings.TrimSpace(rest), "=")
			if value = strings.TrimSpace(value); ok && isLine && value != "" {
				a.assigned[k.String()] = value
			}
		}
		if len(entities) > 0 {
			a.entities = entities
		}
	}
	return a
}

// scoreEstimate scores one estimate: `feedback: KEY = X, outcome KEY = T`, T the truth.
func scoreEstimate(key string, e Estimate, a answered) (float64, string) {
	outcome := ", outcome " + key + " = " + number(e.Truth)
	x, ok := a.assigned[canonical(key)]
	v, isNumber := finite(x)
	if !ok || !isNumber {
		return 0, "feedback: " + key + ": no answer" + outcome
	}
	return max(0, 1-math.Abs(v-e.Truth)/e.Tol), "feedback: " + key + " = " + x + outcome
}

// scoreCurve scores one curve: `feedback: KEY = [x1, …], outcome KEY = [r1, …]`, r the realized
// curve of a larger sample (never the truth). An answer with another number of values than the
// truth scores 0, and its feedback line says so.
func scoreCurve(key string, c Curve, a answered) (float64, string) {
	outcome := ", outcome " + key + " = " + list(c.Realized)
	literals, xs, ok := curveAnswer(a.assigned[canonical(key)])
	if !ok {
		return 0, "feedback: " + key + ": no answer" + outcome
	}
	answer := "[" + strings.Join(literals, ", ") + "]"
	if len(xs) != len(c.Truth) {
		return 0, fmt.Sprintf("feedback: %s = %s: %d values, not %d%s", key, answer, len(xs), len(c.Truth), outcome)
	}
	dev := 0.0
	for j, x := range xs {
		dev += math.Abs(x - c.Truth[j])
	}
	return max(0, 1-dev/float64(len(xs))/c.Tol), "feedback: " + key + " = " + answer + outcome
}

// curveAnswer reads `[x1, x2, …]`: one or more finite numbers.
func curveAnswer(s string) (literals []string, xs []float64, ok bool) {
	inner, ok := strings.CutPrefix(s, "[")
	if inner, ok = strings.CutSuffix(inner, "]"); !ok {
		return nil, nil, false
	}
	for _, p := range strings.Split(inner, ",") {
		p = strings.TrimSpace(p)
		x, ok := finite(p)
		if !ok {
			return nil, nil, false
		}
		literals, xs = append(literals, p), append(xs, x)
	}
	return literals, xs, true
}

// scoreEntities scores the answered entities (the fields of `entity ID=N FIELD=N` lines; a line
// without both numbers is not an answer) against the true ones: each answered entity is matched
// greedily, closest pair in identity first, to a true one within TolIdentity; F1 = 2M / (A + T)
// over M matches of A answered and T true entities; accuracy is the mean over matches of max(0, 1
// − |x − truth| / Tol), 0 with no match; the reward is F1 × accuracy. Feedback: `feedback: M of
// A answered entities matched`.
func scoreEntities(e *Entities, lines []string) (float64, string) {
	var ans [][2]float64
	for _, l := range lines {
		if p, ok := entityAnswer(l, e.Identity, e.Field); ok {
			ans = append(ans, p)
		}
	}
	if len(ans) == 0 {
		return 0, "feedback: entities: no answer"
	}
	type pair struct {
		a, t int
		d    float64
	}
	var pairs []pair
	for i, p := range ans {
		for j, q := range e.Truth {
			if d := math.Abs(p[0] - q[0]); d <= e.TolIdentity {
				pairs = append(pairs, pair{i, j, d})
			}
		}
	}
	slices.SortFunc(pairs, func(x, y pair) int {
		return cmp.Or(cmp.Compare(x.d, y.d), cmp.Compare(x.a, y.a), cmp.Compare(x.t, y.t))
	})
	usedA, usedT := make([]bool, len(ans)), make([]bool, len(e.Truth))
	matched, acc := 0, 0.0
	for _, p := range pairs {
		if usedA[p.a] || usedT[p.t] {
			continue
		}
		usedA[p.a], usedT[p.t] = true, true
		matched++
		acc += max(0, 1-math.Abs(ans[p.a][1]-e.Truth[p.t][1])/e.Tol)
	}
	line := fmt.Sprintf("feedback: %d of %d answered entities matched", matched, len(ans))
	if matched == 0 {
		return 0, line
	}
	f1 := 2 * float64(matched) / float64(len(ans)+len(e.Truth))
	return f1 * acc / float64(matched), line
}

// entityAnswer reads the identity and the field of one entity line (what follows `entity `).
func entityAnswer(s, identity, field string) ([2]float64, bool) {
	var p [2]float64
	var hasID, hasField bool
	for _, w := range strings.Fields(s) {
		name, literal, _ := strings.Cut(w, "=")
		x, ok := finite(literal)
		switch {
		case !ok:
		case name == identity:
			p[0], hasID = x, true
		case name == field:
			p[1], hasField = x, true
		}
	}
	return p, hasID && hasField
}

// finite reads s as a finite number.
func finite(s string) (float64, bool) {
	x, err := strconv.ParseFloat(s, 64)
	return x, err == nil && !math.IsNaN(x) && !math.IsInf(x, 0)
}

// number writes x plainly, with as few digits as tell it apart.
func number(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// list writes a curve as `[a, b, …]`.
func list(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = number(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// order puts keys in the order the task's messages first name them after prefix (`decide KEY`,
// `!ask KEY`), keys the task does not name last, sorted.
func order(t *Task, ks []string, prefix string) []string {
	return byPosition(t, ks, func(body string) string {
		rest, ok := strings.CutPrefix(body, prefix)
		if !ok {
			return ""
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return ""
		}
		key, _, _ := strings.Cut(f[0], ":")
		return key
	}, func(k string) string { return k })
}

// numericOrder is order for numeric keys (`estimate KEY`, `estimate-curve KEY over J`), compared
// in their canonical form.
func numericOrder(t *Task, ks []string, prefix string) []string {
	return byPosition(t, ks, func(body string) string {
		rest, ok := strings.CutPrefix(body, prefix)
		if !ok {
			return ""
		}
		k, _, ok := sim.CutNumericKey(strings.TrimSpace(rest))
		if !ok {
			return ""
		}
		return k.String()
	}, canonical)
}

// byPosition sorts ks by the first line of the task's messages that names each (named reads a
// line's body and returns the key it names, or ""; form turns a key into what named returns);
// keys no line names come last, sorted.
func byPosition(t *Task, ks []string, named func(string) string, form func(string) string) []string {
	pos := map[string]int{}
	for _, m := range t.Messages {
		for _, l := range strings.Split(m.Content, "\n") {
			if key := named(sim.Body(l)); key != "" {
				if _, seen := pos[key]; !seen {
					pos[key] = len(pos)
				}
			}
		}
	}
	slices.SortFunc(ks, func(a, b string) int {
		pa, oka := pos[form(a)]
		pb, okb := pos[form(b)]
		switch {
		case oka && okb:
			return pa - pb
		case oka:
			return -1
		case okb:
			return 1
		}
		return strings.Compare(a, b)
	})
	return ks
}

func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Grade scores an attempt's answers against the task's environment and writes the feedback that
// ends it, as the runner does: for drivers that run tasks elsewhere (through the proxy, over
// HTTP).
func Grade(t *Task, answers []string) Score { return score(t, answers) }
