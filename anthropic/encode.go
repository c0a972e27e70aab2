package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"unicode"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/jsonx"
	"github.com/hippocam/hippocam/internal/params"
)

// How the client renders a hippocam.Request (Complete and Stream):
//
//   - Messages that only declare tools (hippocam.Message.DeclaresTools) are left out: their
//     tools are the request's. Leading system messages become "system", one text block each.
//     A system message later in the conversation becomes a system turn in its place (its text
//     as one block) when the request carries BetaMidConversationSystem, or when it is the
//     agent's own call and the message arrived as such a turn (an Anthropic client sent it so,
//     whether or not it named the beta); else user text. Hippocam's own calls (JANUS, PRECIP,
//     PALIM) carry no client betas, so they always get user text.
//   - Tool messages become tool_result blocks of a user turn (content the text, or the text and
//     the parts as blocks; is_error when the message has a PartToolError part). Consecutive
//     messages of one role share one turn, so tool results and the user text that follows them
//     travel together, the tool results first, as the format requires.
//   - Assistant messages become their thinking parts, their text, their other parts and a
//     tool_use block per call (input the arguments, or {} when they are not a JSON object; a
//     call of a namespaced or custom tool as hippocam.UpstreamCall writes it).
//   - Tools as hippocam.UpstreamTool gives them: functions (a namespaced one under its flat name,
//     a custom one with a single string parameter), Anthropic's own tools as they were sent, the
//     tools of other providers left out; calls in the answer are given back with
//     hippocam.RestoreCalls.
//   - Parts become blocks: a part that came in Anthropic's format is sent as its bytes (without
//     any cache-control mark); images and files of other formats are built from their media
//     type and data, URL or file id; parts that cannot be rendered are dropped and logged.
//   - Text blocks that would hold only white space are left out (the API refuses them), and a
//     final assistant turn (a prefill) loses its trailing white space for the same reason.
//   - MaxTokens is max_tokens (Config.MaxTokens when it is 0). Extra goes through the parameter
//     table of its format (Params, applyExtra): from a Messages client every field is passed on;
//     from the OpenAI formats the shared settings are translated (temperature capped at 1, the
//     format's maximum; stop as stop_sequences; parallel_tool_calls false as
//     disable_parallel_tool_use; user as metadata.user_id) and the rest left out.
//   - Structured (a structured answer) becomes the only tool, named Structured.Name with the
//     schema as its input_schema, and tool_choice {"type":"tool","name":…}: the answer is the
//     tool_use block's input, given back as a call of that name.
//   - A request that offers no tools while its turns hold tool_use blocks (a JANUS, PRECIP or
//     PALIM request in prose reads the agent's exchanges; the API refuses tool blocks in a request
//     that defines no tools) declares each tool those blocks name, with an open schema and a
//     description saying it is not available, and tool_choice none (declareHistoryTools).
//   - Prompt caching (unless Config.NoPromptCache): cache_control {"type":"ephemeral"} on the
//     last system block, the last tool and the last block of each of the last two turns. The
//     engine only appends to a session's context, so these prefixes recur from call to call.

// requestBody encodes req for the wire.
func (c *Client) requestBody(req *hippocam.Request, stream bool) ([]byte, error) {
	if req == nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "anthropic: no request")
	}
	wr, err := c.buildRequest(req)
	if err != nil {
		return nil, err
	}
	wr.Stream = stream
	b, err := marshal(wr)
	if err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "anthropic: encode request: %v", err)
	}
	return b, nil
}

