package learn

import "github.com/hippocam/hippocam/internal/bm25"

// Retrieval: which stored texts (lessons, earlier tasks' requests) are most like a query. The
// memory systems use it through Retriever, so that an embedding endpoint can take BM25's place.
// The BM25 itself, and why it is hand-written, is internal/bm25.

// Retriever ranks documents against a query.
type Retriever interface {
	// Top returns the indices in docs of the at most k documents most similar to query, best
	// first; equal scores keep the order of docs. A document that shares nothing with the
	// query is never returned.
	Top(query string, docs []string, k int) []int
}

type bm25Retriever struct{}

// NewBM25 returns Okapi BM25 (k1 = 1.2, b = 0.75) over words: lower-cased runs of letters,
// digits and '_' (internal/bm25). It is deterministic and safe for concurrent use.
func NewBM25() Retriever { return bm25Retriever{} }

// Top implements Retriever.
func (bm25Retriever) Top(query string, docs []string, k int) []int { return bm25.Top(query, docs, k) }

// Coverage scores every document against query with the BM25 of NewBM25 and gives beside each
// score the document's ceiling, the score a query holding every word of that document would
// reach: score/ceiling is the share of the document's weight the query covers (bm25.Coverage).
func Coverage(query string, docs []string) (scores, ceilings []float64) {
	return bm25.Coverage(query, docs)
}
