// Package anthropic speaks Anthropic's Messages API (POST /v1/messages, anthropic-version
// 2023-06-01) for Hippocam: it reads an agent's Messages request into a hippocam.Conversation,
// writes answers back in that format (whole or as server-sent events), and is a hippocam.Model
// backed by an Anthropic endpoint. The JSON shapes are written by hand in this file; objects
// keep the fields they do not know and write them back unchanged (internal/jsonx), and streams
// go through internal/sse.
package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/hippocam/hippocam/internal/jsonx"
)

// Version is the anthropic-version header the client sends.
const Version = "2023-06-01"

// BetaHeader is the header that names the optional API features a request uses, comma
// separated; BetaMidConversationSystem is the feature that lets "messages" hold system turns
// after the first user turn.
const (
	BetaHeader                = "Anthropic-Beta"
	BetaMidConversationSystem = "mid-conversation-system-2026-04-07"
)

// Betas returns the feature names of the anthropic-beta headers in h, in order, each once.
func Betas(h http.Header) []string {
	var out []string
	for _, v := range h.Values(BetaHeader) {
		for _, b := range strings.Split(v, ",") {
			if b = strings.TrimSpace(b); b != "" && !slices.Contains(out, b) {
				out = append(out, b)
			}
		}
	}
	return out
}

// The role of a system turn inside "messages", and the Extra field that keeps tool_choice's
// disable_parallel_tool_use.
const (
	roleSystem      = "system"
	disableParallel = "disable_parallel_tool_use"
)

// Content block types.
const (
	BlockText             = "text"
	BlockImage            = "image"
	BlockDocument         = "document"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
)

// Stop reasons of an answer.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
	StopSequence  = "stop_sequence"
	StopPauseTurn = "pause_turn"
	StopRefusal   = "refusal"
)

// Names the package uses on the wire.
const (
	roleUser       = "user"
	roleAssistant  = "assistant"
	cacheEphemeral = "ephemeral"
	messageType    = "message"
	errorType      = "error"
	toolTypeCustom = "custom"
	sourceBase64   = "base64"
	sourceURL      = "url"
	sourceText     = "text"
	sourceFile     = "file"
	mediaTypeText  = "text/plain"
	toolChoiceAuto = "auto"
	toolChoiceAny  = "any"
	toolChoiceTool = "tool"
	toolChoiceNone = "none"
	deltaText      = "text_delta"
	deltaInputJSON = "input_json_delta"
	deltaThinking  = "thinking_delta"
	deltaSignature = "signature_delta"
	defaultSchema  = `{"type":"object"}`
	emptyInput     = `{}`
)

// Streaming event types.
const (
	EventMessageStart      = "message_start"
	EventContentBlockStart = "content_block_start"
	EventContentBlockDelta = "content_block_delta"
	EventContentBlockStop  = "content_block_stop"
	EventMessageDelta      = "message_delta"
	EventMessageStop       = "message_stop"
	EventPing              = "ping"
	EventError             = "error"
)

// Error types of Anthropic's error body.
const (
	ErrorInvalidRequest  = "invalid_request_error"
	ErrorAuthentication  = "authentication_error"
	ErrorPermission      = "permission_error"
	ErrorNotFound        = "not_found_error"
	ErrorRequestTooLarge = "request_too_large"
	ErrorRateLimit       = "rate_limit_error"
	ErrorAPI             = "api_error"
	ErrorOverloaded      = "overloaded_error"
)

// Extra holds the JSON members of an object that its Go type does not declare, verbatim
// (internal/jsonx).
type Extra = jsonx.Extra

// Request is the body of POST /v1/messages. Members it does not declare are kept in Extra and
// written back after the declared ones, in key order.
type Request struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	System        Content         `json:"system,omitempty"`
	Messages      []Message       `json:"messages"`
	Tools         []Tool          `json:"tools,omitempty"`
	ToolChoice    *ToolChoice     `json:"tool_choice,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int            `json:"top_k,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	Thinking      json.RawMessage `json:"thinking,omitempty"`
	ServiceTier   string          `json:"service_tier,omitempty"`
	Extra         Extra           `json:"-"`
}

type request Request

// UnmarshalJSON reads a request, keeping undeclared members in Extra.
func (r *Request) UnmarshalJSON(b []byte) error {
	var a request
	extra, err := decodeWithExtra(b, &a)
	if err != nil {
		return err
	}
	*r = Request(a)
	r.Extra = extra
	return nil
}

// MarshalJSON writes the request with its Extra members.
func (r Request) MarshalJSON() ([]byte, error) { return encodeWithExtra(request(r), r.Extra) }

// Message is one turn of a request: role "user" or "assistant" and its content blocks.
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Content is a list of content blocks. It reads a JSON string as one text block, the short form
// that "content" and "system" allow, and is always written as an array.
type Content []Block

