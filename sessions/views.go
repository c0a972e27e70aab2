package sessions

import (
	"context"

	"github.com/hippocam/hippocam"
)

// MessageView is one message as the REST API and the MCP server show it: in a context, a layer
// of the tree or an expansion. Both transports encode the same values, so they give the same
// bytes.
type MessageView struct {
	ID         string                   `json:"id"`
	Role       hippocam.Role            `json:"role"`
	Kind       hippocam.Kind            `json:"kind"`
	Ref        string                   `json:"ref,omitempty"`
	Tokens     int                      `json:"tokens"`
	Content    string                   `json:"content"`
	ToolCalls  []hippocam.ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string                   `json:"tool_call_id,omitempty"`
	Knowledge  []hippocam.KnowledgeItem `json:"knowledge,omitempty"`
	Trace      []MessageView            `json:"trace,omitempty"`
	Parts      []hippocam.Part          `json:"parts,omitempty"`
	// Origin is the message as it arrived: its wire format and its exact bytes (a string).
	Origin *hippocam.Origin `json:"origin,omitempty"`
	// In an expansion: Framing is the framing version (1, 2…) a message belongs to; Regenerated
	// marks an answer that a regeneration replaced.
	Framing     int  `json:"framing,omitempty"`
	Regenerated bool `json:"regenerated,omitempty"`
}

// MessageViews shows messages as MessageView does, with their traces.
func MessageViews(ms []hippocam.Message) []MessageView {
	out := make([]MessageView, len(ms))
	for i, m := range ms {
		out[i] = MessageView{ID: m.ID, Role: m.Role, Kind: m.Kind, Ref: m.Ref, Tokens: m.Tokens, Content: m.Content,
			ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Knowledge: m.Knowledge, Parts: m.Parts, Origin: m.Origin}
		if len(m.Trace) > 0 {
			out[i].Trace = MessageViews(m.Trace)
		}
	}
	return out
}

// Expansion returns every original message of the tenant's session id, in order: framing
// versions at the place they took effect (numbered) and answers a regeneration replaced
// (marked) included, Hippocam's own recall exchanges and hidden marks left out. ENOTFOUND if the
// tenant has no such session.
func (s *Service) Expansion(ctx context.Context, tenant, id string) ([]MessageView, error) {
	sess, err := s.cfg.Store.Session(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return expansion(ctx, hippocam.SessionArchive(s.cfg.Store, tenant, id), sess.Context)
}

// expansion is the full expansion of a context (Expansion).
func expansion(ctx context.Context, a hippocam.Archive, msgs []hippocam.Message) ([]MessageView, error) {
	out := []MessageView{}
	version := 0
	var walk func(ms []hippocam.Message, framing int, regenerated bool) error
	walk = func(ms []hippocam.Message, framing int, regenerated bool) error {
		for _, m := range ms {
			if !m.Consolidated() {
				if m.Kind.Hidden() || m.Kind == hippocam.KindRecall {
					continue // an empty framing, or Hippocam's own recall exchanges
				}
				j := MessageViews([]hippocam.Message{m})[0]
				j.Framing, j.Regenerated = framing, regenerated
				out = append(out, j)
				continue
			}
			kids, err := a.Children(ctx, m.Ref)
			if err != nil {
				return err
			}
			f, g := framing, regenerated
			switch m.Kind {
			case hippocam.KindFraming:
				version++
				f = version
			case hippocam.KindBranch:
				g = true
			}
			if err := walk(kids, f, g); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(msgs, 0, false)
}