// buildRequest renders req as a Messages request.
func (c *Client) buildRequest(req *hippocam.Request) (*Request, error) {
	wr := &Request{Model: c.cfg.Model, MaxTokens: req.MaxTokens}
	if req.Model != "" {
		wr.Model = req.Model
	}
	msgs := req.Messages
	if slices.ContainsFunc(msgs, func(m hippocam.Message) bool { return m.DeclaresTools() }) {
		msgs = slices.DeleteFunc(slices.Clone(msgs), func(m hippocam.Message) bool { return m.DeclaresTools() })
	}
	for len(msgs) > 0 && msgs[0].Role == hippocam.RoleSystem {
		if !blank(msgs[0].Content) {
			wr.System = append(wr.System, Block{Type: BlockText, Text: msgs[0].Content})
		}
		msgs = msgs[1:]
	}
	agent := req.Role == "" || req.Role == hippocam.CallAgent
	wr.Messages = c.turns(msgs, slices.Contains(req.Betas, BetaMidConversationSystem), agent)
	if len(wr.Messages) == 0 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "anthropic: the request has no message with content")
	}
	if s := req.Structured; s != nil {
		// A structured answer is a forced call of a tool whose input is the answer; the
		// request offers nothing else.
		schema := s.Schema
		if firstByte(schema) != '{' {
			schema = json.RawMessage(defaultSchema)
		}
		wr.Tools = []Tool{{Name: s.Name, Description: s.Description, InputSchema: schema}}
		wr.ToolChoice = &ToolChoice{Type: toolChoiceTool, Name: s.Name}
	}
	for _, t := range req.Tools {
		if req.Structured != nil {
			break
		}
		u, ok := hippocam.UpstreamTool(t, hippocam.FormatAnthropic)
		if !ok {
			continue
		}
		if len(u.Raw) > 0 {
			wr.Tools = append(wr.Tools, Tool{Type: u.Type, Name: u.Name, Raw: u.Raw})
			continue
		}
		schema := u.Parameters
		if firstByte(schema) != '{' {
			schema = json.RawMessage(defaultSchema)
		}
		wr.Tools = append(wr.Tools, Tool{Name: u.Name, Description: u.Description, InputSchema: schema})
	}
	switch choice := hippocam.UpstreamToolChoice(req.Tools, req.ToolChoice, hippocam.FormatAnthropic); {
	case req.Structured != nil:
	case choice == "":
	case choice == "auto":
		wr.ToolChoice = &ToolChoice{Type: toolChoiceAuto}
	case choice == "none":
		wr.ToolChoice = &ToolChoice{Type: toolChoiceNone}
	case choice == "required":
		wr.ToolChoice = &ToolChoice{Type: toolChoiceAny}
	default:
		wr.ToolChoice = &ToolChoice{Type: toolChoiceTool, Name: choice}
	}
	if len(wr.Tools) == 0 {
		declareHistoryTools(wr)
	}
	if err := c.applyExtra(wr, req); err != nil {
		return nil, err
	}
	if wr.MaxTokens <= 0 {
		wr.MaxTokens = c.cfg.MaxTokens
	}
	if !c.cfg.NoPromptCache {
		markCache(wr)
	}
	return wr, nil
}

// turns renders the conversation after the system prompt as user and assistant turns, and its
// system messages as system turns in their place when systemTurns is set (the request names the
// beta), or when agent is (the agent's own call) and the message arrived as an Anthropic one.
func (c *Client) turns(msgs []hippocam.Message, systemTurns, agent bool) []Message {
	var out []Message
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.Role == hippocam.RoleAssistant:
			out = addTurn(out, roleAssistant, c.assistantBlocks(m))
		case m.Role == hippocam.RoleTool:
			out = addTurn(out, roleUser, []Block{c.toolResult(m)})
		case m.Role == hippocam.RoleSystem && len(out) > 0 && (systemTurns || agent && m.Origin != nil && m.Origin.Format == hippocam.FormatAnthropic):
			if !blank(m.Content) {
				out = addTurn(out, roleSystem, []Block{{Type: BlockText, Text: m.Content}})
			}
		default:
			out = addTurn(out, roleUser, c.userBlocks(m))
		}
	}
	if n := len(out); n > 0 && out[n-1].Role == roleAssistant {
		trimPrefill(&out[n-1])
	}
	return out
}

