package learn_test

import (
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/learn"
	_ "modernc.org/sqlite"
)

func TestBM25Ranking(t *testing.T) {
	bm := learn.NewBM25()
	tests := []struct {
		name  string
		query string
		docs  []string
		k     int
		want  []int
	}{
		{name: "RareWordFirst", query: "shipped weekly", docs: []string{"weekly report", "shipped orders", "weekly summary", "weekly plan"}, k: 4, want: []int{1, 0, 2, 3}},
		{name: "ShorterFirst", query: "refund", docs: []string{"refund for the order placed in march by the customer", "refund now"}, k: 2, want: []int{1, 0}},
		{name: "MoreOccurrencesFirst", query: "tax", docs: []string{"tax form one", "tax tax form"}, k: 2, want: []int{1, 0}},
		{name: "TiesByIndex", query: "audit", docs: []string{"other", "audit ledger", "ledger audit", "audit ledger"}, k: 3, want: []int{1, 2, 3}},
		{name: "NoSharedWordLeftOut", query: "budget", docs: []string{"sales", "budget review", "travel"}, k: 3, want: []int{1}},
		{name: "K", query: "a b", docs: []string{"a", "b", "a b"}, k: 1, want: []int{2}},
		{name: "ZeroK", query: "a", docs: []string{"a"}, k: 0, want: nil},
		{name: "EmptyQuery", query: " ,; ", docs: []string{"a"}, k: 3, want: nil},
		{name: "NoDocs", query: "a", docs: nil, k: 3, want: nil},
		{name: "CaseInsensitive", query: "SALES Éclair", docs: []string{"x", "sales", "éCLAIR sales"}, k: 3, want: []int{2, 1}},
		{name: "UnderscoreJoins", query: "status", docs: []string{"status_filter = shipped", "status: open"}, k: 2, want: []int{1}},
		{name: "PunctuationSplits", query: "v2", docs: []string{"use v2.1 now", "v21"}, k: 2, want: []int{0}},
		{name: "DuplicateQueryWordsOnce", query: "cat cat cat dog", docs: []string{"cat x", "dog dog"}, k: 2, want: []int{1, 0}},
		{name: "WordInEveryDocStillCounts", query: "the", docs: []string{"the", "the the", "a"}, k: 3, want: []int{1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bm.Top(tt.query, tt.docs, tt.k)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Top = %v, want %v", got, tt.want)
			}
		})
	}
}

// referenceBM25 is the formula written out plainly, over pre-split words, to check the indexed
// implementation against.
func referenceBM25(query []string, docs [][]string, k int) []int {
	n := float64(len(docs))
	total := 0
	for _, d := range docs {
		total += len(d)
	}
	avg := math.Max(float64(total)/n, 1)
	seen := map[string]bool{}
	var terms []string
	for _, w := range query {
		if !seen[w] {
			seen[w] = true
			terms = append(terms, w)
		}
	}
	scores := make([]float64, len(docs))
	for _, term := range terms {
		df := 0
		for _, d := range docs {
			for _, w := range d {
				if w == term {
					df++
					break
				}
			}
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		for i, d := range docs {
			f := 0.0
			for _, w := range d {
				if w == term {
					f++
				}
			}
			scores[i] += idf * f * 2.2 / (f + 1.2*(0.25+0.75*float64(len(d))/avg))
		}
	}
	var idx []int
	for i, s := range scores {
		if s > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	if len(idx) > k {
		idx = idx[:k]
	}
	return idx
}

func TestBM25MatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu")
	words := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = vocab[rng.IntN(len(vocab))]
		}
		return out
	}
	bm := learn.NewBM25()
	for round := 0; round < 300; round++ {
		var docs []string
		var split [][]string
		for d := rng.IntN(12); d >= 0; d-- {
			w := words(1 + rng.IntN(15))
			split = append(split, w)
			docs = append(docs, strings.Join(w, " "))
		}
		q := words(1 + rng.IntN(5))
		k := 1 + rng.IntN(6)
		got := bm.Top(strings.Join(q, " "), docs, k)
		want := referenceBM25(q, split, k)
		if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("round %d: query %q docs %q k %d: Top = %v, reference %v", round, q, docs, k, got, want)
		}
	}
}

// corpus is a retrieval workload of the size the memory systems see: n texts of about 40
// words, from a vocabulary of 600.
func corpus(n int) (string, []string) {
	rng := rand.New(rand.NewPCG(3, 4))
	text := func(words int) string {
		var b strings.Builder
		for i := 0; i < words; i++ {
			fmt.Fprintf(&b, "w%d_x ", rng.IntN(600))
		}
		return b.String()
	}
	docs := make([]string, n)
	for i := range docs {
		docs[i] = text(40)
	}
	return text(30), docs
}

// fts5Top ranks docs with SQLite's FTS5 in a fresh in-memory database: what a retriever built
// on the driver would do per call.
func fts5Top(db *sql.DB, query string, docs []string, k int) ([]int, error) {
	if _, err := db.Exec(`DROP TABLE IF EXISTS d; CREATE VIRTUAL TABLE d USING fts5(body, tokenize = "unicode61 tokenchars '_'")`); err != nil {
		return nil, err
	}
	tx, err := db.Begin()
	if err != nil {
		return nil, err
	}
	for i, doc := range docs {
		if _, err := tx.Exec(`INSERT INTO d(rowid, body) VALUES (?, ?)`, i, doc); err != nil {
			tx.Rollback()
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	var terms []string
	for _, w := range strings.Fields(query) {
		terms = append(terms, `"`+w+`"`)
	}
	rows, err := db.Query(`SELECT rowid FROM d WHERE d MATCH ? ORDER BY bm25(d), rowid LIMIT ?`, strings.Join(terms, " OR "), k)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// BenchmarkTop compares the hand-written BM25 with FTS5 on the same workload (the package doc
// quotes the figures).
func BenchmarkTop(b *testing.B) {
	query, docs := corpus(200)
	b.Run("BM25", func(b *testing.B) {
		bm := learn.NewBM25()
		b.ReportAllocs()
		for b.Loop() {
			if len(bm.Top(query, docs, 5)) != 5 {
				b.Fatal("fewer than 5 hits")
			}
		}
	})
	b.Run("FTS5", func(b *testing.B) {
		db, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		b.ReportAllocs()
		for b.Loop() {
			got, err := fts5Top(db, query, docs, 5)
			if err != nil || len(got) != 5 {
				b.Fatalf("%v hits, %v", got, err)
			}
		}
	})
}
