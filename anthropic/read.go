package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// PartToolError is the type of the Part that marks a tool message whose tool_result block had
// "is_error": true. The part carries nothing else; the domain has no error flag on tool
// messages, and putting the flag in the text would change what other formats send. Adapters of
// other formats drop it like any part of a foreign format they cannot render.
const PartToolError = "tool_error"

// PartThinking and PartRedactedThinking are the types of the Parts that keep an assistant's
// thinking and redacted_thinking blocks (Format FormatAnthropic, Raw the block), so that they
// can be sent back to the provider as they came.
const (
	PartThinking         = BlockThinking
	PartRedactedThinking = BlockRedactedThinking
)

// opaqueBlock reports whether typ is a block type Hippocam knows but does not read: the
// provider's own tools and search results. Such blocks are kept as Parts of their own type with
// their bytes.
func opaqueBlock(typ string) bool {
	switch typ {
	case "search_result", "container_upload", "server_tool_use", "web_search_tool_result",
		"web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result",
		"text_editor_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result":
		return true
	}
	return false
}

// ReadRequest reads the body of a Messages request into a Conversation (Format
// FormatAnthropic, Store true).
//
//   - "system" becomes one framing message (RoleSystem) holding its text, text blocks joined
//     with "\n"; its Origin is the exact bytes of the "system" value.
//   - A message of role "system" (Anthropic's mid-conversation system messages) becomes one
//     RoleSystem message holding its text, in its place; system messages before any user or
//     assistant message join the framing after "system".
//   - Every message keeps, in Origin.Raw, the exact bytes it was sent as. An assistant message
//     becomes one RoleAssistant message: text blocks joined with "\n", tool_use blocks as
//     ToolCalls (Arguments the exact bytes of "input"), thinking, redacted_thinking and other
//     blocks as Parts with their bytes.
//   - A user message becomes one RoleTool message per tool_result block (ToolCallID its
//     tool_use_id, Content its text, its images and documents as Parts, a PartToolError part
//     when is_error is true), then one RoleUser message with the other blocks (text joined
//     with "\n", images and documents as Parts), left out when only tool results were sent.
//     When a message becomes several, the first carries the whole message's Origin; a later
//     tool message carries its tool_result block's bytes, and a later user message the JSON
//     array of its blocks, each block's exact bytes joined by commas.
//   - Tools become hippocam.Tools (Parameters the exact bytes of input_schema); a tool of
//     Anthropic's own type (web_search_20250305, bash_20250124…) becomes a ToolProvider tool
//     with its type and exact bytes; tool_choice becomes "auto", "required" (any), "none" or
//     the tool's name, and a true disable_parallel_tool_use is kept in Extra as
//     "disable_parallel_tool_use": true.
//   - Extra holds the members Hippocam does not interpret, verbatim, under their own names
//     (stop_sequences, temperature, top_p, top_k, metadata, thinking, service_tier, unknown
//     members), for the upstream adapter to translate (Params).
//
// Cache-control marks are not kept: the upstream adapter places its own.
//
// Errors are EINVALID, with a message that names where: a body that fails hippocam.CheckText
// or is not a JSON object, max_tokens missing or below 1, no user or assistant message, a role
// other than user, assistant or system, a system message with blocks other than text, content that is neither a string nor an array of blocks, an unknown block type
// or one in the wrong role, a tool_use without id or name, a tool_result without tool_use_id,
// an image or document without a source, a tool without a name, and a
// member of the wrong JSON type.
func ReadRequest(body []byte) (*hippocam.Conversation, error) {
	if err := hippocam.CheckText(body); err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil || members == nil {
		msg := "the body is not a JSON object"
		if err != nil {
			msg += ": " + err.Error()
		}
		return nil, invalid("%s", msg)
	}
	conv := &hippocam.Conversation{Format: hippocam.FormatAnthropic, Store: true}
	extra := Extra{}
	for _, step := range []func(map[string]json.RawMessage, *hippocam.Conversation, Extra) error{
		readModel, readMaxTokens, readSystem, readMessages, readTools, readToolChoice, readStream,
	} {
		if err := step(members, conv, extra); err != nil {
			return nil, err
		}
	}
	for k, v := range members {
		switch k {
		case "model", "max_tokens", "system", "messages", "tools", "tool_choice", "stream":
		default:
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		o := newObject()
		o.extra(extra)
		b, err := o.close()
		if err != nil {
			return nil, invalid("%v", err)
		}
		conv.Extra = b
	}
	return conv, nil
}

// invalid returns an EINVALID error.
func invalid(format string, args ...any) error {
	return hippocam.Errorf(hippocam.EINVALID, format, args...)
}

func readModel(m map[string]json.RawMessage, conv *hippocam.Conversation, _ Extra) error {
	if v, ok := m["model"]; ok && json.Unmarshal(v, &conv.Model) != nil {
		return invalid("model: must be a string")
	}
	return nil
}

func readMaxTokens(m map[string]json.RawMessage, conv *hippocam.Conversation, _ Extra) error {
	v, ok := m["max_tokens"]
	if !ok || string(v) == "null" {
		return invalid("max_tokens: required, the most tokens the answer may take (at least 1)")
	}
	var n int
	if err := json.Unmarshal(v, &n); err != nil {
		return invalid("max_tokens: must be an integer, not %s", shorten(string(v), 40))
	}
	if n < 1 {
		return invalid("max_tokens: must be at least 1, not %d", n)
	}
	conv.MaxTokens = n
	return nil
}

func readStream(m map[string]json.RawMessage, conv *hippocam.Conversation, _ Extra) error {
	if v, ok := m["stream"]; ok && string(v) != "null" && json.Unmarshal(v, &conv.Stream) != nil {
		return invalid("stream: must be true or false")
	}
	return nil
}

// readSystem reads "system", a string or an array of text blocks, into one framing message.
func readSystem(m map[string]json.RawMessage, conv *hippocam.Conversation, _ Extra) error {
	v, ok := m["system"]
	if !ok || string(v) == "null" {
		return nil
	}
	var text string
	switch firstByte(v) {
	case '"':
		if err := json.Unmarshal(v, &text); err != nil {
			return invalid("system: %v", err)
		}
	case '[':
		var raws []json.RawMessage
		if err := json.Unmarshal(v, &raws); err != nil {
			return invalid("system: %v", err)
		}
		texts := make([]string, 0, len(raws))
		for i, raw := range raws {
			var b Block
			if err := json.Unmarshal(raw, &b); err != nil {
				return invalid("system[%d]: %v", i, err)
			}
			if b.Type != BlockText {
				return invalid("system[%d]: the system prompt holds only text blocks, not %q", i, b.Type)
			}
			texts = append(texts, b.Text)
		}
		text = strings.Join(texts, "\n")
		if len(raws) == 0 {
			return nil
		}
	default:
		return invalid("system: must be a string or an array of text blocks")
	}
	conv.Framing = []hippocam.Message{{
		Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: text,
		Origin: &hippocam.Origin{Format: hippocam.FormatAnthropic, Raw: string(v)},
	}}
	return nil
}

// readMessages reads "messages".
func readMessages(m map[string]json.RawMessage, conv *hippocam.Conversation, _ Extra) error {
	v, ok := m["messages"]
	if !ok || string(v) == "null" {
		return invalid("messages: at least one message is required")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(v, &raws); err != nil {
		return invalid("messages: must be an array of messages")
	}
	if len(raws) == 0 {
		return invalid("messages: at least one message is required")
	}
	for i, raw := range raws {
		msgs, err := readMessage(fmt.Sprintf("messages[%d]", i), raw)
		if err != nil {
			return err
		}
		if len(conv.Messages) == 0 && msgs[0].Role == hippocam.RoleSystem {
			conv.Framing = append(conv.Framing, msgs[0]) // before any turn: framing, as "system"
			continue
		}
		conv.Messages = append(conv.Messages, msgs...)
	}
	if len(conv.Messages) == 0 {
		return invalid("messages: at least one user or assistant message is required")
	}
	return nil
}

// readSystemMessage reads a system message of "messages" (content a string or text blocks) into
// one RoleSystem message.
func readSystemMessage(path string, content json.RawMessage, origin *hippocam.Origin) (hippocam.Message, error) {
	m := hippocam.Message{Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Origin: origin}
	switch firstByte(content) {
	case '"':
		if err := json.Unmarshal(content, &m.Content); err != nil {
			return m, invalid("%s: %v", path, err)
		}
		return m, nil
	case '[':
	case 0:
		return m, invalid("%s: required", path)
	default:
		return m, invalid("%s: must be a string or an array of text blocks", path)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(content, &raws); err != nil {
		return m, invalid("%s: %v", path, err)
	}
	texts := make([]string, 0, len(raws))
	for i, raw := range raws {
		var b Block
		if err := json.Unmarshal(raw, &b); err != nil {
			return m, invalid("%s[%d]: %v", path, i, err)
		}
		if b.Type != BlockText {
			return m, invalid("%s[%d]: a system message holds only text blocks, not %q", path, i, b.Type)
		}
		texts = append(texts, b.Text)
	}
	m.Content = strings.Join(texts, "\n")
	return m, nil
}

// readMessage reads one message into the domain messages it becomes.
func readMessage(path string, raw json.RawMessage) ([]hippocam.Message, error) {
	var wm struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if firstByte(raw) != '{' {
		return nil, invalid("%s: must be an object with role and content", path)
	}
	if err := json.Unmarshal(raw, &wm); err != nil {
		return nil, invalid("%s: %v", path, err)
	}
	if wm.Role == nil {
		return nil, invalid("%s.role: required", path)
	}
	origin := &hippocam.Origin{Format: hippocam.FormatAnthropic, Raw: string(raw)}
	switch *wm.Role {
	case roleUser, roleAssistant:
	case roleSystem:
		m, err := readSystemMessage(path+".content", wm.Content, origin)
		if err != nil {
			return nil, err
		}
		return []hippocam.Message{m}, nil
	default:
		return nil, invalid("%s.role: must be \"user\", \"assistant\" or \"system\", not %q", path, *wm.Role)
	}
	role := hippocam.RoleUser
	if *wm.Role == roleAssistant {
		role = hippocam.RoleAssistant
	}
	switch firstByte(wm.Content) {
	case '"':
		var s string
		if err := json.Unmarshal(wm.Content, &s); err != nil {
			return nil, invalid("%s.content: %v", path, err)
		}
		return []hippocam.Message{{Role: role, Kind: hippocam.KindRaw, Content: s, Origin: origin}}, nil
	case '[':
	case 0:
		return nil, invalid("%s.content: required", path)
	default:
		return nil, invalid("%s.content: must be a string or an array of content blocks", path)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(wm.Content, &raws); err != nil {
		return nil, invalid("%s.content: %v", path, err)
	}
	if role == hippocam.RoleAssistant {
		msg, err := readAssistant(path+".content", raws)
		if err != nil {
			return nil, err
		}
		msg.Origin = origin
		return []hippocam.Message{msg}, nil
	}
	return readUser(path+".content", raws, origin)
}

// readAssistant reads the blocks of an assistant message.
func readAssistant(path string, raws []json.RawMessage) (hippocam.Message, error) {
	msg := hippocam.Message{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw}
	var texts []string
	for j, raw := range raws {
		p := fmt.Sprintf("%s[%d]", path, j)
		b, err := readBlock(p, raw)
		if err != nil {
			return msg, err
		}
		switch b.Type {
		case BlockText:
			texts = append(texts, b.Text)
		case BlockToolUse:
			if b.ID == "" || b.Name == "" {
				return msg, invalid("%s: a tool_use block needs an id and a name", p)
			}
			args := string(b.Input)
			if args == "" {
				args = emptyInput
			}
			msg.ToolCalls = append(msg.ToolCalls, hippocam.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		case BlockThinking, BlockRedactedThinking:
			msg.Parts = append(msg.Parts, opaquePart(b.Type, raw))
		case BlockToolResult:
			return msg, invalid("%s: a tool_result block belongs in a user message", p)
		default:
			part, err := contentPart(p, b, raw)
			if err != nil {
				return msg, err
			}
			msg.Parts = append(msg.Parts, part)
		}
	}
	msg.Content = strings.Join(texts, "\n")
	return msg, nil
}

// readUser reads the blocks of a user message: tool results first, as tool messages, then the
// rest as one user message.
func readUser(path string, raws []json.RawMessage, origin *hippocam.Origin) ([]hippocam.Message, error) {
	var out []hippocam.Message
	user := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindRaw}
	var texts []string
	var rest [][]byte
	for j, raw := range raws {
		p := fmt.Sprintf("%s[%d]", path, j)
		b, err := readBlock(p, raw)
		if err != nil {
			return nil, err
		}
		switch b.Type {
		case BlockToolResult:
			tm, err := readToolResult(p, b)
			if err != nil {
				return nil, err
			}
			tm.Origin = &hippocam.Origin{Format: hippocam.FormatAnthropic, Raw: string(raw)}
			out = append(out, tm)
			continue
		case BlockText:
			texts = append(texts, b.Text)
		case BlockToolUse, BlockThinking, BlockRedactedThinking:
			return nil, invalid("%s: a %s block belongs in an assistant message", p, b.Type)
		default:
			part, err := contentPart(p, b, raw)
			if err != nil {
				return nil, err
			}
			user.Parts = append(user.Parts, part)
		}
		rest = append(rest, raw)
	}
	if len(rest) > 0 || len(out) == 0 {
		user.Content = strings.Join(texts, "\n")
		user.Origin = &hippocam.Origin{Format: hippocam.FormatAnthropic, Raw: "[" + string(bytes.Join(rest, []byte(","))) + "]"}
		out = append(out, user)
	}
	out[0].Origin = origin
	return out, nil
}

// readToolResult reads a tool_result block into a tool message (without its Origin).
func readToolResult(path string, b Block) (hippocam.Message, error) {
	tm := hippocam.Message{Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: b.ToolUseID}
	if b.ToolUseID == "" {
		return tm, invalid("%s: a tool_result block needs a tool_use_id", path)
	}
	switch firstByte(b.Content) {
	case 0:
	case '"':
		if err := json.Unmarshal(b.Content, &tm.Content); err != nil {
			return tm, invalid("%s.content: %v", path, err)
		}
	case '[':
		var raws []json.RawMessage
		if err := json.Unmarshal(b.Content, &raws); err != nil {
			return tm, invalid("%s.content: %v", path, err)
		}
		var texts []string
		for k, raw := range raws {
			p := fmt.Sprintf("%s.content[%d]", path, k)
			nb, err := readBlock(p, raw)
			if err != nil {
				return tm, err
			}
			switch nb.Type {
			case BlockText:
				texts = append(texts, nb.Text)
			case BlockImage, BlockDocument, "search_result":
				part, err := contentPart(p, nb, raw)
				if err != nil {
					return tm, err
				}
				tm.Parts = append(tm.Parts, part)
			default:
				return tm, invalid("%s: a tool result holds text, image, document and search_result blocks, not %q", p, nb.Type)
			}
		}
		tm.Content = strings.Join(texts, "\n")
	default:
		if string(b.Content) != "null" {
			return tm, invalid("%s.content: must be a string or an array of content blocks", path)
		}
	}
	if b.IsError {
		tm.Parts = append(tm.Parts, hippocam.Part{Type: PartToolError, Format: hippocam.FormatAnthropic})
	}
	return tm, nil
}

// readBlock decodes one content block and checks that its type is one Hippocam knows.
func readBlock(path string, raw json.RawMessage) (Block, error) {
	var b Block
	if firstByte(raw) != '{' {
		return b, invalid("%s: a content block must be an object", path)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return b, invalid("%s: %v", path, err)
	}
	switch {
	case b.Type == "":
		return b, invalid("%s: a content block needs a type", path)
	case blockFields(b.Type) == nil && !opaqueBlock(b.Type):
		return b, invalid("%s: unknown content block type %q", path, b.Type)
	}
	return b, nil
}

// contentPart converts an image, document or opaque block to a Part holding its bytes.
func contentPart(path string, b Block, raw json.RawMessage) (hippocam.Part, error) {
	if b.Type != BlockImage && b.Type != BlockDocument {
		return opaquePart(b.Type, raw), nil
	}
	if b.Source == nil {
		return hippocam.Part{}, invalid("%s.source: an %s block needs a source", path, b.Type)
	}
	p := hippocam.Part{Type: hippocam.PartImage, Format: hippocam.FormatAnthropic, Raw: string(raw), MediaType: b.Source.MediaType}
	if b.Type == BlockDocument {
		p.Type, p.Name = hippocam.PartFile, b.Title
	}
	switch b.Source.Type {
	case sourceBase64:
		p.Data = b.Source.Data
	case sourceURL:
		p.URL = b.Source.URL
	case sourceFile:
		p.FileID = b.Source.FileID
	case sourceText:
		// Part.Data is base64 in every format; a plain-text document is encoded to fit.
		p.Data = base64.StdEncoding.EncodeToString([]byte(b.Source.Data))
		if p.MediaType == "" {
			p.MediaType = mediaTypeText
		}
	}
	return p, nil
}

// opaquePart keeps a block Hippocam does not read as a Part of its own type.
func opaquePart(typ string, raw json.RawMessage) hippocam.Part {
	return hippocam.Part{Type: typ, Format: hippocam.FormatAnthropic, Raw: string(raw)}
}

// readTools reads "tools".
func readTools(m map[string]json.RawMessage, conv *hippocam.Conversation, _ Extra) error {
	v, ok := m["tools"]
	if !ok || string(v) == "null" {
		return nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(v, &raws); err != nil {
		return invalid("tools: must be an array of tools")
	}
	for i, raw := range raws {
		var t Tool
		if firstByte(raw) != '{' {
			return invalid("tools[%d]: a tool must be an object", i)
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return invalid("tools[%d]: %v", i, err)
		}
		if t.Name == "" {
			return invalid("tools[%d]: a tool needs a name", i)
		}
		if t.Type != "" && t.Type != toolTypeCustom {
			// A tool of Anthropic's own: a server tool (web_search_*, web_fetch_*,
			// code_execution_*…) or one it defines for the client (bash_*, text_editor_*…).
			conv.Tools = append(conv.Tools, hippocam.Tool{Name: t.Name, Kind: hippocam.ToolProvider, Type: t.Type,
				Format: hippocam.FormatAnthropic, Raw: bytes.Clone(raw)})
			continue
		}
		conv.Tools = append(conv.Tools, hippocam.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return nil
}

// readToolChoice reads "tool_choice".
func readToolChoice(m map[string]json.RawMessage, conv *hippocam.Conversation, extra Extra) error {
	v, ok := m["tool_choice"]
	if !ok || string(v) == "null" {
		return nil
	}
	var tc ToolChoice
	if firstByte(v) != '{' || json.Unmarshal(v, &tc) != nil {
		return invalid(`tool_choice: must be an object such as {"type":"auto"}`)
	}
	switch tc.Type {
	case toolChoiceAuto:
		conv.ToolChoice = "auto"
	case toolChoiceAny:
		conv.ToolChoice = "required"
	case toolChoiceNone:
		conv.ToolChoice = "none"
	case toolChoiceTool:
		if tc.Name == "" {
			return invalid(`tool_choice.name: required when the type is "tool"`)
		}
		conv.ToolChoice = tc.Name
	default:
		return invalid(`tool_choice.type: must be "auto", "any", "tool" or "none", not %q`, tc.Type)
	}
	if tc.DisableParallelToolUse {
		extra[disableParallel] = json.RawMessage("true")
	}
	return nil
}

// firstByte returns the first byte of v that is not white space, or 0.
func firstByte(v []byte) byte {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return 0
	}
	return v[0]
}

// shorten cuts s to at most n bytes, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