// UnmarshalJSON reads a string or an array of blocks.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content{{Type: BlockText, Text: s}}
		return nil
	}
	var blocks []Block
	if err := json.Unmarshal(b, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

// CacheControl marks the end of a prefix the provider should cache.
type CacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// Source is where an image or a document block takes its bytes from: base64 data, a URL, plain
// text, a file the provider holds, or (documents) a list of content blocks.
type Source struct {
	Type      string          `json:"type"`
	MediaType string          `json:"media_type,omitempty"`
	Data      string          `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	FileID    string          `json:"file_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

// Block is one content block. Type says which fields apply: Text (text); Source (image,
// document, with Title for documents); ID, Name, Input (tool_use); ToolUseID, Content, IsError
// (tool_result, Content being a JSON string or array of blocks); Thinking, Signature (thinking);
// Data (redacted_thinking). Members a type does not declare are kept in Extra, and a block of a
// type not listed keeps all its members there.
type Block struct {
	Type         string
	Text         string
	Source       *Source
	Title        string
	ID           string
	Name         string
	Input        json.RawMessage
	ToolUseID    string
	Content      json.RawMessage
	IsError      bool
	Thinking     string
	Signature    string
	Data         string
	CacheControl *CacheControl
	Extra        Extra
}

// blockFields lists the members a block type declares, besides type and cache_control.
func blockFields(typ string) []string {
	switch typ {
	case BlockText:
		return []string{"text"}
	case BlockImage:
		return []string{"source"}
	case BlockDocument:
		return []string{"source", "title"}
	case BlockToolUse:
		return []string{"id", "name", "input"}
	case BlockToolResult:
		return []string{"tool_use_id", "content", "is_error"}
	case BlockThinking:
		return []string{"thinking", "signature"}
	case BlockRedactedThinking:
		return []string{"data"}
	}
	return nil
}

// UnmarshalJSON reads a block of any type; a block without a type is read with Type "".
func (b *Block) UnmarshalJSON(data []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return err
	}
	if members == nil {
		return fmt.Errorf("a content block must be an object")
	}
	var nb Block
	if t, ok := members["type"]; ok {
		if err := json.Unmarshal(t, &nb.Type); err != nil {
			return fmt.Errorf("type: %w", err)
		}
	}
	declared := map[string]bool{}
	for _, k := range blockFields(nb.Type) {
		declared[k] = true
	}
	keys := jsonx.SortedKeys(members)
	for _, k := range keys {
		v := members[k]
		var err error
		switch {
		case k == "type":
		case k == "cache_control":
			err = json.Unmarshal(v, &nb.CacheControl)
		case declared[k]:
			err = nb.setField(k, v)
		default:
			if nb.Extra == nil {
				nb.Extra = Extra{}
			}
			nb.Extra[k] = v
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	*b = nb
	return nil
}

// setField decodes one declared member.
func (b *Block) setField(k string, v json.RawMessage) error {
	switch k {
	case "text":
		return json.Unmarshal(v, &b.Text)
	case "source":
		return json.Unmarshal(v, &b.Source)
	case "title":
		return json.Unmarshal(v, &b.Title)
	case "id":
		return json.Unmarshal(v, &b.ID)
	case "name":
		return json.Unmarshal(v, &b.Name)
	case "input":
		if !json.Valid(v) {
			return fmt.Errorf("not JSON")
		}
		b.Input = v
	case "tool_use_id":
		return json.Unmarshal(v, &b.ToolUseID)
	case "content":
		b.Content = v
	case "is_error":
		return json.Unmarshal(v, &b.IsError)
	case "thinking":
		return json.Unmarshal(v, &b.Thinking)
	case "signature":
		return json.Unmarshal(v, &b.Signature)
	case "data":
		return json.Unmarshal(v, &b.Data)
	}
	return nil
}

// MarshalJSON writes the members of the block's type (text, input, thinking and signature even
// when empty, as the API sends them), then cache_control, then Extra in key order.
func (b Block) MarshalJSON() ([]byte, error) {
	o := newObject()
	o.put("type", b.Type)
	switch b.Type {
	case BlockText:
		o.put("text", b.Text)
	case BlockImage, BlockDocument:
		if b.Source != nil {
			o.put("source", b.Source)
		}
		if b.Title != "" {
			o.put("title", b.Title)
		}
	case BlockToolUse:
		o.put("id", b.ID)
		o.put("name", b.Name)
		input := b.Input
		if len(bytes.TrimSpace(input)) == 0 {
			input = json.RawMessage(emptyInput)
		}
		o.putRaw("input", input)
	case BlockToolResult:
		o.put("tool_use_id", b.ToolUseID)
		if len(b.Content) > 0 {
			o.putRaw("content", b.Content)
		}
		if b.IsError {
			o.put("is_error", true)
		}
	case BlockThinking:
		o.put("thinking", b.Thinking)
		o.put("signature", b.Signature)
	case BlockRedactedThinking:
		o.put("data", b.Data)
	}
	if b.CacheControl != nil {
		o.put("cache_control", b.CacheControl)
	}
	o.extra(b.Extra)
	return o.close()
}

// Tool is a tool the model may call. Type is empty or "custom" for a client tool; other types
// are the provider's own tools, whose settings stay in Extra.
type Tool struct {
	Type         string          `json:"type,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	CacheControl *CacheControl   `json:"cache_control,omitempty"`
	Extra        Extra           `json:"-"`
	// Raw, when set, is a tool of Anthropic's own (a server tool, bash, the text editor…) as
	// the client sent it: it is written byte for byte, unless a cache-control mark must be
	// set on it or taken off it.
	Raw json.RawMessage `json:"-"`
}

type tool Tool

// UnmarshalJSON reads a tool, keeping undeclared members in Extra.
func (t *Tool) UnmarshalJSON(b []byte) error {
	var a tool
	extra, err := decodeWithExtra(b, &a)
	if err != nil {
		return err
	}
	*t = Tool(a)
	t.Extra = extra
	return nil
}

// MarshalJSON writes the tool with its Extra members, or its Raw bytes (see Tool). It fails on a
// Raw that is not a JSON object.
func (t Tool) MarshalJSON() ([]byte, error) {
	if len(t.Raw) == 0 {
		return encodeWithExtra(tool(t), t.Extra)
	}
	if t.CacheControl == nil && !bytes.Contains(t.Raw, []byte(`"cache_control"`)) {
		return t.Raw, nil
	}
	var own Tool
	if err := json.Unmarshal(t.Raw, &own); err != nil {
		return nil, err
	}
	own.CacheControl = t.CacheControl
	return encodeWithExtra(tool(own), own.Extra)
}

// ToolChoice says whether and which tool the model must call: type "auto", "any", "tool" (with
// Name) or "none".
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// Response is a whole answer (and, with empty content and no stop reason, the message of a
// message_start event).
type Response struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []Block `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        Usage   `json:"usage"`
}

// Usage is what a call consumed. InputTokens counts only the uncached input that was not
// written to the cache; the prompt is the sum of the three input counts.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// Event is one streamed event as read: Type says which fields apply. Message (message_start);
// Index and ContentBlock (content_block_start); Index and Delta (content_block_delta); Index
// (content_block_stop); Delta and Usage (message_delta, whose Delta holds the stop reason);
// Error (error).
type Event struct {
	Type         string     `json:"type"`
	Message      *Response  `json:"message,omitempty"`
	Index        int        `json:"index"`
	ContentBlock *Block     `json:"content_block,omitempty"`
	Delta        *Delta     `json:"delta,omitempty"`
	Usage        *Usage     `json:"usage,omitempty"`
	Error        *ErrorBody `json:"error,omitempty"`
}

// Delta is the change an event carries: text_delta (Text), input_json_delta (PartialJSON),
// thinking_delta (Thinking), signature_delta (Signature), or, in message_delta, the stop reason.
type Delta struct {
	Type         string  `json:"type,omitempty"`
	Text         string  `json:"text,omitempty"`
	PartialJSON  string  `json:"partial_json,omitempty"`
	Thinking     string  `json:"thinking,omitempty"`
	Signature    string  `json:"signature,omitempty"`
	StopReason   *string `json:"stop_reason,omitempty"`
	StopSequence *string `json:"stop_sequence,omitempty"`
}

// ErrorResponse is Anthropic's error body: {"type":"error","error":{"type":…,"message":…}}.
type ErrorResponse struct {
	Type  string    `json:"type"`
	Error ErrorBody `json:"error"`
}

// ErrorBody is the error inside an ErrorResponse or an error event.
type ErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// decodeWithExtra fills v (a pointer to an alias struct) from data and returns the members
// v's type does not declare.
func decodeWithExtra(data []byte, v any) (Extra, error) { return jsonx.Decode(data, v) }

// encodeWithExtra writes v (an alias struct) and appends the extra members in key order,
// leaving out those whose key v's type declares, so that no key is written twice; a member
// that is not valid JSON is an error.
func encodeWithExtra(v any, extra Extra) ([]byte, error) {
	b, err := marshal(v)
	if err != nil {
		return b, err
	}
	return jsonx.Append(b, extra, jsonx.Options{Skip: jsonx.Declared(reflect.TypeOf(v)), Check: true})
}

// object writes a JSON object member by member, raw values verbatim.
type object struct {
	b   []byte
	n   int
	err error
}

func newObject() *object { return &object{b: []byte{'{'}} }

// putRaw adds a member whose value is JSON text already.
func (o *object) putRaw(key string, v json.RawMessage) {
	if o.err != nil {
		return
	}
	if !json.Valid(v) {
		o.err = fmt.Errorf("member %q is not valid JSON", key)
		return
	}
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	kb, _ := json.Marshal(key)
	o.b = append(o.b, kb...)
	o.b = append(o.b, ':')
	o.b = append(o.b, v...)
}

// put adds a member with a Go value.
func (o *object) put(key string, v any) {
	if o.err != nil {
		return
	}
	b, err := marshal(v)
	if err != nil {
		o.err = err
		return
	}
	o.putRaw(key, b)
}

// extra adds the members of e in key order.
func (o *object) extra(e Extra) {
	for _, k := range jsonx.SortedKeys(e) {
		o.putRaw(k, e[k])
	}
}

// close ends the object.
func (o *object) close() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	return append(o.b, '}'), nil
}

// marshal encodes v without escaping HTML characters and without a trailing newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
