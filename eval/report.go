package eval

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/svgplot"
)

// Tally counts the verdicts of one condition on one category (or on all of them).
type Tally struct {
	Questions int `json:"questions"`
	Correct   int `json:"correct"`
	Partial   int `json:"partially_correct"`
	Wrong     int `json:"wrong"`
	Unjudged  int `json:"unjudged"`
}

// Score is the share of the questions answered right, a partly right answer counting half;
// an unjudged question counts as not right. NaN without questions.
func (t Tally) Score() float64 {
	if t.Questions == 0 {
		return math.NaN()
	}
	return (float64(t.Correct) + 0.5*float64(t.Partial)) / float64(t.Questions)
}

func (t *Tally) add(verdict string) {
	t.Questions++
	switch verdict {
	case Correct:
		t.Correct++
	case Partial:
		t.Partial++
	case Wrong:
		t.Wrong++
	default:
		t.Unjudged++
	}
}

// Totals is what one condition consumed over the run.
type Totals struct {
	// Answer is the answering calls the rows record; Judge the judge's calls.
	Answer, Judge hippocam.RoleUsage
	// All is every call the condition made to the endpoint, the judge's aside: the answers,
	// plus for hippocam the ingest and Hippocam's own calls as the proxy reports them.
	All hippocam.RoleUsage
	// Priced says whether costs are known.
	Priced bool
}

// Summary is a run's results by condition and category.
type Summary struct {
	Conditions []string
	Categories []string
	// Tallies[condition][category]; the category "all" sums the others.
	Tallies map[string]map[string]*Tally
	Totals  map[string]*Totals
}

// AllCategories is the Summary category that sums the others.
const AllCategories = "all"

// Summarize tallies the rows of res.
func Summarize(res *Result) *Summary {
	s := &Summary{Tallies: map[string]map[string]*Tally{}, Totals: map[string]*Totals{}}
	cats := map[string]bool{}
	for _, r := range res.Rows {
		if s.Tallies[r.Condition] == nil {
			s.Conditions = append(s.Conditions, r.Condition)
			s.Tallies[r.Condition] = map[string]*Tally{AllCategories: {}}
			s.Totals[r.Condition] = &Totals{Priced: res.priced}
		}
		tc := s.Tallies[r.Condition]
		if tc[r.Category] == nil {
			tc[r.Category] = &Tally{}
		}
		tc[r.Category].add(r.Verdict)
		tc[AllCategories].add(r.Verdict)
		cats[r.Category] = true
		t := s.Totals[r.Condition]
		a := hippocam.CallUsage{Input: r.InputTokens, CachedInput: r.CachedInputTokens, Output: r.OutputTokens}
		addRowUsage(&t.Answer, a, r.CostUSD)
		addRowUsage(&t.Judge, hippocam.CallUsage{Input: r.JudgeInputTokens, Output: r.JudgeOutputTokens}, r.JudgeCostUSD)
	}
	for c, t := range s.Totals {
		u := res.Usage[c]
		switch {
		case len(u.Proxy) > 0:
			t.All = u.Proxy.Total()
			t.All.CostUSD = 0
			if res.priced {
				for _, x := range u.Proxy {
					t.All.CostUSD += res.prices.Cost(hippocam.CallUsage{Input: int(x.Input), CachedInput: int(x.CachedInput), Output: int(x.Output)})
				}
			}
		default:
			t.All = t.Answer
			t.All.Calls += u.Ingest.Calls
			t.All.Input += u.Ingest.Input
			t.All.CachedInput += u.Ingest.CachedInput
			t.All.Output += u.Ingest.Output
			t.All.CostUSD += u.Ingest.CostUSD
		}
	}
	for c := range cats {
		s.Categories = append(s.Categories, c)
	}
	sort.Slice(s.Categories, func(i, j int) bool { return categoryLess(s.Categories[i], s.Categories[j]) })
	return s
}

