package stream

import (
	"slices"
	"strings"

	"github.com/hippocam/hippocam/sim"
)

// Score is how one attempt did: its reward (the mean of its items, 1 right and 0 wrong) and the
// feedback that ends it, one line per item (docs/sim.md part 2).
type Score struct {
	Reward   float64
	Feedback string
	// Scored is false for a task with no item: it earns no reward.
	Scored bool
}

// score reads the answers of an attempt (every answer of its session, in order: the latest line
// for a key counts) against the task's environment.
func score(t *Task, answers []string) Score {
	decided, asked := answerLines(answers)
	var lines []string
	right := 0
	for _, key := range order(t, keys(t.Env.Decide), "decide ") {
		d := t.Env.Decide[key]
		x, ok := decided[key]
		switch {
		case !ok:
			lines = append(lines, "feedback: "+key+": no answer, wrong")
		case !contains(d.Right, x):
			lines = append(lines, "feedback: "+key+" = "+x+" wrong")
		case x == d.Reference:
			right++
			lines = append(lines, "feedback: "+key+" = "+x+" right")
		default:
			right++
			lines = append(lines, "feedback: "+key+" = "+x+" right, reference "+key+" = "+d.Reference)
		}
	}
	for _, key := range order(t, keys(t.Env.Ask), "!ask ") {
		x, ok := asked[key]
		switch {
		case !ok:
			lines = append(lines, "feedback: "+key+": no answer, wrong")
		case x == strings.TrimSpace(t.Env.Ask[key]):
			right++
			lines = append(lines, "feedback: "+key+" := "+x+" right")
		default:
			lines = append(lines, "feedback: "+key+" := "+x+" wrong")
		}
	}
	n := t.Items()
	if n == 0 {
		return Score{}
	}
	return Score{Reward: float64(right) / float64(n), Feedback: strings.Join(lines, "\n"), Scored: true}
}

// answerLines reads the decisions (`KEY = X`) and answers to questions (`KEY := X`) of answers;
// a later line for a key replaces an earlier one.
func answerLines(answers []string) (decided, asked map[string]string) {
	decided, asked = map[string]string{}, map[string]string{}
	for _, a := range answers {
		for _, l := range strings.Split(a, "\n") {
			if key, value, _, ok := sim.Fact(l); ok {
				asked[key] = value
				continue
			}
			body := sim.Body(l)
			key, value, ok := strings.Cut(body, "=")
			key, value = strings.TrimSpace(key), strings.TrimSpace(value)
			if ok && key != "" && value != "" && !strings.ContainsAny(key, " \t") {
				decided[key] = value
			}
		}
	}
	return decided, asked
}

// order puts keys in the order the task's messages first name them after prefix (`decide KEY`,
// `!ask KEY`), keys the task does not name last, sorted.
func order(t *Task, ks []string, prefix string) []string {
	pos := map[string]int{}
	i := 0
	for _, m := range t.Messages {
		for _, l := range strings.Split(m.Content, "\n") {
			rest, ok := strings.CutPrefix(sim.Body(l), prefix)
			if !ok {
				continue
			}
			f := strings.Fields(rest)
			if len(f) == 0 {
				continue
			}
			key, _, _ := strings.Cut(f[0], ":")
			if _, seen := pos[key]; !seen && key != "" {
				pos[key] = i
				i++
			}
		}
	}
	slices.SortFunc(ks, func(a, b string) int {
		pa, oka := pos[a]
		pb, okb := pos[b]
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
