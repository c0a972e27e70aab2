package wire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// This file holds the request side of OpenAI's Responses API (POST /v1/responses) and its reading
// into a hippocam.Conversation. The response side and the event stream are in
// responses_stream.go.

// PartReasoning is the type of the hippocam.Part that carries a Responses reasoning item. Such an
// item is opaque to Hippocam (its content may be encrypted); it rides, byte for byte in Raw, on
// the assistant message that it preceded. The items of provider tools ride the same way, as
// parts of their own item type.
const PartReasoning = "reasoning"

// ResponsesRequest is the body of POST /v1/responses. Input, Instructions and ToolChoice are kept
// raw because each has several shapes; the fields Hippocam only passes on (temperature, text,
// reasoning…) are kept raw too, so that they go on exactly as sent. Fields the type does not
// declare are kept in Extra and written back unchanged.
type ResponsesRequest struct {
	Model string `json:"model,omitempty"`
	// Input is a JSON string (one user message) or an array of input items.
	Input        json.RawMessage `json:"input,omitempty"`
	Instructions json.RawMessage `json:"instructions,omitempty"`
	Tools        []ResponsesTool `json:"tools,omitempty"`
	// ToolChoice is "auto", "none", "required" or {"type":"function","name":…}.
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	Stream     bool            `json:"stream,omitempty"`
	// StreamOptions shapes the event stream, which Hippocam writes itself: it is not passed on.
	StreamOptions json.RawMessage `json:"stream_options,omitempty"`
	// Store is nil when not given, which means true.
	Store              *bool           `json:"store,omitempty"`
	PreviousResponseID string          `json:"previous_response_id,omitempty"`
	MaxOutputTokens    *int            `json:"max_output_tokens,omitempty"`
	Temperature        json.RawMessage `json:"temperature,omitempty"`
	TopP               json.RawMessage `json:"top_p,omitempty"`
	ParallelToolCalls  json.RawMessage `json:"parallel_tool_calls,omitempty"`
	Metadata           json.RawMessage `json:"metadata,omitempty"`
	Text               json.RawMessage `json:"text,omitempty"`
	Reasoning          json.RawMessage `json:"reasoning,omitempty"`
	Truncation         json.RawMessage `json:"truncation,omitempty"`
	User               json.RawMessage `json:"user,omitempty"`
	Include            json.RawMessage `json:"include,omitempty"`
	Extra              Extra           `json:"-"`
}

type responsesRequest ResponsesRequest

// UnmarshalJSON reads a request body, keeping unknown fields in Extra. It returns encoding/json's
// errors for text that is not JSON or has the wrong shape.
func (r *ResponsesRequest) UnmarshalJSON(b []byte) error {
	var a responsesRequest
	extra, err := decodeSlow(b, &a)
	if err != nil {
		return err
	}
	*r = ResponsesRequest(a)
	r.Extra = extra
	return nil
}

// MarshalJSON writes the request with its Extra fields. It fails only on a raw field that is not
// valid JSON.
func (r ResponsesRequest) MarshalJSON() ([]byte, error) {
	return encodeSlow(responsesRequest(r), r.Extra)
}

// ResponsesTool is a tool of a Responses request or response: a function (flat,
// {"type":"function","name":…}, unlike chat's nested "function"), a custom tool (Format its
// input format), a namespace (Tools the functions and custom tools it groups), or a tool the
// provider runs (web_search, file_search, mcp…), whose other fields stay in Extra. Raw, when
// set, is the tool's exact bytes: a tool read from JSON keeps them and is written back as them.
type ResponsesTool struct {
	Type        string            `json:"type"`
	Name        string            `json:"name,omitempty"`
	Description string            `json:"description,omitempty"`
	Parameters  json.RawMessage   `json:"parameters,omitempty"`
	Strict      *bool             `json:"strict,omitempty"`
	Format      json.RawMessage   `json:"format,omitempty"`
	Tools       []json.RawMessage `json:"tools,omitempty"`
	Extra       Extra             `json:"-"`
	Raw         json.RawMessage   `json:"-"`
}

type responsesTool ResponsesTool