// categoryLess orders numbers by value before words, words alphabetically.
func categoryLess(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	switch {
	case errA == nil && errB == nil:
		return x < y
	case errA == nil:
		return true
	case errB == nil:
		return false
	}
	return a < b
}

func addRowUsage(r *hippocam.RoleUsage, u hippocam.CallUsage, c *float64) {
	r.Calls++
	r.Input += int64(u.Input)
	r.CachedInput += int64(u.CachedInput)
	r.Output += int64(u.Output)
	if c != nil {
		r.CostUSD += *c
	}
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// Markdown writes the summary as two tables: the score per category and condition, then per
// condition its verdicts and what it consumed.
func (s *Summary) Markdown(res *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s: %s, judged by %s, W = %d tokens", res.Format, res.Model, res.Judge, res.Window)
	if res.Batch > 1 {
		fmt.Fprintf(&b, ", %d questions per request", res.Batch)
	}
	b.WriteString("\n\nScore: correct answers plus half the partially correct ones, over the questions asked.\n\n")
	b.WriteString("| category | questions |")
	for _, c := range s.Conditions {
		fmt.Fprintf(&b, " %s |", c)
	}
	b.WriteString("\n| --- | ---: |" + strings.Repeat(" ---: |", len(s.Conditions)) + "\n")
	for _, cat := range append(append([]string(nil), s.Categories...), AllCategories) {
		n := 0
		for _, c := range s.Conditions {
			if t := s.Tallies[c][cat]; t != nil {
				n = max(n, t.Questions)
			}
		}
		name := cat
		if cat == AllCategories {
			name = "**all**"
		}
		fmt.Fprintf(&b, "| %s | %d |", name, n)
		for _, c := range s.Conditions {
			v := math.NaN()
			if t := s.Tallies[c][cat]; t != nil {
				v = t.Score()
			}
			fmt.Fprintf(&b, " %s |", pct(v))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| condition | correct | partial | wrong | unjudged | answer input tokens | all input tokens | all output tokens | cost (USD) | judge cost (USD) |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, c := range s.Conditions {
		t, tot := s.Tallies[c][AllCategories], s.Totals[c]
		cost, judge := "n/a", "n/a"
		if tot.Priced {
			cost, judge = fmt.Sprintf("%.4f", tot.All.CostUSD), fmt.Sprintf("%.4f", tot.Judge.CostUSD)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %s | %s |\n", c, t.Correct, t.Partial, t.Wrong, t.Unjudged,
			tot.Answer.Input, tot.All.Input, tot.All.Output, cost, judge)
	}
	var notes []string
	if u, ok := res.Usage[CondHippocam]; ok {
		if len(u.Proxy) > 0 {
			notes = append(notes, "hippocam's all tokens are every call its proxy sessions made: the ingest of the sessions, the answers and Hippocam's own calls")
		} else {
			notes = append(notes, "hippocam's all tokens are the ingest and the answers as the client saw them; Hippocam's own calls are not included")
		}
	}
	for _, reason := range sortedKeys(res.Excluded) {
		notes = append(notes, fmt.Sprintf("questions left out: %d, %s", res.Excluded[reason], reason))
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "\n- %s", n)
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Plot draws the score of every condition per category, and over all of them.
func (s *Summary) Plot(res *Result) []byte {
	groups := append(append([]string(nil), s.Categories...), AllCategories)
	values := make([][]float64, len(groups))
	for i, cat := range groups {
		for _, c := range s.Conditions {
			v := math.NaN()
			if t := s.Tallies[c][cat]; t != nil {
				v = t.Score()
			}
			values[i] = append(values[i], v)
		}
	}
	title := fmt.Sprintf("%s: score by category (%s, W = %d)", res.Format, res.Model, res.Window)
	return svgplot.BarPlot(title, "category", "score (correct + ½ partial)", groups, s.Conditions, values)
}