// addTurn adds blocks to the conversation: to the last turn when it has the same role (tool
// results after the tool results already there, before the rest), else as a new turn.
func addTurn(out []Message, role string, blocks []Block) []Message {
	if len(blocks) == 0 {
		return out
	}
	n := len(out)
	if n == 0 || out[n-1].Role != role {
		return append(out, Message{Role: role, Content: blocks})
	}
	last := &out[n-1]
	for _, b := range blocks {
		if b.Type != BlockToolResult {
			last.Content = append(last.Content, b)
			continue
		}
		at := 0
		for at < len(last.Content) && last.Content[at].Type == BlockToolResult {
			at++
		}
		last.Content = append(last.Content[:at], append(Content{b}, last.Content[at:]...)...)
	}
	return out
}

// trimPrefill removes the trailing white space of a final assistant turn, which the API refuses.
func trimPrefill(m *Message) {
	for j := len(m.Content) - 1; j >= 0; j-- {
		b := &m.Content[j]
		if b.Type != BlockText {
			return
		}
		if b.Text = strings.TrimRightFunc(b.Text, unicode.IsSpace); b.Text != "" {
			return
		}
		m.Content = append(m.Content[:j], m.Content[j+1:]...)
	}
}

// userBlocks renders a user message (or a system message inside the conversation): its parts,
// then its text, as the format advises for images.
func (c *Client) userBlocks(m *hippocam.Message) []Block {
	blocks := c.partBlocks(m.Parts, func(string) bool { return true })
	if !blank(m.Content) {
		blocks = append(blocks, Block{Type: BlockText, Text: m.Content})
	}
	return blocks
}

// assistantBlocks renders an assistant message: thinking, text, other parts, tool calls; or, for
// one that came in this format with the blocks of a server tool, its blocks in their own order
// (serverTurn).
func (c *Client) assistantBlocks(m *hippocam.Message) []Block {
	if blocks, ok := serverTurn(m); ok {
		return blocks
	}
	blocks := c.partBlocks(m.Parts, isThinking)
	if !blank(m.Content) {
		blocks = append(blocks, Block{Type: BlockText, Text: m.Content})
	}
	blocks = append(blocks, c.partBlocks(m.Parts, func(t string) bool { return !isThinking(t) })...)
	for _, call := range m.ToolCalls {
		call = hippocam.UpstreamCall(call)
		blocks = append(blocks, Block{Type: BlockToolUse, ID: call.ID, Name: call.Name, Input: c.toolInput(call)})
	}
	return blocks
}

// serverTurn returns the blocks of an assistant message that came in this format and holds the
// blocks of a server tool (server_tool_use, web_search_tool_result…), in the order they were
// sent (without cache marks or text blocks of only white space): the answer's text came after
// the results it cites, and a turn rebuilt in Hippocam's order would put it before them. It
// reports false for any other message.
func serverTurn(m *hippocam.Message) ([]Block, bool) {
	if m.Origin == nil || m.Origin.Format != hippocam.FormatAnthropic {
		return nil, false
	}
	if !serverBlocks(m.Parts) {
		return nil, false
	}
	var msg struct {
		Content []json.RawMessage `json:"content"`
	}
	if json.Unmarshal([]byte(m.Origin.Raw), &msg) != nil || len(msg.Content) == 0 {
		return nil, false
	}
	var blocks []Block
	for _, raw := range msg.Content {
		b, ok := rawBlock(hippocam.Part{Format: hippocam.FormatAnthropic, Raw: string(raw)})
		if !ok {
			return nil, false
		}
		if b.Type == BlockText && blank(b.Text) {
			continue
		}
		blocks = append(blocks, b)
	}
	return blocks, true
}

// serverBlocks reports whether parts hold a block of a server tool: a block in this format that
// is neither thinking nor an image, a document or the tool-error marker.
func serverBlocks(parts []hippocam.Part) bool {
	for _, p := range parts {
		if p.Format == hippocam.FormatAnthropic && !isThinking(p.Type) && p.Type != hippocam.PartImage && p.Type != hippocam.PartFile && p.Type != PartToolError {
			return true
		}
	}
	return false
}

