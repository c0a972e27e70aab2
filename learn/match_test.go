package learn_test

import (
	"math"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
)

// Coverage scores as Top ranks, and a document whose every word the query holds is covered whole.
func TestCoverage(t *testing.T) {
	docs := []string{"Weekly sales report", "Weekly sales forecast", "Warehouse stock count", ""}
	query := "Weekly sales report\nRegion: north\ntags: revenue weekly"
	scores, ceilings := learn.Coverage(query, docs)
	if top := learn.NewBM25().Top(query, docs, 4); len(top) != 2 || top[0] != 0 || top[1] != 1 {
		t.Fatalf("Top = %v", top)
	}
	if scores[0] <= scores[1] || scores[2] != 0 || scores[3] != 0 || ceilings[3] != 0 {
		t.Fatalf("scores %v, ceilings %v", scores, ceilings)
	}
	if scores[0] != ceilings[0] {
		t.Fatalf("a scope covered whole scores %v of its ceiling %v", scores[0], ceilings[0])
	}
	if c := scores[1] / ceilings[1]; c <= 0 || c >= 1 {
		t.Fatalf("two of three words covered: %v", c)
	}
	// The ceiling is the score of a query holding the document's words.
	self, _ := learn.Coverage(docs[1], docs)
	if math.Abs(self[1]-ceilings[1]) > 1e-12 {
		t.Fatalf("ceiling %v, the document's own score %v", ceilings[1], self[1])
	}
}

// MatchScope names a scope only when the task's text holds all of it and no other scope is close.
func TestMatchScope(t *testing.T) {
	for _, tc := range []struct {
		name   string
		text   string
		scopes []string
		want   int // -1: no match
	}{
		{"OneCovered", "Weekly sales report\ntags: revenue weekly", []string{"Weekly sales report"}, 0},
		{"OneCoveredAmongOthers", "Weekly sales report\ntags: revenue weekly", []string{"Warehouse stock count", "Weekly sales forecast", "Weekly sales report", "Coin toss"}, 2},
		{"PartlyCovered", "Spectrum survey at the east site", []string{"Spectrum survey at the north site"}, -1},
		{"NearTwins", "Triage this support ticket: the printer is down", []string{"Triage the support ticket", "Triage this support ticket", "Support ticket triage"}, -1},
		{"NestedScopes", "Weekly sales report", []string{"Weekly sales", "Weekly sales report"}, -1},
		{"SameScopeTwice", "Weekly sales report", []string{"Weekly sales report", "weekly SALES report"}, -1},
		{"NothingShared", "Coin toss", []string{"Weekly sales report"}, -1},
		{"NoScopes", "Coin toss", nil, -1},
		{"EmptyText", "", []string{"Coin toss"}, -1},
		{"EmptyScope", "Coin toss", []string{""}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := learn.MatchScope(tc.text, tc.scopes)
			got := -1
			if ok {
				got = m.Index
			}
			if got != tc.want {
				t.Fatalf("match %d (%+v), want %d", got, m, tc.want)
			}
		})
	}
}

// The task's text is its user messages: not the framing, not an advisory.
func TestTaskText(t *testing.T) {
	task := &hippocam.Task{Messages: []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: "You write weekly sales reports."},
		{Role: hippocam.RoleUser, Kind: hippocam.KindAdvisory, Content: "Weekly sales report"},
		{Role: hippocam.RoleUser, Content: "Coin toss"},
		{Role: hippocam.RoleAssistant, Content: "heads"},
		{Role: hippocam.RoleUser, Content: "again"},
	}}
	if got := learn.TaskText(task); got != "Coin toss\nagain\n" {
		t.Fatalf("TaskText = %q", got)
	}
	if _, ok := learn.MatchScope(learn.TaskText(task), []string{"Weekly sales report"}); ok {
		t.Fatal("the framing matched a scope")
	}
}
