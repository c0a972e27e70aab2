package wire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// ToMessage converts a wire message into a raw domain message. Content that is not a plain
// string (an array of parts) is read as its text and kept verbatim in Extra["content"], so that
// FromMessage gives back the same bytes. EINVALID for an unknown role or unreadable content.
func ToMessage(c ChatMessage) (hippocam.Message, error) {
	role := hippocam.Role(c.Role)
	if c.Role == "developer" {
		role = hippocam.RoleSystem
	}
	if !role.Valid() {
		return hippocam.Message{}, hippocam.Errorf(hippocam.EINVALID, "unknown message role %q", c.Role)
	}
	text, err := c.Text()
	if err != nil {
		return hippocam.Message{}, hippocam.Errorf(hippocam.EINVALID, "message content: %v", err)
	}
	m := hippocam.Message{Role: role, Kind: hippocam.KindRaw, Content: text, ToolCallID: c.ToolCallID}
	if len(c.ToolCalls) > 0 {
		m.ToolCalls = make([]hippocam.ToolCall, len(c.ToolCalls))
		for i, tc := range c.ToolCalls {
			m.ToolCalls[i] = hippocam.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
			if tc.Custom != nil {
				m.ToolCalls[i] = hippocam.ToolCall{ID: tc.ID, Name: tc.Custom.Name, Arguments: tc.Custom.Input, Kind: hippocam.ToolCustom}
			}
		}
	}
	otherContent := len(c.Content) > 0 && c.Content[0] != '"'
	if len(c.Extra) == 0 && !otherContent && c.Name == "" && c.Role != "developer" {
		return m, nil
	}
	extra := make(Extra, len(c.Extra)+3)
	for k, v := range c.Extra {
		extra[k] = v
	}
	if otherContent {
		extra["content"] = c.Content
	}
	if c.Name != "" {
		extra["name"], _ = json.Marshal(c.Name)
	}
	if c.Role == "developer" {
		extra["role"] = json.RawMessage(`"developer"`)
	}
	m.Extra, _ = json.Marshal(extra)
	return m, nil
}

// FromMessage converts a domain message to the wire, restoring the fields kept in Extra. A call
// of a custom tool is a custom call; a call of a namespaced tool goes by its flat name, since
// chat completions has no namespaces.
func FromMessage(m *hippocam.Message) ChatMessage {
	c := ChatMessage{Role: string(m.Role), ToolCallID: m.ToolCallID}
	if m.Content != "" || len(m.ToolCalls) == 0 {
		c.Content = StringContent(m.Content)
	}
	for _, tc := range m.ToolCalls {
		if tc.Kind == hippocam.ToolCustom {
			c.ToolCalls = append(c.ToolCalls, ToolCall{ID: tc.ID, Type: "custom", Custom: &CustomCall{Name: hippocam.FlatName(tc.Namespace, tc.Name), Input: tc.Arguments}})
			continue
		}
		c.ToolCalls = append(c.ToolCalls, ToolCall{ID: tc.ID, Type: "function", Function: FunctionCall{Name: hippocam.FlatName(tc.Namespace, tc.Name), Arguments: tc.Arguments}})
	}
	if len(m.Parts) > 0 && !hasContentExtra(m.Extra) {
		c.Content = partsContent(m)
	}
	if len(m.Extra) > 0 {
		var extra Extra
		if json.Unmarshal(m.Extra, &extra) == nil {
			for k, v := range extra {
				switch k {
				case "content":
					c.Content = v
				case "role":
					var r string
					if json.Unmarshal(v, &r) == nil {
						c.Role = r
					}
				case "name":
					_ = json.Unmarshal(v, &c.Name)
				default:
					if c.Extra == nil {
						c.Extra = Extra{}
					}
					c.Extra[k] = v
				}
			}
		}
	}
	return c
}

// AnswerMessage completes the assistant message of a completion with the members the Chat
// Completions API always sends in one: content (null when the message has none), refusal (null)
// and annotations ([]); a member the message has already is kept. The message given is not
// changed.
func AnswerMessage(c ChatMessage) ChatMessage {
	if len(c.Content) == 0 {
		c.Content = json.RawMessage("null")
	}
	_, refusal := c.Extra["refusal"]
	_, annotations := c.Extra["annotations"]
	if refusal && annotations {
		return c
	}
	extra := make(Extra, len(c.Extra)+2)
	for k, v := range c.Extra {
		extra[k] = v
	}
	if !refusal {
		extra["refusal"] = json.RawMessage("null")
	}
	if !annotations {
		extra["annotations"] = json.RawMessage("[]")
	}
	c.Extra = extra
	return c
}