// UnmarshalJSON reads a tool, keeping unknown fields in Extra. It returns encoding/json's errors.
func (t *ResponsesTool) UnmarshalJSON(b []byte) error {
	var a responsesTool
	extra, err := decodeSlow(b, &a)
	if err != nil {
		return err
	}
	*t = ResponsesTool(a)
	t.Extra = extra
	t.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes Raw when set; otherwise the tool with its Extra fields, leaving out the
// fields that are unset.
func (t ResponsesTool) MarshalJSON() ([]byte, error) {
	if len(t.Raw) > 0 {
		return t.Raw, nil
	}
	return encodeSlow(responsesTool(t), t.Extra)
}

// InputItem is one item of a Responses input, read for its meaning: a message (type "message",
// or no type and a role), a function_call, a function_call_output or a reasoning item. The exact
// bytes of the item stay in the request's Input; this view does not keep unknown fields.
type InputItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Role   string `json:"role"`
	Status string `json:"status"`
	// Content is a message's content: a JSON string or an array of content parts.
	Content json.RawMessage `json:"content"`
	// CallID, Name and Arguments are a function_call's; CallID and Output a function_call_output's
	// (Output is a JSON string or an array of content parts).
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	// Namespace is a function_call's or a custom_tool_call's; Input a custom_tool_call's.
	Namespace string `json:"namespace"`
	Input     string `json:"input"`
}

// ContentPart is one part of a message's content or of a function call's output, read for its
// meaning; its exact bytes stay in the request. Text is input_text's and output_text's; ImageURL,
// FileID and Detail are input_image's; FileData, FileURL, FileID and Filename input_file's;
// InputAudio input_audio's; Refusal a refusal's.
type ContentPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text"`
	ImageURL   string      `json:"image_url"`
	FileID     string      `json:"file_id"`
	Detail     string      `json:"detail"`
	FileData   string      `json:"file_data"`
	FileURL    string      `json:"file_url"`
	Filename   string      `json:"filename"`
	InputAudio *InputAudio `json:"input_audio"`
	Refusal    string      `json:"refusal"`
}

// InputAudio is the audio of an input_audio part: base64 data in a format ("mp3", "wav").
type InputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// ReadResponsesRequest reads the body of POST /v1/responses into a conversation.
//
// The instructions become a framing message (role system, Origin.Raw the JSON string as sent);
// so do the leading system and developer messages of the input (Origin.Raw the item, so that
// "developer" stays recoverable). The rest become Messages, each with Origin{FormatResponses,
// Raw} holding the exact bytes of the item it came from; a string input is one user message whose
// Raw is the JSON string. Consecutive assistant items (an assistant message, then function_call
// items, and the reasoning items before or among them) form one assistant message whose Raw is a
// JSON array of those items' bytes joined by ","; a reasoning item with no assistant item after
// it joins the assistant message before it, or else becomes an assistant message of its own with
// only that part. See Conversation for the request fields.
//
// Items of other types than message, function_call, custom_tool_call and their outputs
// (reasoning, web_search_call, mcp_call, compaction…) are kept opaque, byte for byte: like a
// reasoning item, each rides as a Part of its own type on the assistant turn it belongs to. An
// additional_tools item (Codex declares its tools so) adds its tools to the request's and is
// kept as a message that only declares tools (hippocam.PartTools), where it stands.
//
// It returns EINVALID, naming where (e.g. `input[3].content[0]: unknown content part type
// "nonsense"`), for text CheckText refuses, a body that is not a JSON object of the right shape,
// an empty input, unknown part types, unknown roles, a tool without a type, a function or
// custom tool without a name, a namespace without a name or holding other tools (in "tools" or
// in an additional_tools item, which also needs its tools array), a call item
// without call_id or name, an output item without call_id or output, an item_reference, and a
// tool_choice that is an unknown string or an object without a type or a needed name.
func ReadResponsesRequest(body []byte) (*hippocam.Conversation, error) {
	if err := hippocam.CheckText(body); err != nil {
		return nil, err
	}
	var req ResponsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "the body is not a valid Responses request: %v", err)
	}
	return req.Conversation()
}

