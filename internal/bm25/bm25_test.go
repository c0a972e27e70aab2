package bm25

import (
	"math"
	"slices"
	"testing"
)

func TestTop(t *testing.T) {
	docs := []string{"weekly sales report", "the cat sat", "Sales forecast, weekly sales", "nothing here"}
	if got := Top("weekly SALES", docs, 3); !slices.Equal(got, []int{2, 0}) {
		t.Fatalf("Top: %v", got)
	}
	if Top("", docs, 3) != nil || Top("cat", nil, 3) != nil || Top("cat", docs, 0) != nil {
		t.Fatal("an empty query, corpus or k returns documents")
	}
}

// Top and Coverage weigh words alike: a query that holds every word of a document scores it
// at its ceiling, and Top's score order is Coverage's.
func TestCoverageAgreesWithTop(t *testing.T) {
	docs := []string{"triage the support ticket", "weekly sales forecast", "sales report"}
	scores, ceilings := Coverage("please triage the support ticket now", docs)
	if scores[0] != ceilings[0] || scores[1] != 0 || scores[2] != 0 || ceilings[1] <= 0 {
		t.Fatalf("scores %v, ceilings %v", scores, ceilings)
	}
	scores, _ = Coverage("weekly sales", docs)
	top := Top("weekly sales", docs, 3)
	if !slices.Equal(top, []int{1, 2}) || !(scores[1] > scores[2]) {
		t.Fatalf("top %v, scores %v", top, scores)
	}
	c := newCorpus(3, 9)
	if want := math.Log(1 + 2.5/1.5); math.Abs(c.idf(1)-want) > 1e-12 {
		t.Fatalf("idf %v, want %v", c.idf(1), want)
	}
}
