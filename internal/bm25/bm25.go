// Package bm25 ranks short texts held in memory against a query with Okapi BM25 (k1 = 1.2,
// b = 0.75) over words: lower-cased runs of letters, digits and '_'. Each distinct query word
// counts once. A word's idf is ln(1 + (N − n + 0.5) / (n + 0.5)) for a word in n of the N
// documents, as Lucene's, so that a word found in most documents still counts a little instead
// of counting against them. Top ranks (the memory systems' retrieval, learn.NewBM25) and
// Coverage measures how much of each document a query covers (the proxy's lexical routing,
// learn.MatchScope); both weigh words the same way. Everything is deterministic and safe for
// concurrent use.
//
// Why hand-written BM25 and not SQLite's FTS5, which the modernc driver already carries: the
// callers rank a few hundred short texts per call, held in memory, never an index that outlives
// the call. FTS5 would need a database, a virtual table and one insert per text on every call,
// and it would tie the learning layer (and the simulated model, which reads its contracts) to
// the SQL driver. Measured with BenchmarkTop (learn/retrieve_test.go) on 200 texts of 40 words
// and a query of 30 words, on the project's two-core machine: this code takes 0.37–0.53 ms and
// 50 allocations per call; FTS5 in an in-memory database (table made, texts inserted in one
// transaction, ranked by bm25()) takes 2.6–3.5 ms and 1,675 allocations. A Go search library
// (bleve) would bring a persistent-index engine and dozens of modules for the same hundred
// lines.
package bm25

import (
	"math"
	"slices"
	"unicode"
	"unicode/utf8"
)

// BM25 parameters: term-frequency saturation and length normalisation, the usual values.
const (
	k1 = 1.2
	b  = 0.75
)

// Top returns the indices in docs of the at most k documents that score highest against query,
// best first; equal scores keep the order of docs. A document that shares no word with the
// query is never returned.
func Top(query string, docs []string, k int) []int {
	if k <= 0 || len(docs) == 0 {
		return nil
	}
	terms := map[string]int{} // query word -> its index
	var buf []byte
	eachWord(query, &buf, func(w []byte) {
		if _, ok := terms[string(w)]; !ok {
			terms[string(w)] = len(terms)
		}
	})
	if len(terms) == 0 {
		return nil
	}
	q := len(terms)
	tf := make([]int32, len(docs)*q) // tf[d*q+t]: how often query word t occurs in doc d
	length := make([]int, len(docs))
	df := make([]int, q)
	total := 0
	for d, doc := range docs {
		row := tf[d*q : (d+1)*q]
		eachWord(doc, &buf, func(w []byte) {
			length[d]++
			if t, ok := terms[string(w)]; ok {
				if row[t] == 0 {
					df[t]++
				}
				row[t]++
			}
		})
		total += length[d]
	}
	c := newCorpus(len(docs), total)
	idf := make([]float64, q)
	for t := range idf {
		idf[t] = c.idf(df[t])
	}
	type hit struct {
		doc   int
		score float64
	}
	var hits []hit
	for d := range docs {
		norm := c.norm(length[d])
		score := 0.0
		for t, f := range tf[d*q : (d+1)*q] {
			if f > 0 {
				score += idf[t] * saturate(int(f), norm)
			}
		}
		if score > 0 {
			hits = append(hits, hit{d, score})
		}
	}
	slices.SortStableFunc(hits, func(x, y hit) int {
		switch {
		case x.score > y.score:
			return -1
		case x.score < y.score:
			return 1
		}
		return 0
	})
	out := make([]int, 0, min(k, len(hits)))
	for _, h := range hits[:min(k, len(hits))] {
		out = append(out, h.doc)
	}
	return out
}

// corpus holds what a word's weight needs to know of the documents: how many there are and
// their mean length in words (at least 1).
type corpus struct{ n, avg float64 }

func newCorpus(docs, words int) corpus {
	n := float64(docs)
	return corpus{n: n, avg: max(float64(words)/n, 1)}
}

// idf is the weight of a word found in df of the documents: Lucene's non-negative idf.
func (c corpus) idf(df int) float64 {
	return math.Log(1 + (c.n-float64(df)+0.5)/(float64(df)+0.5))
}

// norm is the length normalisation of a document of length words.
func (c corpus) norm(length int) float64 {
	return k1 * (1 - b + b*float64(length)/c.avg)
}

// saturate is the weight of a word found f times in a document of normalisation norm.
func saturate(f int, norm float64) float64 {
	return float64(f) * (k1 + 1) / (float64(f) + norm)
}

// Coverage scores every document against query with the same BM25 as Top (same words, same
// idf, same saturation and length normalisation), and gives beside each score the document's
// ceiling: the score a query holding every word of that document would reach. score/ceiling is
// the share of the document's weight the query covers, 1 when every word of the document
// occurs in the query; it does not grow with the query's length, so it can be held to a fixed
// threshold where a raw score cannot (a raw score grows with the idf, that is with how many
// documents there are). A document with no word has ceiling 0.
func Coverage(query string, docs []string) (scores, ceilings []float64) {
	scores, ceilings = make([]float64, len(docs)), make([]float64, len(docs))
	if len(docs) == 0 {
		return scores, ceilings
	}
	var buf []byte
	inQuery := map[string]bool{}
	eachWord(query, &buf, func(w []byte) { inQuery[string(w)] = true })
	// Per document its distinct words in the order they first occur (so that the sums below
	// are the same on every run: a score equals its ceiling exactly when all words are covered).
	words := make([][]string, len(docs))
	counts := make([]map[string]int, len(docs))
	length := make([]int, len(docs))
	df := map[string]int{}
	total := 0
	for d, doc := range docs {
		counts[d] = map[string]int{}
		eachWord(doc, &buf, func(w []byte) {
			length[d]++
			if counts[d][string(w)]++; counts[d][string(w)] == 1 {
				words[d] = append(words[d], string(w))
				df[string(w)]++
			}
		})
		total += length[d]
	}
	c := newCorpus(len(docs), total)
	for d := range docs {
		norm := c.norm(length[d])
		for _, w := range words[d] {
			v := c.idf(df[w]) * saturate(counts[d][w], norm)
			ceilings[d] += v
			if inQuery[w] {
				scores[d] += v
			}
		}
	}
	return scores, ceilings
}

// eachWord calls fn with every word of s, lower-cased, in *scratch (which fn must not keep).
func eachWord(s string, scratch *[]byte, fn func(w []byte)) {
	buf := (*scratch)[:0]
	defer func() { *scratch = buf }()
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
			continue
		}
		if len(buf) > 0 {
			fn(buf)
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		fn(buf)
	}
}