// Conversation reads the request into a conversation (see ReadResponsesRequest). Model, Stream,
// MaxTokens (max_output_tokens), Store (true unless "store": false), Previous
// (previous_response_id), Tools and ToolChoice ("", "auto", "none", "required" or the function's
// name) are read; every other field goes verbatim into Extra under its own Responses name
// (temperature, text, reasoning, truncation, client_metadata…), for the upstream adapter to
// translate, except stream_options, which shapes the stream Hippocam writes itself. Errors as
// ReadResponsesRequest.
func (r *ResponsesRequest) Conversation() (*hippocam.Conversation, error) {
	conv := &hippocam.Conversation{
		Format:   hippocam.FormatResponses,
		Model:    r.Model,
		Stream:   r.Stream,
		Store:    r.Store == nil || *r.Store,
		Previous: r.PreviousResponseID,
	}
	if r.MaxOutputTokens != nil {
		if *r.MaxOutputTokens < 0 {
			return nil, hippocam.Errorf(hippocam.EINVALID, "max_output_tokens: must not be negative")
		}
		conv.MaxTokens = *r.MaxOutputTokens
	}
	var err error
	if conv.Tools, err = readTools("tools", r.Tools); err != nil {
		return nil, err
	}
	if conv.ToolChoice, err = readToolChoice(r.ToolChoice); err != nil {
		return nil, err
	}
	if err := readInstructions(conv, r.Instructions); err != nil {
		return nil, err
	}
	if err := readInput(conv, r.Input); err != nil {
		return nil, err
	}
	restrictTools(conv, r.ToolChoice) // after the input, whose additional_tools items add tools
	conv.Extra = r.passOn()
	return conv, nil
}

// passOn returns the fields Hippocam does not interpret, as one JSON object whose values are the
// bytes sent, or nil when there are none.
func (r *ResponsesRequest) passOn() json.RawMessage {
	extra := Extra{}
	for k, v := range r.Extra {
		extra[k] = v
	}
	for k, v := range map[string]json.RawMessage{
		"temperature": r.Temperature, "top_p": r.TopP, "parallel_tool_calls": r.ParallelToolCalls,
		"metadata": r.Metadata, "text": r.Text, "reasoning": r.Reasoning, "truncation": r.Truncation,
		"user": r.User, "include": r.Include,
	} {
		if len(v) > 0 {
			extra[k] = v
		}
	}
	if len(extra) == 0 {
		return nil
	}
	b, err := encodeSlow(struct{}{}, extra) // raw values, keys in order, nothing re-encoded
	if err != nil {
		return nil
	}
	return b
}

// readTools converts the request's tools: functions, custom tools, the functions and custom
// tools of namespaces (each with its Namespace, Raw the namespace's bytes), and every other type
// as a provider tool named by its name or else its type, kept byte for byte.
func readTools(where string, tools []ResponsesTool) ([]hippocam.Tool, error) {
	var out []hippocam.Tool
	for i, t := range tools {
		at := fmt.Sprintf("%s[%d]", where, i)
		switch t.Type {
		case "function", "custom":
			tool, err := readTool(at, &t, "", nil)
			if err != nil {
				return nil, err
			}
			out = append(out, tool)
		case "namespace":
			if t.Name == "" {
				return nil, hippocam.Errorf(hippocam.EINVALID, "%s: a namespace needs a name", at)
			}
			for j, raw := range t.Tools {
				var inner ResponsesTool
				if err := json.Unmarshal(raw, &inner); err != nil {
					return nil, hippocam.Errorf(hippocam.EINVALID, "%s.tools[%d]: %v", at, j, err)
				}
				if inner.Type != "function" && inner.Type != "custom" {
					return nil, hippocam.Errorf(hippocam.EINVALID, "%s.tools[%d]: a namespace holds function and custom tools, not %q", at, j, inner.Type)
				}
				tool, err := readTool(fmt.Sprintf("%s.tools[%d]", at, j), &inner, t.Name, t.Raw)
				if err != nil {
					return nil, err
				}
				out = append(out, tool)
			}
		case "":
			return nil, hippocam.Errorf(hippocam.EINVALID, "%s: a tool needs a type", at)
		default:
			name := t.Name
			if name == "" {
				name = t.Type
			}
			out = append(out, hippocam.Tool{Name: name, Description: t.Description, Kind: hippocam.ToolProvider, Type: t.Type,
				Format: hippocam.FormatResponses, Raw: t.Raw})
		}
	}
	return out, nil
}

