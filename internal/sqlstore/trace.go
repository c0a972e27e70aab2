package sqlstore

import (
	"encoding/json"

	"github.com/hippocam/hippocam"
)

// traceRecord is the stored form of one message of a Trace. Encoding Message itself would not
// round-trip: its JSON leaves out empty slices (omitempty) and compacts and HTML-escapes Extra.
// Pointers to slices keep nil and empty apart, and Extra travels as a string, byte for byte.
// Strings must be valid UTF-8, which anything that arrived as JSON is.
type traceRecord struct {
	ID         string                    `json:"id"`
	Role       hippocam.Role             `json:"role"`
	Kind       hippocam.Kind             `json:"kind"`
	Content    string                    `json:"content"`
	ToolCalls  *[]hippocam.ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string                    `json:"tool_call_id,omitempty"`
	Ref        string                    `json:"ref,omitempty"`
	Tokens     int                       `json:"tokens,omitempty"`
	Knowledge  *[]hippocam.KnowledgeItem `json:"knowledge,omitempty"`
	Trace      *[]traceRecord            `json:"trace,omitempty"`
	Extra      *string                   `json:"extra,omitempty"`
}

// EncodeTrace returns the JSON a message's Trace is stored as; DecodeTrace reads it back
// identical, nested traces included.
func EncodeTrace(trace []hippocam.Message) ([]byte, error) {
	return json.Marshal(toRecords(trace))
}

// DecodeTrace reads a Trace stored by EncodeTrace.
func DecodeTrace(b []byte) ([]hippocam.Message, error) {
	var recs []traceRecord
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, err
	}
	return fromRecords(recs), nil
}

func toRecords(ms []hippocam.Message) []traceRecord {
	if ms == nil {
		return nil
	}
	recs := make([]traceRecord, len(ms))
	for i, m := range ms {
		r := traceRecord{ID: m.ID, Role: m.Role, Kind: m.Kind, Content: m.Content, ToolCallID: m.ToolCallID, Ref: m.Ref, Tokens: m.Tokens}
		if m.ToolCalls != nil {
			r.ToolCalls = &m.ToolCalls
		}
		if m.Knowledge != nil {
			r.Knowledge = &m.Knowledge
		}
		if m.Trace != nil {
			t := toRecords(m.Trace)
			r.Trace = &t
		}
		if m.Extra != nil {
			x := string(m.Extra)
			r.Extra = &x
		}
		recs[i] = r
	}
	return recs
}

func fromRecords(recs []traceRecord) []hippocam.Message {
	if recs == nil {
		return nil
	}
	ms := make([]hippocam.Message, len(recs))
	for i, r := range recs {
		m := hippocam.Message{ID: r.ID, Role: r.Role, Kind: r.Kind, Content: r.Content, ToolCallID: r.ToolCallID, Ref: r.Ref, Tokens: r.Tokens}
		if r.ToolCalls != nil {
			m.ToolCalls = *r.ToolCalls
		}
		if r.Knowledge != nil {
			m.Knowledge = *r.Knowledge
		}
		if r.Trace != nil {
			m.Trace = fromRecords(*r.Trace)
		}
		if r.Extra != nil {
			m.Extra = json.RawMessage(*r.Extra)
		}
		ms[i] = m
	}
	return ms
}
