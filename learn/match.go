package learn

import (
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// Routing by the words of a scope (docs/learning.md, "In the proxy"). The router is a model call
// on the path of a task's first answer; when the task's own text already names one cluster, the
// call tells nothing new. MatchScope is that check: lexical, offline, no model.
//
// The rule, over the clusters' scopes as the documents and the task's user text as the query,
// with the BM25 weights the memory systems retrieve with (Coverage): a scope's coverage is the
// share of its weight (the idf of its words, saturated by their counts and normalised by its
// length) that occurs in the task's text; 1 when every word of it does. Coverage does not grow
// with the number of clusters, as a raw BM25 score does, so it can be held to fixed thresholds:
//
//   - Cover: the best-covered scope is covered whole (MatchCover): every word of it occurs in
//     the task's text.
//   - Margin: every other scope is covered at least MatchGap less. Words that many scopes share
//     weigh little (their idf is low), so "weekly sales forecast" is covered about half by a
//     weekly sales report's text (the words only it has decide), while two scopes that the text
//     covers alike ("Triage the support ticket", "Triage this support ticket") leave it open.
//
// Anything else is ambiguous and goes to the model router. The rule is strict on purpose: a
// wrong match sends the task to another kind of task's memory, which no later request corrects,
// while a missed match only costs the router's call, which the proxy bounds (--route-wait).
// Only the task's user messages count: a framing shared by every task of an agent (a long
// system prompt) would cover many short scopes at once.

// Thresholds of MatchScope.
const (
	// MatchCover is the coverage the best scope must reach.
	MatchCover = 1.0
	// MatchGap is how much less every other scope must be covered.
	MatchGap = 0.25
)

// coverSlack absorbs the rounding of the sums (Coverage sums a score and its ceiling in one
// order, so a scope covered whole has them equal; the slack is for MatchCover below 1).
const coverSlack = 1e-9

// Match is a scope that the task's text named: its index among the scopes, its BM25 score and
// coverage, and the runner-up's coverage.
type Match struct {
	Index       int
	Score       float64
	Cover, Next float64
}

// Reason says in a sentence why the task went to the match, for the task's record.
func (m Match) Reason() string {
	return fmt.Sprintf("lexical match: the task's text holds every word of the cluster's scope, and at most %.0f%% of any other scope's (BM25); no router call was made", 100*m.Next)
}

// MatchScope returns the scope among scopes that the task's text names by the rule above, and
// whether there is one. scopes may hold empty strings (never matched).
func MatchScope(text string, scopes []string) (Match, bool) {
	scores, ceilings := Coverage(text, scopes)
	best, next := -1, 0.0
	cover := func(i int) float64 {
		if ceilings[i] == 0 {
			return 0
		}
		return scores[i] / ceilings[i]
	}
	for i := range scopes {
		c := cover(i)
		switch {
		case best < 0:
			best = i
		case c > cover(best):
			next, best = max(next, cover(best)), i
		default:
			next = max(next, c)
		}
	}
	if best < 0 || scores[best] == 0 {
		return Match{}, false
	}
	m := Match{Index: best, Score: scores[best], Cover: cover(best), Next: next}
	if m.Cover < MatchCover-coverSlack || m.Cover-next < MatchGap-coverSlack {
		return m, false
	}
	return m, true
}

// TaskText is the text of a task that MatchScope reads: its user messages, in order, without
// the framing and without the advisory.
func TaskText(task *hippocam.Task) string {
	var b strings.Builder
	for _, m := range task.Messages {
		if m.Role != hippocam.RoleUser || m.Kind == hippocam.KindAdvisory {
			continue
		}
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	return b.String()
}