// readTool reads a function or custom tool, of namespace ns (whose bytes are group) or of none.
func readTool(at string, t *ResponsesTool, ns string, group json.RawMessage) (hippocam.Tool, error) {
	if t.Name == "" {
		return hippocam.Tool{}, hippocam.Errorf(hippocam.EINVALID, "%s: a %s tool needs a name", at, t.Type)
	}
	tool := hippocam.Tool{Name: t.Name, Description: t.Description, Namespace: ns}
	if ns != "" {
		tool.Format, tool.Raw = hippocam.FormatResponses, group
	}
	if t.Type == "custom" {
		tool.Kind, tool.Type, tool.Format = hippocam.ToolCustom, "custom", hippocam.FormatResponses
		if ns == "" {
			tool.Raw = t.Raw
		}
		if len(t.Format) > 0 && string(t.Format) != "null" {
			tool.Parameters = t.Format
		}
		return tool, nil
	}
	if string(t.Parameters) != "null" {
		tool.Parameters = t.Parameters
	}
	return tool, nil
}

// readToolChoice reads tool_choice into the domain's form: the strings, the name of a function
// or custom tool, the mode of allowed_tools (restrictTools applies its list); a choice of a tool the provider runs (web_search,
// file_search, mcp…), which no upstream of Hippocam's runs, is read as "auto".
func readToolChoice(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return s, nil
		}
		return "", hippocam.Errorf(hippocam.EINVALID, "tool_choice: unknown value %q; use auto, none, required or a function", s)
	}
	var f struct {
		Type string `json:"type"`
		Name string `json:"name"`
		Mode string `json:"mode"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", hippocam.Errorf(hippocam.EINVALID, "tool_choice: must be a string or an object")
	}
	switch f.Type {
	case "function", "custom":
		if f.Name == "" {
			return "", hippocam.Errorf(hippocam.EINVALID, "tool_choice: a %s choice needs a name", f.Type)
		}
		return f.Name, nil
	case "allowed_tools":
		if f.Mode == "required" {
			return "required", nil
		}
		return "auto", nil
	case "":
		return "", hippocam.Errorf(hippocam.EINVALID, "tool_choice: an object needs a type")
	}
	return "auto", nil
}

// readInstructions adds the instructions, when given and not empty, as the first framing message.
func readInstructions(conv *hippocam.Conversation, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "instructions: must be a string")
	}
	if s == "" {
		return nil
	}
	conv.Framing = append(conv.Framing, hippocam.Message{
		Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: s,
		Origin: &hippocam.Origin{Format: hippocam.FormatResponses, Raw: string(raw)},
	})
	return nil
}

// readInput reads the input, a string or an array of items, into the conversation's framing and
// messages.
func readInput(conv *hippocam.Conversation, raw json.RawMessage) error {
	empty := hippocam.Errorf(hippocam.EINVALID, "input: at least one item is required")
	if len(raw) == 0 || string(raw) == "null" {
		return empty
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return hippocam.Errorf(hippocam.EINVALID, "input: %v", err)
		}
		if s == "" {
			return empty
		}
		conv.Messages = append(conv.Messages, hippocam.Message{
			Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: s,
			Origin: &hippocam.Origin{Format: hippocam.FormatResponses, Raw: string(raw)},
		})
		return nil
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return hippocam.Errorf(hippocam.EINVALID, "input: %v", err)
		}
		if len(items) == 0 {
			return empty
		}
		rd := inputReader{conv: conv}
		for i, item := range items {
			if err := rd.item(i, item); err != nil {
				return err
			}
		}
		rd.flush()
		return nil
	}
	return hippocam.Errorf(hippocam.EINVALID, "input: must be a string or an array of items")
}

// inputReader turns input items into messages, gathering the items of one assistant turn.
type inputReader struct {
	conv *hippocam.Conversation
	// started is set once an item that is not a leading system or developer message has been
	// read: from then on such messages are transcript, not framing.
	started bool
	// turn is the assistant message being gathered, or nil; raws are its items' bytes. An
	// assistant message item always starts a new turn; function calls join the open one.
	turn *hippocam.Message
	raws []string
	// pending holds opaque items (reasoning, provider tool items) not yet placed: they go to
	// the next assistant item's turn.
	pending []opaqueItem
}

// opaqueItem is an input item kept as it is: its type and bytes.
type opaqueItem struct{ typ, raw string }

// item reads input item i.
func (rd *inputReader) item(i int, raw json.RawMessage) error {
	at := fmt.Sprintf("input[%d]", i)
	if raw[0] != '{' {
		return hippocam.Errorf(hippocam.EINVALID, "%s: an item must be an object", at)
	}
	var it InputItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "%s: %v", at, err)
	}
	typ := it.Type
	if typ == "" {
		switch {
		case it.Role != "":
			typ = "message"
		case it.ID != "":
			typ = "item_reference" // {"id":…} alone is a reference
		default:
			return hippocam.Errorf(hippocam.EINVALID, "%s: an item needs a type or a role", at)
		}
	}
	switch typ {
	case "message":
		return rd.message(at, &it, raw)
	case "function_call":
		return rd.functionCall(at, &it, raw)
	case "function_call_output":
		return rd.functionOutput(at, &it, raw)
	case "custom_tool_call":
		return rd.functionCall(at, &it, raw)
	case "custom_tool_call_output":
		return rd.functionOutput(at, &it, raw)
	case "additional_tools":
		return rd.additionalTools(at, raw)
	case "item_reference":
		return hippocam.Errorf(hippocam.EINVALID, "%s: item_reference is not supported; send the items", at)
	}
	// reasoning, and the items of the tools the provider runs (web_search_call, mcp_call,
	// local_shell_call and its output, image_generation_call, compaction…): opaque, kept byte
	// for byte on the assistant turn they belong to.
	rd.started = true
	rd.pending = append(rd.pending, opaqueItem{typ, string(raw)})
	return nil
}

// message reads a message item.
func (rd *inputReader) message(at string, it *InputItem, raw json.RawMessage) error {
	var role hippocam.Role
	switch it.Role {
	case "user":
		role = hippocam.RoleUser
	case "assistant":
		role = hippocam.RoleAssistant
	case "system", "developer":
		role = hippocam.RoleSystem
	case "":
		return hippocam.Errorf(hippocam.EINVALID, "%s: a message needs a role", at)
	default:
		return hippocam.Errorf(hippocam.EINVALID, "%s: unknown role %q", at, it.Role)
	}
	if len(it.Content) == 0 || string(it.Content) == "null" {
		return hippocam.Errorf(hippocam.EINVALID, "%s: a message needs content", at)
	}
	text, parts, err := readContent(at+".content", it.Content)
	if err != nil {
		return err
	}
	if role == hippocam.RoleAssistant {
		if rd.turn != nil {
			rd.emit() // an assistant message starts a new turn; pending reasoning goes with it
		}
		rd.begin()
		rd.turn.Content, rd.turn.Parts = text, append(rd.turn.Parts, parts...)
		rd.raws = append(rd.raws, string(raw))
		return nil
	}
	m := hippocam.Message{Role: role, Kind: hippocam.KindRaw, Content: text, Parts: parts,
		Origin: &hippocam.Origin{Format: hippocam.FormatResponses, Raw: string(raw)}}
	if role == hippocam.RoleSystem && !rd.started {
		rd.conv.Framing = append(rd.conv.Framing, m)
		return nil
	}
	rd.flush()
	rd.started = true
	rd.conv.Messages = append(rd.conv.Messages, m)
	return nil
}

// additionalTools reads an additional_tools item, with which Codex declares its tools within the
// input instead of in "tools": its tools join the conversation's, read as "tools" is, and the
// item is kept where it stands as a message that only declares tools (hippocam.PartTools): in
// the framing while no transcript item came before it, in the transcript after. It does not
// start the transcript: the developer messages after a leading one are framing still.
func (rd *inputReader) additionalTools(at string, raw json.RawMessage) error {
	var item struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &item); err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "%s: %v", at, err)
	}
	if len(item.Tools) == 0 || item.Tools[0] != '[' {
		return hippocam.Errorf(hippocam.EINVALID, "%s: an additional_tools item needs a tools array", at)
	}
	var list []ResponsesTool
	if err := json.Unmarshal(item.Tools, &list); err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "%s.tools: %v", at, err)
	}
	tools, err := readTools(at+".tools", list)
	if err != nil {
		return err
	}
	rd.conv.Tools = append(rd.conv.Tools, tools...)
	m := hippocam.Message{Role: hippocam.RoleSystem, Kind: hippocam.KindRaw,
		Parts:  []hippocam.Part{{Type: hippocam.PartTools, Data: hippocam.CanonicalJSON(string(item.Tools)), Format: hippocam.FormatResponses, Raw: string(raw)}},
		Origin: &hippocam.Origin{Format: hippocam.FormatResponses, Raw: string(raw)}}
	if !rd.started {
		rd.conv.Framing = append(rd.conv.Framing, m)
		return nil
	}
	rd.flush()
	rd.conv.Messages = append(rd.conv.Messages, m)
	return nil
}

// functionCall reads a function_call or custom_tool_call item into the current assistant turn.
func (rd *inputReader) functionCall(at string, it *InputItem, raw json.RawMessage) error {
	if it.CallID == "" {
		return hippocam.Errorf(hippocam.EINVALID, "%s: a %s needs a call_id", at, it.Type)
	}
	if it.Name == "" {
		return hippocam.Errorf(hippocam.EINVALID, "%s: a %s needs a name", at, it.Type)
	}
	call := hippocam.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments, Namespace: it.Namespace}
	if it.Type == "custom_tool_call" {
		call.Kind, call.Arguments = hippocam.ToolCustom, it.Input
	}
	if rd.turn == nil {
		rd.begin()
	} else {
		rd.place()
	}
	rd.turn.ToolCalls = append(rd.turn.ToolCalls, call)
	rd.raws = append(rd.raws, string(raw))
	return nil
}

// functionOutput reads a function_call_output or custom_tool_call_output item as a tool
// message.
func (rd *inputReader) functionOutput(at string, it *InputItem, raw json.RawMessage) error {
	if it.CallID == "" {
		return hippocam.Errorf(hippocam.EINVALID, "%s: a %s needs a call_id", at, it.Type)
	}
	if len(it.Output) == 0 || string(it.Output) == "null" {
		return hippocam.Errorf(hippocam.EINVALID, "%s: a %s needs an output", at, it.Type)
	}
	text, parts, err := readContent(at+".output", it.Output)
	if err != nil {
		return err
	}
	rd.flush()
	rd.started = true
	rd.conv.Messages = append(rd.conv.Messages, hippocam.Message{
		Role: hippocam.RoleTool, Kind: hippocam.KindRaw, Content: text, Parts: parts, ToolCallID: it.CallID,
		Origin: &hippocam.Origin{Format: hippocam.FormatResponses, Raw: string(raw)},
	})
	return nil
}

// begin opens a new assistant turn and places the pending reasoning items on it.
func (rd *inputReader) begin() {
	rd.started = true
	rd.turn = &hippocam.Message{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw}
	rd.raws = nil
	rd.place()
}

// place moves the pending reasoning items onto the open turn, in order.
func (rd *inputReader) place() {
	for _, r := range rd.pending {
		rd.turn.Parts = append(rd.turn.Parts, hippocam.Part{Type: r.typ, Format: hippocam.FormatResponses, Raw: r.raw})
		rd.raws = append(rd.raws, r.raw)
	}
	rd.pending = nil
}

// flush ends the assistant turn, if any: pending reasoning joins it (or, with no turn open,
// becomes an assistant message of its own) and the message is added to the conversation.
func (rd *inputReader) flush() {
	if len(rd.pending) > 0 {
		if rd.turn == nil {
			rd.begin()
		} else {
			rd.place()
		}
	}
	if rd.turn != nil {
		rd.emit()
	}
}

// emit adds the open turn to the conversation. Its Origin.Raw is its one item's bytes, or a JSON
// array of its items' bytes.
func (rd *inputReader) emit() {
	raw := rd.raws[0]
	if len(rd.raws) > 1 {
		raw = "[" + strings.Join(rd.raws, ",") + "]"
	}
	rd.turn.Origin = &hippocam.Origin{Format: hippocam.FormatResponses, Raw: raw}
	rd.conv.Messages = append(rd.conv.Messages, *rd.turn)
	rd.turn, rd.raws = nil, nil
}

// readContent reads a message's content or a function call's output: a JSON string, or an array
// of parts whose text parts are joined by newlines and whose other parts become hippocam.Parts.
func readContent(at string, raw json.RawMessage) (string, []hippocam.Part, error) {
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", nil, hippocam.Errorf(hippocam.EINVALID, "%s: %v", at, err)
		}
		return s, nil, nil
	case '[':
	default:
		return "", nil, hippocam.Errorf(hippocam.EINVALID, "%s: must be a string or an array of parts", at)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return "", nil, hippocam.Errorf(hippocam.EINVALID, "%s: %v", at, err)
	}
	var texts []string
	var parts []hippocam.Part
	for j, pr := range raws {
		pat := fmt.Sprintf("%s[%d]", at, j)
		if pr[0] != '{' {
			return "", nil, hippocam.Errorf(hippocam.EINVALID, "%s: a content part must be an object", pat)
		}
		var p ContentPart
		if err := json.Unmarshal(pr, &p); err != nil {
			return "", nil, hippocam.Errorf(hippocam.EINVALID, "%s: %v", pat, err)
		}
		switch p.Type {
		case "input_text", "output_text":
			texts = append(texts, p.Text)
			continue
		case "refusal":
			texts = append(texts, p.Refusal) // what the assistant said, as text
			continue
		}
		part, err := readPart(pat, &p)
		if err != nil {
			return "", nil, err
		}
		part.Format, part.Raw = hippocam.FormatResponses, string(pr)
		parts = append(parts, part)
	}
	return strings.Join(texts, "\n"), parts, nil
}

// readPart reads an image, file or audio part.
func readPart(at string, p *ContentPart) (hippocam.Part, error) {
	switch p.Type {
	case "input_image":
		if p.ImageURL == "" && p.FileID == "" {
			return hippocam.Part{}, hippocam.Errorf(hippocam.EINVALID, "%s: an input_image needs an image_url or a file_id", at)
		}
		part := hippocam.Part{Type: hippocam.PartImage, FileID: p.FileID, Detail: p.Detail}
		part.MediaType, part.Data, part.URL = splitDataURL(p.ImageURL)
		return part, nil
	case "input_file":
		if p.FileData == "" && p.FileID == "" && p.FileURL == "" {
			return hippocam.Part{}, hippocam.Errorf(hippocam.EINVALID, "%s: an input_file needs file_data, a file_id or a file_url", at)
		}
		part := hippocam.Part{Type: hippocam.PartFile, FileID: p.FileID, URL: p.FileURL, Name: p.Filename}
		if p.FileData != "" {
			var url string
			if part.MediaType, part.Data, url = splitDataURL(p.FileData); url != "" {
				part.Data = p.FileData // plain base64, not a data URL
			}
		}
		return part, nil
	case "input_audio":
		if p.InputAudio == nil || p.InputAudio.Data == "" {
			return hippocam.Part{}, hippocam.Errorf(hippocam.EINVALID, "%s: an input_audio needs input_audio.data", at)
		}
		return hippocam.Part{Type: hippocam.PartAudio, MediaType: audioType(p.InputAudio.Format), Data: p.InputAudio.Data}, nil
	case "":
		return hippocam.Part{}, hippocam.Errorf(hippocam.EINVALID, "%s: a content part needs a type", at)
	}
	return hippocam.Part{}, hippocam.Errorf(hippocam.EINVALID, "%s: unknown content part type %q", at, p.Type)
}

// splitDataURL splits a base64 data URL ("data:image/png;base64,…") into its media type and
// data; anything else comes back as url.
func splitDataURL(s string) (mediaType, data, url string) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return "", "", s
	}
	head, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", s
	}
	mediaType, ok = strings.CutSuffix(head, ";base64")
	if !ok {
		return "", "", s
	}
	return mediaType, payload, ""
}

// audioType names the media type of an input_audio format.
func audioType(format string) string {
	switch format {
	case "":
		return ""
	case "mp3":
		return "audio/mpeg"
	}
	return "audio/" + format
}
