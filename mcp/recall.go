package mcp

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// recall_memory opens what the engine's recall opens: the layer beneath a memory's ref (the
// store's Children, as GET /api/sessions/{id}/nodes/{ref} reads it) or one message by its id
// (the store's Message). An MCP client has no context window Hippocam knows of, so a result is
// bounded instead: at most Config.RecallMessages messages and Config.RecallBytes of their text.
// What does not fit comes as handles, in the engine's syntax: "r7#30" is the layer beneath r7
// from its 31st message on; "m12@8192" is message m12 from byte 8192 on; a message listed with
// its text left out is read by recalling its id.

// The default bounds of one recall_memory result.
const (
	DefaultRecallMessages = 100
	DefaultRecallBytes    = 32 << 10
)

type recallMemoryIn struct {
	Session string `json:"session" jsonschema:"the session's id, as list_sessions gives it"`
	Ref     string `json:"ref" jsonschema:"a memory's ref (r12, or its [ref:r12] tag), a message id (m40), or a handle from an earlier result's next (r12#30, m40@8192)"`
}

type toolCallOut struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type recallMessageOut struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	Kind string `json:"kind" jsonschema:"raw for an original message; a memory's kind (intent_memory, prefix_memory…) for what Hippocam wrote in place of older messages"`
	// Ref is set on a memory: recalling it opens the messages it stands for.
	Ref        string        `json:"ref,omitempty" jsonschema:"set on a memory: recall it to open the messages the memory stands for"`
	Tokens     int           `json:"tokens"`
	Content    string        `json:"content"`
	ToolCalls  []toolCallOut `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
	LeftOut    bool          `json:"left_out,omitempty" jsonschema:"the text did not fit in this result: recall the message's id to read it"`
}

type recallMemoryOut struct {
	Session string `json:"session"`
	Ref     string `json:"ref" jsonschema:"what was opened: a ref or a message id"`
	// Layer is true for the messages beneath a ref, false for one message.
	Layer bool `json:"layer" jsonschema:"true: the messages beneath a ref, oldest first; false: one message"`
	// Total counts the messages of the layer, or the bytes of the message's text; From is the
	// first shown (an index, or a byte offset).
	Total    int                `json:"total" jsonschema:"the messages in the layer, or the bytes of the message's text"`
	From     int                `json:"from" jsonschema:"where this result starts: the position of its first message in the layer (0 for the oldest), or the byte offset of its text"`
	Messages []recallMessageOut `json:"messages"`
	Next     string             `json:"next,omitempty" jsonschema:"the handle of the rest, to recall next"`
}

func (t *tenantServer) recallMemory(ctx context.Context, _ *sdk.CallToolRequest, in recallMemoryIn) (*sdk.CallToolResult, recallMemoryOut, error) {
	out, err := t.recall(ctx, in.Session, in.Ref)
	if err != nil {
		return nil, recallMemoryOut{}, t.toolError(ToolRecallMemory, err)
	}
	return text(recallText(out)), *out, nil
}

// recall resolves ref in the session and reads what it names.
func (t *tenantServer) recall(ctx context.Context, session, ref string) (*recallMemoryOut, error) {
	if err := t.checkSession(ctx, session); err != nil {
		return nil, err
	}
	ref = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(ref), "[ref:"), "]")
	if ref == "" {
		return nil, hippocam.Errorf(hippocam.EINVALID, "ref: name a ref (r12), a message id (m40) or a handle (r12#30, m40@8192)")
	}
	unknown := hippocam.Errorf(hippocam.ENOTFOUND, "nothing in session %q has the ref %q", session, ref)
	id, sep, num := ref, byte(0), 0
	if i := strings.LastIndexAny(ref, "#@"); i > 0 {
		n, err := strconv.Atoi(ref[i+1:])
		if err != nil || n < 0 {
			return nil, unknown
		}
		id, sep, num = ref[:i], ref[i], n
	}
	if sep != '@' {
		kids, err := t.cfg.Store.Children(ctx, t.tenant, session, id)
		switch {
		case err == nil && num <= len(kids):
			return t.layer(session, id, kids, num), nil
		case err == nil, sep == '#' && hippocam.ErrorCode(err) == hippocam.ENOTFOUND:
			return nil, unknown
		case hippocam.ErrorCode(err) != hippocam.ENOTFOUND:
			return nil, err
		}
	}
	m, err := t.cfg.Store.Message(ctx, t.tenant, session, id)
	if hippocam.ErrorCode(err) == hippocam.ENOTFOUND || (err == nil && num > len(m.Content)) {
		return nil, unknown
	}
	if err != nil {
		return nil, err
	}
	return t.page(session, m, num), nil
}

// layer is the result for the children of ref from index from on.
func (t *tenantServer) layer(session, ref string, kids []hippocam.Message, from int) *recallMemoryOut {
	out := &recallMemoryOut{Session: session, Ref: ref, Layer: true, Total: len(kids), From: from, Messages: []recallMessageOut{}}
	used := 0
	for i := from; i < len(kids) && len(out.Messages) < t.cfg.RecallMessages; i++ {
		m := messageOut(&kids[i])
		if used+len(m.Content) > t.cfg.RecallBytes {
			m.Content, m.LeftOut = "", true
		} else {
			used += len(m.Content)
		}
		out.Messages = append(out.Messages, m)
	}
	if shown := from + len(out.Messages); shown < len(kids) {
		out.Next = fmt.Sprintf("%s#%d", ref, shown)
	}
	return out
}

// page is the result for message m from byte offset on: at most RecallBytes of its text, cut
// at a character boundary (at a line end when one is near).
func (t *tenantServer) page(session string, m *hippocam.Message, offset int) *recallMemoryOut {
	o := messageOut(m)
	rest := m.Content[offset:]
	out := &recallMemoryOut{Session: session, Ref: m.ID, Total: len(m.Content), From: offset}
	if len(rest) > t.cfg.RecallBytes {
		cut := t.cfg.RecallBytes
		for cut > 0 && !utf8.RuneStart(rest[cut]) {
			cut--
		}
		if nl := strings.LastIndexByte(rest[:cut], '\n'); nl > cut*4/5 {
			cut = nl + 1
		}
		rest = rest[:cut]
		out.Next = fmt.Sprintf("%s@%d", m.ID, offset+cut)
	}
	if offset > 0 {
		o.ToolCalls = nil // they travel with the first page
	}
	o.Content = rest
	out.Messages = []recallMessageOut{o}
	return out
}

func messageOut(m *hippocam.Message) recallMessageOut {
	o := recallMessageOut{ID: m.ID, Role: string(m.Role), Kind: string(m.Kind), Ref: m.Ref, Tokens: m.Tokens, Content: m.Content, ToolCallID: m.ToolCallID}
	if o.Kind == "" {
		o.Kind = string(hippocam.KindRaw)
	}
	for _, c := range m.ToolCalls {
		o.ToolCalls = append(o.ToolCalls, toolCallOut{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return o
}

// recallText is the result as text, in the shape of the engine's recall results: a header line,
// then each message's header line (beginning "--- ") and its text.
func recallText(o *recallMemoryOut) string {
	var b strings.Builder
	switch {
	case !o.Layer && o.From > 0:
		fmt.Fprintf(&b, "Recall of %s in session %s, continued from byte %d of %d.", o.Ref, o.Session, o.From, o.Total)
	case !o.Layer:
		fmt.Fprintf(&b, "Recall of message %s in session %s.", o.Ref, o.Session)
	case o.From > 0:
		fmt.Fprintf(&b, "Recall of %s in session %s, continued: messages %d to %d of the %d beneath it.", o.Ref, o.Session, o.From+1, o.From+len(o.Messages), o.Total)
	default:
		fmt.Fprintf(&b, "Recall of %s in session %s: the %s beneath it, oldest first.", o.Ref, o.Session, count(o.Total, "message", "messages"))
	}
	for i, m := range o.Messages {
		fmt.Fprintf(&b, "\n--- ")
		if o.Layer {
			fmt.Fprintf(&b, "%d/%d · ", o.From+i+1, o.Total)
		}
		fmt.Fprintf(&b, "%s · %s · %s", m.ID, m.Role, m.Kind)
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " · result of %s", m.ToolCallID)
		}
		if m.Ref != "" {
			fmt.Fprintf(&b, " · opens %s", hippocam.RefTag(m.Ref))
		}
		if m.LeftOut {
			fmt.Fprintf(&b, " · %d tokens left out: recall %s to read it", m.Tokens, m.ID)
			continue
		}
		b.WriteString("\n" + m.Content)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "\n[calls %s %s (id %s)]", c.Name, c.Arguments, c.ID)
		}
	}
	if o.Next != "" {
		fmt.Fprintf(&b, "\n(More: recall %s for the rest.)", o.Next)
	}
	return b.String()
}
