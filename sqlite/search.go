package sqlite

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sqlstore"
)

// Search answers a full-text query from the FTS5 table message_search (migrations/0004): the
// query's phrases and the session's scope token must all match, and the index gives the latest
// matches first by walking its rows in descending seq, so only limit rows are read from
// messages. EINVALID for a query with no word to search for (or too many) and for a limit below
// 1; ENOTFOUND if the session does not exist.
//
// The order is recency alone, not BM25: every match of a phrase holds the words that were asked
// for, and the one said last is the one most likely to be current.
func (db *DB) Search(ctx context.Context, tenant, sessionID, query string, limit int) ([]hippocam.SearchHit, error) {
	q, err := sqlstore.ParseSearch(query, limit)
	if err != nil {
		return nil, err
	}
	// CROSS JOIN keeps the index as the outer loop: the planner would otherwise walk the
	// session's messages to meet a list of a few rowids.
	rows, err := db.read.QueryContext(ctx, `SELECT `+sqlstore.HitColumns+` FROM
		(SELECT rowid AS hit FROM message_search WHERE message_search MATCH ? ORDER BY rowid DESC LIMIT ?) AS h
		CROSS JOIN messages ON messages.seq = h.hit
		WHERE messages.tenant = ? AND messages.session_id = ? ORDER BY h.hit DESC`,
		matchExpr(searchScope(tenant, sessionID), q), limit, tenant, sessionID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: search: %w", err)
	}
	defer rows.Close()
	var hits []hippocam.SearchHit
	for rows.Next() {
		h, err := sqlstore.ScanHit[string](rows, q)
		if err != nil {
			return nil, fmt.Errorf("sqlite: search: %w", err)
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: search: %w", err)
	}
	if len(hits) > 0 {
		return hits, nil
	}
	var exists bool
	if err := db.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE tenant = ? AND id = ?)`,
		tenant, sessionID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("sqlite: search: %w", err)
	} else if !exists {
		return nil, sqlstore.SessionNotFound(sessionID)
	}
	return hits, nil
}

// searchScope is the token of message_search's scope column for a session: the bytes of tenant
// and session id in hex, joined by an x, which no other pair of names gives. The migration's
// backfill computes the same in SQL.
func searchScope(tenant, session string) string {
	return hex.EncodeToString([]byte(tenant)) + "x" + hex.EncodeToString([]byte(session))
}

// matchExpr writes q as an FTS5 query over the session's rows: the scope token, then each phrase
// as a quoted string in the body column. Terms are letters and digits only, so nothing in them
// can close a string or act as an operator.
func matchExpr(scope string, q hippocam.SearchQuery) string {
	var b strings.Builder
	b.WriteString(`scope : "` + scope + `"`)
	for _, p := range q.Phrases {
		b.WriteString(` AND body : "` + strings.Join(p, " ") + `"`)
	}
	return b.String()
}