// toolResult renders a tool message as a tool_result block.
func (c *Client) toolResult(m *hippocam.Message) Block {
	b := Block{Type: BlockToolResult, ToolUseID: m.ToolCallID}
	for _, p := range m.Parts {
		if p.Type == PartToolError {
			b.IsError = true
		}
	}
	parts := c.partBlocks(m.Parts, func(string) bool { return true })
	switch {
	case len(parts) == 0 && m.Content == "":
	case len(parts) == 0:
		b.Content, _ = marshal(m.Content)
	default:
		var content []Block
		if !blank(m.Content) {
			content = append(content, Block{Type: BlockText, Text: m.Content})
		}
		b.Content, _ = marshal(append(content, parts...))
	}
	return b
}

// isThinking reports whether a part type holds the model's thinking.
func isThinking(typ string) bool { return typ == PartThinking || typ == PartRedactedThinking }

// partBlocks renders the parts whose type keep accepts, dropping (and logging) those that
// cannot be rendered.
func (c *Client) partBlocks(parts []hippocam.Part, keep func(string) bool) []Block {
	var out []Block
	for _, p := range parts {
		if p.Type == PartToolError || !keep(p.Type) {
			continue
		}
		if b, ok := c.partBlock(p); ok {
			out = append(out, b)
		} else {
			c.log.Warn("dropped a message part the Messages API cannot carry", logPart, p.Type)
		}
	}
	return out
}

// partBlock renders one part as a block.
func (c *Client) partBlock(p hippocam.Part) (Block, bool) {
	if b, ok := rawBlock(p); ok {
		return b, true
	}
	var typ string
	switch p.Type {
	case hippocam.PartImage:
		typ = BlockImage
	case hippocam.PartFile:
		typ = BlockDocument
	default:
		return Block{}, false
	}
	src, ok := partSource(p)
	if !ok {
		return Block{}, false
	}
	b := Block{Type: typ, Source: src}
	if typ == BlockDocument {
		b.Title = p.Name
	}
	return b, true
}

// partSource builds the source of an image or file part from its data, URL or file id.
func partSource(p hippocam.Part) (*Source, bool) {
	data, mediaType := p.Data, p.MediaType
	if p.URL != "" && data == "" {
		rest, isData := strings.CutPrefix(p.URL, "data:")
		if !isData {
			return &Source{Type: sourceURL, URL: p.URL}, true
		}
		meta, payload, ok := strings.Cut(rest, ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return nil, false
		}
		data, mediaType = payload, strings.TrimSuffix(meta, ";base64")
	}
	switch {
	case data != "":
		raw, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, false
		}
		if mediaType == "" {
			mediaType = http.DetectContentType(raw)
			mediaType, _, _ = strings.Cut(mediaType, ";")
		}
		if p.Type == hippocam.PartFile && mediaType == mediaTypeText {
			return &Source{Type: sourceText, MediaType: mediaTypeText, Data: string(raw)}, true
		}
		return &Source{Type: sourceBase64, MediaType: mediaType, Data: data}, true
	case p.FileID != "":
		return &Source{Type: sourceFile, FileID: p.FileID}, true
	}
	return nil, false
}

// toolInput returns a call's arguments as the tool_use input: the arguments when they are a
// JSON object, else {} (logged unless the arguments were empty).
func (c *Client) toolInput(call hippocam.ToolCall) json.RawMessage {
	args := strings.TrimSpace(call.Arguments)
	if args == "" {
		return json.RawMessage(emptyInput)
	}
	if firstByte([]byte(args)) == '{' && json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	c.log.Warn("tool call arguments are not a JSON object; sending {}", logTool, call.Name)
	return json.RawMessage(emptyInput)
}

// blank reports whether s holds nothing but white space.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

