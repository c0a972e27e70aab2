package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hippocam/hippocam"
	"github.com/jackc/pgx/v5"
)

// messageColumns are the columns a Message is read from, in scanMessage's order.
const messageColumns = `id, role, kind, content, tool_calls, tool_call_id, ref, tokens, knowledge, trace, extra`

// Children returns, in order, the messages archived directly beneath ref. ENOTFOUND for a ref
// the session does not have, and for a session that does not exist.
func (db *DB) Children(ctx context.Context, tenant, sessionID, ref string) ([]hippocam.Message, error) {
	if ref == "" {
		return nil, refNotFound(ref, sessionID)
	}
	kids, err := queryMessages(ctx, db.pool, `SELECT `+messageColumns+` FROM messages
		WHERE tenant = $1 AND session_id = $2 AND parent = $3 ORDER BY pos`, tenant, sessionID, ref)
	if err != nil {
		return nil, fmt.Errorf("postgres: children %s: %w", ref, err)
	}
	if len(kids) > 0 {
		return kids, nil
	}
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM messages
		WHERE tenant = $1 AND session_id = $2 AND ref = $3 AND ref <> '')`, tenant, sessionID, ref).Scan(&exists); err != nil {
		return nil, fmt.Errorf("postgres: children %s: %w", ref, err)
	} else if !exists {
		return nil, refNotFound(ref, sessionID)
	}
	return kids, nil
}

// Message returns one message of the session, in the context or archived. ENOTFOUND if none.
func (db *DB) Message(ctx context.Context, tenant, sessionID, id string) (*hippocam.Message, error) {
	row := db.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE tenant = $1 AND session_id = $2 AND id = $3`, tenant, sessionID, id)
	m, err := scanMessage(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, hippocam.Errorf(hippocam.ENOTFOUND, "no message %q in session %q", id, sessionID)
	} else if err != nil {
		return nil, fmt.Errorf("postgres: message %s: %w", id, err)
	}
	return &m, nil
}

func refNotFound(ref, sessionID string) error {
	return hippocam.Errorf(hippocam.ENOTFOUND, "no ref %q in session %q", ref, sessionID)
}

// querier is what both the pool and a transaction offer to read.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queryMessages(ctx context.Context, q querier, query string, args ...any) ([]hippocam.Message, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []hippocam.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// scanMessage reads the messageColumns of one row.
func scanMessage(row pgx.Row) (hippocam.Message, error) {
	var m hippocam.Message
	var content, toolCalls, knowledge, trace, extra []byte
	err := row.Scan(&m.ID, &m.Role, &m.Kind, &content, &toolCalls, &m.ToolCallID, &m.Ref, &m.Tokens,
		&knowledge, &trace, &extra)
	if err != nil {
		return m, err
	}
	m.Content = string(content)
	if toolCalls != nil {
		if err := json.Unmarshal(toolCalls, &m.ToolCalls); err != nil {
			return m, fmt.Errorf("message %s: tool calls: %w", m.ID, err)
		}
	}
	if knowledge != nil {
		if err := json.Unmarshal(knowledge, &m.Knowledge); err != nil {
			return m, fmt.Errorf("message %s: knowledge: %w", m.ID, err)
		}
	}
	if trace != nil {
		if m.Trace, err = decodeTrace(trace); err != nil {
			return m, fmt.Errorf("message %s: trace: %w", m.ID, err)
		}
	}
	if extra != nil {
		m.Extra = json.RawMessage(extra)
	}
	return m, nil
}

// messageArgs returns m's values for the messageColumns, in order. Nil slices and a nil Extra
// are stored as NULL, so that they read back nil rather than empty.
func messageArgs(m *hippocam.Message) ([]any, error) {
	toolCalls, err := jsonOrNull(m.ToolCalls, m.ToolCalls == nil)
	if err != nil {
		return nil, err
	}
	knowledge, err := jsonOrNull(m.Knowledge, m.Knowledge == nil)
	if err != nil {
		return nil, err
	}
	var trace, extra any
	if m.Trace != nil {
		if trace, err = encodeTrace(m.Trace); err != nil {
			return nil, err
		}
	}
	if m.Extra != nil {
		extra = append(make([]byte, 0, len(m.Extra)), m.Extra...) // non-nil, even when empty
	}
	content := append(make([]byte, 0, len(m.Content)), m.Content...)
	return []any{m.ID, string(m.Role), string(m.Kind), content, toolCalls, m.ToolCallID, m.Ref, m.Tokens,
		knowledge, trace, extra}, nil
}

func jsonOrNull(v any, isNil bool) (any, error) {
	if isNil {
		return nil, nil
	}
	return json.Marshal(v)
}
