package sqlstore

import (
	"encoding/json"
	"fmt"

	"github.com/hippocam/hippocam"
)

// MessageColumns are the messages columns that hold a Message's fields, in the order of
// MessageArgs and ScanMessage.
const MessageColumns = `id, role, kind, content, tool_calls, tool_call_id, ref, tokens, knowledge, trace, extra, source`

// Row is one result row: *sql.Row and *sql.Rows, pgx.Row and pgx.Rows.
type Row interface {
	Scan(dest ...any) error
}

// ScanMessage reads a row of MessageColumns. Content is read as T; the nullable columns are read
// as bytes, nil for NULL, so that nil fields read back nil and empty ones empty.
func ScanMessage[T Text](row Row) (hippocam.Message, error) {
	var m hippocam.Message
	var content T
	var toolCalls, knowledge, trace, extra, src []byte
	err := row.Scan(&m.ID, &m.Role, &m.Kind, &content, &toolCalls, &m.ToolCallID, &m.Ref, &m.Tokens,
		&knowledge, &trace, &extra, &src)
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
		if m.Trace, err = DecodeTrace(trace); err != nil {
			return m, fmt.Errorf("message %s: trace: %w", m.ID, err)
		}
	}
	if extra != nil {
		m.Extra = json.RawMessage(extra)
	}
	if src != nil {
		var sc source
		if err := json.Unmarshal(src, &sc); err != nil {
			return m, fmt.Errorf("message %s: source: %w", m.ID, err)
		}
		m.Parts, m.Origin = sc.Parts, sc.Origin
	}
	return m, nil
}

// MessageArgs returns m's values for the MessageColumns, in order, with content and the JSON
// columns as T. Nil slices and a nil Extra become NULL, so that they read back nil; empty ones
// stay empty (a string converted to []byte is never nil). EINVALID if a field does not encode.
func MessageArgs[T Text](m *hippocam.Message) ([]any, error) {
	toolCalls, err := jsonOrNull[T](m.ToolCalls, m.ToolCalls == nil)
	if err != nil {
		return nil, invalidMessage(m, err)
	}
	knowledge, err := jsonOrNull[T](m.Knowledge, m.Knowledge == nil)
	if err != nil {
		return nil, invalidMessage(m, err)
	}
	var trace, extra any
	if m.Trace != nil {
		b, err := EncodeTrace(m.Trace)
		if err != nil {
			return nil, invalidMessage(m, err)
		}
		trace = T(b)
	}
	if m.Extra != nil {
		extra = T(m.Extra)
	}
	src, err := jsonOrNull[T](source{Parts: m.Parts, Origin: m.Origin}, m.Parts == nil && m.Origin == nil)
	if err != nil {
		return nil, invalidMessage(m, err)
	}
	return []any{m.ID, string(m.Role), string(m.Kind), T(m.Content), toolCalls, m.ToolCallID, m.Ref, m.Tokens,
		knowledge, trace, extra, src}, nil
}

// source is the JSON of the messages.source column: a message's non-text parts and its wire
// origin.
type source struct {
	Parts  []hippocam.Part  `json:"parts,omitempty"`
	Origin *hippocam.Origin `json:"origin,omitempty"`
}

func jsonOrNull[T Text](v any, isNil bool) (any, error) {
	if isNil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return T(b), nil
}

func invalidMessage(m *hippocam.Message, err error) error {
	return hippocam.Errorf(hippocam.EINVALID, "message %s: %v", m.ID, err)
}
