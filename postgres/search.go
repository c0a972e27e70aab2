package postgres

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sqlstore"
	"github.com/jackc/pgx/v5"
)

// Search answers a full-text query from messages.terms (migrations/0004), the latest matches
// first (by descending seq, the order messages entered). EINVALID for a query with no word to
// search for (or too many) and for a limit below 1; ENOTFOUND if the session does not exist.
//
// terms holds each searchable message's distinct terms without positions, which keeps the
// column small, so the index tells which messages hold every term of the query but not whether
// a phrase's terms follow one another. Candidates are therefore read newest first, in batches,
// and kept when hippocam.SearchQuery.Matches finds every phrase in the text; the next batch
// starts below the last candidate read, until limit hits are found or none is left.
//
// The order is recency alone, not a rank: every match holds the words asked for, and the one
// said last is the one most likely to be current. Each batch is planned afresh for its words
// (never from a cached generic plan), so that the planner can weigh them against the column's
// statistics: for rare words it gathers the candidates from the GIN index and sorts the few it
// finds; for words most messages hold it walks the session's messages newest first
// (messages_recent) and stops at the limit.
func (db *DB) Search(ctx context.Context, tenant, sessionID, query string, limit int) ([]hippocam.SearchHit, error) {
	q, err := sqlstore.ParseSearch(query, limit)
	if err != nil {
		return nil, err
	}
	tsq := tsquery(searchScope(tenant, sessionID), q)
	var hits []hippocam.SearchHit
	below, batch := int64(math.MaxInt64), limit
	for len(hits) < limit {
		read, err := db.searchBatch(ctx, tenant, sessionID, tsq, below, batch, func(seq int64, h hippocam.SearchHit) bool {
			below = seq
			if text := hippocam.SearchText(&h.Message); len(hits) < limit && q.Matches(text) {
				h.Snippet = q.Snippet(text)
				hits = append(hits, h)
			}
			return len(hits) < limit
		})
		if err != nil {
			return nil, fmt.Errorf("postgres: search: %w", err)
		}
		if read < batch {
			break
		}
		batch = min(2*batch, 1000)
	}
	if len(hits) > 0 {
		return hits, nil
	}
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE tenant = $1 AND id = $2)`,
		tenant, sessionID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("postgres: search: %w", err)
	} else if !exists {
		return nil, sqlstore.SessionNotFound(sessionID)
	}
	return hits, nil
}

// searchBatch reads at most n candidates of the session below seq below, newest first, and
// passes each (without its snippet) to keep until keep returns false. It returns how many rows
// it read.
func (db *DB) searchBatch(ctx context.Context, tenant, sessionID, tsq string, below int64, n int,
	keep func(seq int64, h hippocam.SearchHit) bool) (int, error) {
	rows, err := db.pool.Query(ctx, `SELECT seq, `+sqlstore.HitColumns+` FROM messages
		WHERE tenant = $1 AND session_id = $2 AND terms @@ to_tsquery('simple', $3) AND seq < $4
		ORDER BY seq DESC LIMIT $5`, pgx.QueryExecModeExec, tenant, sessionID, tsq, below, n)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	read := 0
	for rows.Next() {
		var seq int64
		h, err := sqlstore.ScanHit[[]byte](seqRow{rows, &seq}, hippocam.SearchQuery{})
		if err != nil {
			return read, err
		}
		read++
		if !keep(seq, h) {
			return n, nil // enough: as if the batch were full, so that no other is read
		}
	}
	return read, rows.Err()
}

// seqRow scans the seq column into seq ahead of the columns its caller asks for.
type seqRow struct {
	row pgx.Rows
	seq *int64
}

func (r seqRow) Scan(dest ...any) error { return r.row.Scan(append([]any{r.seq}, dest...)...) }

// maxTermText bounds the distinct terms a message contributes to the index: to_tsvector builds
// at most 1 MB, each term costing its bytes and a few more, so 128 KiB of them always fits.
// Terms beyond it are not searchable in that message.
const maxTermText = 128 << 10

// searchScope is the token that opens the terms of every message of a session: 'h' and the
// md5 of the tenant's length, a colon, the tenant and the session id. The migration's backfill
// computes the same in SQL.
func searchScope(tenant, session string) string {
	sum := md5.Sum([]byte(strconv.Itoa(len(tenant)) + ":" + tenant + session))
	return "h" + hex.EncodeToString(sum[:])
}

// searchTerms is the text whose stripped tsvector is a message's terms: the scope, then the
// message's distinct terms in the order they first occur, separated by spaces, up to
// maxTermText.
func searchTerms(tenant, session string, m *hippocam.Message) string {
	var b strings.Builder
	b.WriteString(searchScope(tenant, session))
	seen := map[string]bool{}
	for _, t := range hippocam.SearchTerms(hippocam.SearchText(m)) {
		if seen[t] {
			continue
		}
		if b.Len()+1+len(t) > maxTermText {
			break
		}
		seen[t] = true
		b.WriteString(" ")
		b.WriteString(t)
	}
	return b.String()
}

// tsquery writes q for to_tsquery: the scope and every term, joined by &. Terms are letters and
// digits only and each is quoted, so nothing in a query can act as an operator. Whether a
// phrase's terms follow one another is checked on the candidates' text.
func tsquery(scope string, q hippocam.SearchQuery) string {
	parts := []string{"'" + scope + "'"}
	for _, t := range q.Terms() {
		parts = append(parts, "'"+t+"'")
	}
	return strings.Join(parts, " & ")
}