// applyExtra sends the request's Extra fields through the parameter table of its ExtraFormat
// (Params), logs at debug level the fields the table leaves out, and puts the rest on wr: the
// fields Request declares decoded into it (a value of the wrong type is left out and logged),
// disable_parallel_tool_use on the tool choice, the others in wr.Extra. EINVALID when Extra is
// not a JSON object or comes in a format Hippocam does not read.
func (c *Client) applyExtra(wr *Request, req *hippocam.Request) error {
	if len(req.Extra) == 0 {
		return nil
	}
	table := Params(req.ExtraFormat)
	if table == nil {
		return hippocam.Errorf(hippocam.EINVALID, "anthropic: request fields of the unknown format %q", req.ExtraFormat)
	}
	var extra params.Fields
	if err := json.Unmarshal(req.Extra, &extra); err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "anthropic: request extra fields must be a JSON object: %v", err)
	}
	out, dropped := table.Apply(extra, params.Call{Model: wr.Model})
	drop := func(k string) {
		c.log.Debug("left out a request field the Messages API does not take from this format", logField, k, logFormat, string(table.From))
	}
	for _, k := range dropped {
		drop(k)
	}
	for _, k := range jsonx.SortedKeys(out) {
		v := out[k]
		var err error
		switch k {
		case "model", "max_tokens", "system", "messages", "tools", "tool_choice", "stream":
			err = errWritten // the encoder writes these from the domain request
		case "temperature":
			err = json.Unmarshal(v, &wr.Temperature)
		case "top_p":
			err = json.Unmarshal(v, &wr.TopP)
		case "top_k":
			err = json.Unmarshal(v, &wr.TopK)
		case "stop_sequences":
			err = json.Unmarshal(v, &wr.StopSequences)
		case "metadata":
			wr.Metadata = v
		case "thinking":
			wr.Thinking = v
		case "service_tier":
			err = json.Unmarshal(v, &wr.ServiceTier)
		case disableParallel:
			if string(v) == "true" && len(wr.Tools) > 0 {
				if wr.ToolChoice == nil {
					wr.ToolChoice = &ToolChoice{Type: toolChoiceAuto}
				}
				wr.ToolChoice.DisableParallelToolUse = wr.ToolChoice.Type != toolChoiceNone
			}
		default:
			if wr.Extra == nil {
				wr.Extra = Extra{}
			}
			wr.Extra[k] = v
		}
		if err != nil {
			drop(k)
		}
	}
	return nil
}

// errWritten marks an Extra field that names a member the encoder writes itself.
var errWritten = errors.New("written from the domain request")

// stopSequences reads a chat "stop" value: a string or an array of strings.
func stopSequences(v json.RawMessage) []string {
	var one string
	if json.Unmarshal(v, &one) == nil {
		if one == "" {
			return nil
		}
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(v, &many)
	return many
}

// markCache puts the prompt-cache breakpoints on the stable prefix: the last system block, the
// last tool and the last block that may carry a mark in each of the last two turns.
func markCache(wr *Request) {
	mark := func() *CacheControl { return &CacheControl{Type: cacheEphemeral} }
	if n := len(wr.System); n > 0 {
		wr.System[n-1].CacheControl = mark()
	}
	if n := len(wr.Tools); n > 0 {
		wr.Tools[n-1].CacheControl = mark()
	}
	for i := max(0, len(wr.Messages)-2); i < len(wr.Messages); i++ {
		content := wr.Messages[i].Content
		for j := len(content) - 1; j >= 0; j-- {
			if t := content[j].Type; t != BlockThinking && t != BlockRedactedThinking {
				content[j].CacheControl = mark()
				break
			}
		}
	}
}

// declareHistoryTools gives a request that defines no tools a declaration of every tool its
// tool_use blocks call, in the order first called, with tool_choice none: the Messages API
// refuses tool_use and tool_result blocks in a request without tools, and a role request in prose
// reads the agent's exchanges but may call nothing.
func declareHistoryTools(wr *Request) {
	seen := map[string]bool{}
	for _, m := range wr.Messages {
		for _, b := range m.Content {
			if b.Type == BlockToolUse && b.Name != "" && !seen[b.Name] {
				seen[b.Name] = true
				wr.Tools = append(wr.Tools, Tool{Name: b.Name, Description: "Called earlier in this conversation; not available in this request.", InputSchema: json.RawMessage(defaultSchema)})
			}
		}
	}
	if len(wr.Tools) > 0 {
		wr.ToolChoice = &ToolChoice{Type: toolChoiceNone}
	}
}