// FromTool converts a domain tool to a wire tool definition: its Raw bytes when it has them, else
// a function.
func FromTool(t *hippocam.Tool) ToolDef {
	if len(t.Raw) > 0 {
		return ToolDef{Type: t.Type, Raw: t.Raw}
	}
	return ToolDef{Type: "function", Function: FunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
}

// forChat returns r as a chat-completions upstream receives it (hippocam.UpstreamTool): its
// tools that reach such an upstream, under their upstream names; its tool choice naming those;
// its messages' calls of namespaced and custom tools as hippocam.UpstreamCall writes them; its
// messages that only declare tools (hippocam.Message.DeclaresTools) left out. r is returned
// itself when nothing changes.
func forChat(r *hippocam.Request) *hippocam.Request {
	special := hippocam.SpecialCalls(r.Messages)
	declared := false
	for i := range r.Messages {
		declared = declared || r.Messages[i].DeclaresTools()
	}
	plain := !special && !declared
	for i := range r.Tools {
		if t := &r.Tools[i]; t.Kind != hippocam.ToolFunction || t.Namespace != "" || len(t.Raw) > 0 {
			plain = false
		}
	}
	if plain {
		return r
	}
	out := *r
	out.Tools = nil
	for _, t := range r.Tools {
		if u, ok := hippocam.UpstreamTool(t, hippocam.FormatChat); ok {
			out.Tools = append(out.Tools, u)
		}
	}
	out.ToolChoice = hippocam.UpstreamToolChoice(r.Tools, r.ToolChoice, hippocam.FormatChat)
	if special || declared {
		out.Messages = make([]hippocam.Message, 0, len(r.Messages))
		for _, m := range r.Messages {
			if m.DeclaresTools() {
				continue
			}
			if len(m.ToolCalls) > 0 {
				calls := make([]hippocam.ToolCall, len(m.ToolCalls))
				for j, c := range m.ToolCalls {
					calls[j] = hippocam.UpstreamCall(c)
				}
				m.ToolCalls = calls
			}
			out.Messages = append(out.Messages, m)
		}
	}
	return &out
}

// ToTool converts a wire tool definition to a domain tool.
func ToTool(d ToolDef) hippocam.Tool {
	return hippocam.Tool{Name: d.Function.Name, Description: d.Function.Description, Parameters: d.Function.Parameters}
}

// FromRequest builds the wire body of a domain request, as a chat-completions upstream receives
// it (see forChat).
func FromRequest(model string, r *hippocam.Request) (ChatRequest, error) {
	r = forChat(r)
	req := ChatRequest{Model: model}
	if len(r.Extra) > 0 {
		if err := json.Unmarshal(r.Extra, &req.Extra); err != nil {
			return req, fmt.Errorf("request extra fields: %w", err)
		}
	}
	var err error
	if req.Extra, err = withStructured(req.Extra, r); err != nil {
		return req, err
	}
	for i := range r.Messages {
		req.Messages = append(req.Messages, FromMessage(&r.Messages[i]))
	}
	for i := range r.Tools {
		req.Tools = append(req.Tools, FromTool(&r.Tools[i]))
	}
	switch r.ToolChoice {
	case "":
	case "auto", "none", "required":
		req.ToolChoice, _ = json.Marshal(r.ToolChoice)
	default:
		req.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": r.ToolChoice}})
	}
	if r.MaxTokens > 0 {
		n := r.MaxTokens
		req.MaxTokens = &n
	}
	return req, nil
}

// ToRequest reads a wire request into domain messages and tools (used by the simulated model
// and the proxy). EINVALID for messages it cannot read.
func ToRequest(req *ChatRequest) ([]hippocam.Message, []hippocam.Tool, error) {
	msgs := make([]hippocam.Message, 0, len(req.Messages))
	for i, c := range req.Messages {
		m, err := ToMessage(c)
		if err != nil {
			return nil, nil, hippocam.Errorf(hippocam.EINVALID, "messages[%d]: %s", i, hippocam.ErrorMessage(err))
		}
		msgs = append(msgs, m)
	}
	tools := make([]hippocam.Tool, 0, len(req.Tools))
	for i, d := range req.Tools {
		if d.Type != "" && d.Type != "function" {
			if t, err := otherTool(i, d); err == nil {
				tools = append(tools, t)
			}
			continue
		}
		tools = append(tools, ToTool(d))
	}
	return msgs, tools, nil
}

// hasContentExtra reports whether a chat message's extra fields keep its content verbatim.
func hasContentExtra(extra json.RawMessage) bool {
	var e map[string]json.RawMessage
	if len(extra) == 0 || json.Unmarshal(extra, &e) != nil {
		return false
	}
	_, ok := e["content"]
	return ok
}

// partsContent renders a message that came in another format as chat content parts: its text,
// then its images, audio and files. Parts the chat format cannot carry are left out.
func partsContent(m *hippocam.Message) json.RawMessage {
	var parts []any
	if m.Content != "" {
		parts = append(parts, map[string]string{"type": "text", "text": m.Content})
	}
	for _, p := range m.Parts {
		if p.Format == hippocam.FormatChat && p.Raw != "" {
			parts = append(parts, json.RawMessage(p.Raw))
			continue
		}
		switch p.Type {
		case hippocam.PartImage:
			url := p.URL
			if url == "" && p.Data != "" {
				url = "data:" + p.MediaType + ";base64," + p.Data
			}
			if url != "" {
				img := map[string]string{"url": url}
				if p.Detail != "" {
					img["detail"] = p.Detail
				}
				parts = append(parts, map[string]any{"type": "image_url", "image_url": img})
			}
		case hippocam.PartAudio:
			if p.Data != "" {
				format := strings.TrimPrefix(p.MediaType, "audio/")
				parts = append(parts, map[string]any{"type": "input_audio", "input_audio": map[string]string{"data": p.Data, "format": format}})
			}
		case hippocam.PartFile:
			f := map[string]string{}
			if p.FileID != "" {
				f["file_id"] = p.FileID
			} else if p.Data != "" {
				f["file_data"] = "data:" + p.MediaType + ";base64," + p.Data
			}
			if p.Name != "" {
				f["filename"] = p.Name
			}
			if len(f) > 0 {
				parts = append(parts, map[string]any{"type": "file", "file": f})
			}
		}
	}
	b, _ := json.Marshal(parts)
	return b
}
