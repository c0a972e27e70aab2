package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hippocam/hippocam"
)

// messageColumns are the columns a Message is read from, in scanMessage's order.
const messageColumns = `id, role, kind, content, tool_calls, tool_call_id, ref, tokens, knowledge, trace, extra`

// Children returns, in order, the messages archived directly beneath ref. ENOTFOUND for a ref
// the session does not have, and for a session that does not exist.
func (db *DB) Children(ctx context.Context, tenant, sessionID, ref string) ([]hippocam.Message, error) {
	if ref == "" {
		return nil, refNotFound(ref, sessionID)
	}
	kids, err := queryMessages(ctx, db.read, `SELECT `+messageColumns+` FROM messages
		WHERE tenant = ? AND session_id = ? AND parent = ? ORDER BY pos`, tenant, sessionID, ref)
	if err != nil {
		return nil, fmt.Errorf("sqlite: children %s: %w", ref, err)
	}
	if len(kids) > 0 {
		return kids, nil
	}
	var exists bool
	if err := db.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM messages
		WHERE tenant = ? AND session_id = ? AND ref = ? AND ref <> '')`, tenant, sessionID, ref).Scan(&exists); err != nil {
		return nil, fmt.Errorf("sqlite: children %s: %w", ref, err)
	} else if !exists {
		return nil, refNotFound(ref, sessionID)
	}
	return kids, nil
}

// Message returns one message of the session, in the context or archived. ENOTFOUND if none.
func (db *DB) Message(ctx context.Context, tenant, sessionID, id string) (*hippocam.Message, error) {
	row := db.read.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE tenant = ? AND session_id = ? AND id = ?`, tenant, sessionID, id)
	m, err := scanMessage(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, hippocam.Errorf(hippocam.ENOTFOUND, "no message %q in session %q", id, sessionID)
	} else if err != nil {
		return nil, fmt.Errorf("sqlite: message %s: %w", id, err)
	}
	return &m, nil
}

func refNotFound(ref, sessionID string) error {
	return hippocam.Errorf(hippocam.ENOTFOUND, "no ref %q in session %q", ref, sessionID)
}

// querier is what both *sql.DB and *sql.Tx offer to read.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryMessages(ctx context.Context, q querier, query string, args ...any) ([]hippocam.Message, error) {
	rows, err := q.QueryContext(ctx, query, args...)
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
func scanMessage(row interface{ Scan(...any) error }) (hippocam.Message, error) {
	var m hippocam.Message
	var toolCalls, knowledge, trace, extra sql.NullString
	err := row.Scan(&m.ID, &m.Role, &m.Kind, &m.Content, &toolCalls, &m.ToolCallID, &m.Ref, &m.Tokens,
		&knowledge, &trace, &extra)
	if err != nil {
		return m, err
	}
	if toolCalls.Valid {
		if err := json.Unmarshal([]byte(toolCalls.String), &m.ToolCalls); err != nil {
			return m, fmt.Errorf("message %s: tool calls: %w", m.ID, err)
		}
	}
	if knowledge.Valid {
		if err := json.Unmarshal([]byte(knowledge.String), &m.Knowledge); err != nil {
			return m, fmt.Errorf("message %s: knowledge: %w", m.ID, err)
		}
	}
	if trace.Valid {
		if m.Trace, err = decodeTrace([]byte(trace.String)); err != nil {
			return m, fmt.Errorf("message %s: trace: %w", m.ID, err)
		}
	}
	if extra.Valid {
		m.Extra = json.RawMessage(extra.String)
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
		b, err := encodeTrace(m.Trace)
		if err != nil {
			return nil, err
		}
		trace = string(b)
	}
	if m.Extra != nil {
		extra = string(m.Extra)
	}
	return []any{m.ID, string(m.Role), string(m.Kind), m.Content, toolCalls, m.ToolCallID, m.Ref, m.Tokens,
		knowledge, trace, extra}, nil
}

func jsonOrNull(v any, isNil bool) (any, error) {
	if isNil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}
