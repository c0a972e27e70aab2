package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sse"
)

// streamPiece is the most bytes of text or arguments one streamed delta carries.
const streamPiece = 64

// WriteResponse writes answer as a whole Messages response (status 200): its thinking and other
// Anthropic parts with their bytes, its text as one text block, each tool call as a tool_use
// block (input the call's arguments, or {} when they are not a JSON object), the stop reason
// that stop maps to (see StopReason) and u as Anthropic counts usage (see UsageOf). It returns
// the error of writing to w.
func WriteResponse(w http.ResponseWriter, model, id string, answer *hippocam.Message, stop string, u hippocam.CallUsage) error {
	reason := StopReason(stop, answer)
	resp := Response{
		ID: id, Type: messageType, Role: roleAssistant, Model: model,
		Content: answerBlocks(answer), StopReason: &reason, Usage: UsageOf(u),
	}
	b, err := resp.encode()
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteStream writes an answer that is already complete as the whole event sequence of a
// streamed response (status 200, text/event-stream): message_start, ping, each part, the text in
// deltas of at most 64 bytes cut on character boundaries, each tool call as a tool_use block with
// empty input followed by input_json_delta pieces, message_delta and message_stop. It returns
// the first error of writing to w.
func WriteStream(w http.ResponseWriter, model, id string, answer *hippocam.Message, stop string, u hippocam.CallUsage) error {
	s := NewStreamWriter(w, model, id)
	s.Start(u)
	if answer != nil {
		for _, p := range answer.Parts {
			s.Part(p)
		}
		s.Text(answer.Content)
		for _, c := range answer.ToolCalls {
			s.ToolCall(c)
		}
	}
	return s.Finish(StopReason(stop, answer), u)
}

// WriteError writes Anthropic's error body {"type":"error","error":{"type":typ,"message":msg}}
// with status. typ is one of the Error… types; StatusType gives the one for a status. It returns
// the error of writing to w.
func WriteError(w http.ResponseWriter, status int, typ, msg string) error {
	b, err := marshal(ErrorResponse{Type: errorType, Error: ErrorBody{Type: typ, Message: msg}})
	if err != nil {
		return fmt.Errorf("encode error: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

// StatusType returns the Anthropic error type for an HTTP status: invalid_request_error for
// 400 and other 4xx, authentication_error 401, permission_error 403, not_found_error 404,
// request_too_large 413, rate_limit_error 429, overloaded_error 529, api_error for other 5xx.
func StatusType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return ErrorAuthentication
	case status == http.StatusForbidden:
		return ErrorPermission
	case status == http.StatusNotFound:
		return ErrorNotFound
	case status == http.StatusRequestEntityTooLarge:
		return ErrorRequestTooLarge
	case status == http.StatusTooManyRequests:
		return ErrorRateLimit
	case status == 529:
		return ErrorOverloaded
	case status >= 500:
		return ErrorAPI
	}
	return ErrorInvalidRequest
}

// StopReason maps a domain finish reason to Anthropic's stop reason: "tool_calls" to tool_use,
// "stop" to end_turn, "length" to max_tokens, "content_filter" to refusal; an Anthropic stop
// reason is kept; anything else (or "") is tool_use when answer has tool calls, else end_turn.
func StopReason(finish string, answer *hippocam.Message) string {
	switch finish {
	case "tool_calls":
		return StopToolUse
	case "stop":
		return StopEndTurn
	case "length":
		return StopMaxTokens
	case "content_filter":
		return StopRefusal
	case StopEndTurn, StopToolUse, StopMaxTokens, StopSequence, StopPauseTurn, StopRefusal:
		return finish
	}
	if answer != nil && len(answer.ToolCalls) > 0 {
		return StopToolUse
	}
	return StopEndTurn
}

// UsageOf renders a call's usage as Anthropic reports it. CallUsage.Input counts the whole
// prompt, Anthropic's input_tokens only what was neither read from nor written to the cache:
// input_tokens = Input - CachedInput, cache_read_input_tokens = CachedInput,
// cache_creation_input_tokens = 0.
func UsageOf(u hippocam.CallUsage) Usage {
	return Usage{InputTokens: max(0, u.Input-u.CachedInput), CacheReadInputTokens: u.CachedInput, OutputTokens: u.Output}
}

// encode writes the response as the Messages API sends a message: every member its SDKs
// declare, null where Hippocam has nothing to report (container, stop_details, diagnostics), the
// usage as answerUsage renders it, and the blocks as answerBlock completes them. The bytes of the
// blocks' raw members (tool inputs) stay as they are: json.Marshal would compact them, and the
// agent should get the model's arguments byte for byte.
func (r Response) encode() ([]byte, error) {
	o := newObject()
	o.put("id", r.ID)
	o.put("type", r.Type)
	o.put("role", r.Role)
	o.put("model", r.Model)
	content := []byte{'['}
	for i, b := range r.Content {
		bb, err := answerBlock(b).MarshalJSON()
		if err != nil {
			return nil, err
		}
		if i > 0 {
			content = append(content, ',')
		}
		content = append(content, bb...)
	}
	o.putRaw("content", append(content, ']'))
	o.put("stop_reason", r.StopReason)
	o.put("stop_sequence", r.StopSequence)
	o.putRaw("stop_details", jsonNull)
	o.putRaw("container", jsonNull)
	o.putRaw("diagnostics", jsonNull)
	o.put("usage", answerUsage(r.Usage))
	return o.close()
}

// jsonNull is the JSON null.
var jsonNull = json.RawMessage("null")

// answerBlock completes a content block of an answer with the members the Messages API always
// sends for its type and Hippocam has no other value for: a text block's citations (null), a
// tool_use block's caller (the model itself, {"type":"direct"}). A member the block already has
// is kept.
func answerBlock(b Block) Block {
	var key string
	var value json.RawMessage
	switch b.Type {
	case BlockText:
		key, value = "citations", jsonNull
	case BlockToolUse:
		key, value = "caller", json.RawMessage(`{"type":"direct"}`)
	default:
		return b
	}
	if _, ok := b.Extra[key]; ok {
		return b
	}
	extra := make(Extra, len(b.Extra)+1)
	for k, v := range b.Extra {
		extra[k] = v
	}
	extra[key] = value
	b.Extra = extra
	return b
}

// fullUsage is the usage of a message as the Messages API reports it: the counts, the cache
// writes by lifetime (none: Hippocam reports no cache writes), the standard service tier, and
// null for what Hippocam does not learn of a call (server tool requests, the output's breakdown,
// where and how fast it ran).
type fullUsage struct {
	InputTokens              int             `json:"input_tokens"`
	CacheCreationInputTokens int             `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int             `json:"cache_read_input_tokens"`
	CacheCreation            cacheCreation   `json:"cache_creation"`
	OutputTokens             int             `json:"output_tokens"`
	OutputTokensDetails      json.RawMessage `json:"output_tokens_details"`
	ServerToolUse            json.RawMessage `json:"server_tool_use"`
	ServiceTier              string          `json:"service_tier"`
	InferenceGeo             json.RawMessage `json:"inference_geo"`
	Speed                    json.RawMessage `json:"speed"`
}

// cacheCreation splits the cache writes by the lifetime of the entries written.
type cacheCreation struct {
	Ephemeral5mInputTokens int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1hInputTokens int `json:"ephemeral_1h_input_tokens"`
}

// answerUsage renders u as a message's usage; every write counted in u is reported as a
// five-minute entry.
func answerUsage(u Usage) fullUsage {
	return fullUsage{InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens: u.CacheReadInputTokens, OutputTokens: u.OutputTokens,
		CacheCreation:       cacheCreation{Ephemeral5mInputTokens: u.CacheCreationInputTokens},
		OutputTokensDetails: jsonNull, ServerToolUse: jsonNull, ServiceTier: "standard", InferenceGeo: jsonNull, Speed: jsonNull}
}

// deltaUsage is the usage of a message_delta event: the counts so far, null for what Hippocam
// does not learn of a call.
type deltaUsage struct {
	InputTokens              int             `json:"input_tokens"`
	CacheCreationInputTokens int             `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int             `json:"cache_read_input_tokens"`
	OutputTokens             int             `json:"output_tokens"`
	OutputTokensDetails      json.RawMessage `json:"output_tokens_details"`
	ServerToolUse            json.RawMessage `json:"server_tool_use"`
}

// MarshalJSON writes the response as encode does. It fails only on a raw member that is not
// valid JSON.
func (r Response) MarshalJSON() ([]byte, error) { return r.encode() }

// answerBlocks renders an answer's content blocks; never nil.
func answerBlocks(m *hippocam.Message) []Block {
	blocks := []Block{}
	if m == nil {
		return blocks
	}
	for _, p := range m.Parts {
		if b, ok := rawBlock(p); ok {
			blocks = append(blocks, b)
		}
	}
	if m.Content != "" {
		blocks = append(blocks, Block{Type: BlockText, Text: m.Content})
	}
	for _, c := range m.ToolCalls {
		c = hippocam.UpstreamCall(c) // Messages has neither namespaces nor custom tools
		blocks = append(blocks, Block{Type: BlockToolUse, ID: c.ID, Name: c.Name, Input: json.RawMessage(objectArgs(c.Arguments))})
	}
	return blocks
}

// rawBlock reads a part that came in Anthropic's format back into its block, without the
// cache-control mark it may have had.
func rawBlock(p hippocam.Part) (Block, bool) {
	if p.Format != hippocam.FormatAnthropic || p.Raw == "" {
		return Block{}, false
	}
	var b Block
	if json.Unmarshal([]byte(p.Raw), &b) != nil || b.Type == "" {
		return Block{}, false
	}
	b.CacheControl = nil
	return b, true
}

// objectArgs returns args when it is a JSON object, else "{}".
func objectArgs(args string) string {
	if firstByte([]byte(args)) == '{' && json.Valid([]byte(args)) {
		return args
	}
	return emptyInput
}

// StreamWriter writes a streamed Messages response as its parts arrive: Start, then any
// sequence of Part, Text and ToolCall, then Finish (or Fail). Text deltas of one stretch of
// text share one text block; a part or tool call closes it. Every method flushes what it wrote.
// After the first write error every method returns that error and writes nothing. A
// StreamWriter is not safe for concurrent use.
type StreamWriter struct {
	sse     *sse.Writer
	header  func()
	model   string
	id      string
	started bool
	done    bool
	next    int    // index of the next content block
	open    string // type of the open block, "" if none
	calls   int    // tool_use blocks written
	err     error
}

// NewStreamWriter returns a StreamWriter that writes the response of message id from model to
// w. It writes nothing yet.
func NewStreamWriter(w http.ResponseWriter, model, id string) *StreamWriter {
	s := &StreamWriter{sse: sse.NewWriter(w), model: model, id: id}
	s.header = func() { sse.Header(w) }
	return s
}

// Start writes the headers (status 200), message_start with the input part of u, and a ping.
// The other methods call it when it was not called. It returns the first write error.
func (s *StreamWriter) Start(u hippocam.CallUsage) error {
	if s.started || s.err != nil {
		return s.err
	}
	s.started = true
	s.header()
	start := UsageOf(u)
	start.OutputTokens = 0
	s.event(EventMessageStart, struct {
		Type    string   `json:"type"`
		Message Response `json:"message"`
	}{EventMessageStart, Response{ID: s.id, Type: messageType, Role: roleAssistant, Model: s.model, Content: []Block{}, Usage: start}})
	s.event(EventPing, struct {
		Type string `json:"type"`
	}{EventPing})
	return s.flush()
}

// Text writes delta as text_delta events of at most 64 bytes each, cut on character
// boundaries, opening a text block first when none is open. An empty delta writes nothing. It
// returns the first write error.
func (s *StreamWriter) Text(delta string) error {
	if delta == "" {
		return s.err
	}
	if err := s.begin(); err != nil {
		return err
	}
	if s.open != BlockText {
		s.closeBlock()
		s.openBlock(Block{Type: BlockText})
	}
	for _, p := range sse.Split(delta, streamPiece) {
		s.delta(deltaEvent{Type: deltaText, Text: &p})
	}
	return s.flush()
}

// ToolCall writes one tool call as a tool_use block: content_block_start with its id, name and
// empty input, input_json_delta pieces of its arguments (or of {} when they are not a JSON
// object), content_block_stop. It returns the first write error.
func (s *StreamWriter) ToolCall(c hippocam.ToolCall) error {
	if err := s.begin(); err != nil {
		return err
	}
	c = hippocam.UpstreamCall(c) // Messages has neither namespaces nor custom tools
	s.closeBlock()
	s.openBlock(Block{Type: BlockToolUse, ID: c.ID, Name: c.Name, Input: json.RawMessage(emptyInput)})
	for _, p := range sse.Split(objectArgs(c.Arguments), streamPiece) {
		s.delta(deltaEvent{Type: deltaInputJSON, PartialJSON: &p})
	}
	s.closeBlock()
	return s.flush()
}

// Part writes a part that came in Anthropic's format as its block: a thinking block as
// thinking_delta pieces and one signature_delta, any other block whole in its
// content_block_start. Parts of other formats are skipped. It returns the first write error.
func (s *StreamWriter) Part(p hippocam.Part) error {
	b, ok := rawBlock(p)
	if !ok {
		return s.err
	}
	if err := s.begin(); err != nil {
		return err
	}
	s.closeBlock()
	if b.Type != BlockThinking {
		s.openBlock(b)
		s.closeBlock()
		return s.flush()
	}
	s.openBlock(Block{Type: BlockThinking, Extra: b.Extra})
	for _, t := range sse.Split(b.Thinking, streamPiece) {
		s.delta(deltaEvent{Type: deltaThinking, Thinking: &t})
	}
	if b.Signature != "" {
		s.delta(deltaEvent{Type: deltaSignature, Signature: &b.Signature})
	}
	s.closeBlock()
	return s.flush()
}

// Finish closes the open block and writes message_delta (the stop reason that finish maps to,
// see StopReason, and u as UsageOf renders it) and message_stop. Later calls write nothing. It
// returns the first write error.
func (s *StreamWriter) Finish(finish string, u hippocam.CallUsage) error {
	if s.done {
		return s.err
	}
	if err := s.begin(); err != nil {
		return err
	}
	s.closeBlock()
	reason := StopReason(finish, nil)
	if finish == "" && s.sawToolCall() {
		reason = StopToolUse
	}
	usage := UsageOf(u)
	s.event(EventMessageDelta, messageDelta{Type: EventMessageDelta,
		Delta: stopDelta{StopReason: reason, StopDetails: jsonNull, Container: jsonNull},
		Usage: deltaUsage{InputTokens: usage.InputTokens, CacheCreationInputTokens: usage.CacheCreationInputTokens,
			CacheReadInputTokens: usage.CacheReadInputTokens, OutputTokens: usage.OutputTokens,
			OutputTokensDetails: jsonNull, ServerToolUse: jsonNull}})
	s.event(EventMessageStop, struct {
		Type string `json:"type"`
	}{EventMessageStop})
	s.done = true
	return s.flush()
}

// Fail ends the stream with an error event {"type":"error","error":{"type":typ,"message":msg}},
// as Anthropic does when a stream breaks off; the headers are written first if nothing was.
// Later calls write nothing. It returns the first write error.
func (s *StreamWriter) Fail(typ, msg string) error {
	if s.done || s.err != nil {
		return s.err
	}
	if !s.started {
		s.started = true
		s.header()
	}
	s.event(EventError, ErrorResponse{Type: errorType, Error: ErrorBody{Type: typ, Message: msg}})
	s.done = true
	return s.flush()
}

// messageDelta is the message_delta event: how the message stopped, and its usage.
type messageDelta struct {
	Type  string     `json:"type"`
	Delta stopDelta  `json:"delta"`
	Usage deltaUsage `json:"usage"`
}

// stopDelta is a message_delta's delta: the stop reason, and null for the stop sequence, the
// refusal's details and the container.
type stopDelta struct {
	StopReason   string          `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	StopDetails  json.RawMessage `json:"stop_details"`
	Container    json.RawMessage `json:"container"`
}

// errFinished is the error of writing to a stream that Finish or Fail ended.
var errFinished = errors.New("anthropic: the stream is finished")

// begin starts the stream if needed; it fails once the stream is finished.
func (s *StreamWriter) begin() error {
	if s.err == nil && s.done {
		return errFinished
	}
	return s.Start(hippocam.CallUsage{})
}

// sawToolCall reports whether a tool_use block was written. Only Finish needs it, for an
// empty finish reason.
func (s *StreamWriter) sawToolCall() bool { return s.calls > 0 }

// deltaEvent is the delta of a content_block_delta event; pointers leave out what does not
// apply while keeping empty strings that do.
type deltaEvent struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
}

// openBlock writes content_block_start for b.
func (s *StreamWriter) openBlock(b Block) {
	if b.Type == BlockToolUse {
		s.calls++
	}
	s.event(EventContentBlockStart, struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock Block  `json:"content_block"`
	}{EventContentBlockStart, s.next, answerBlock(b)})
	s.open = b.Type
}

// delta writes one content_block_delta for the open block.
func (s *StreamWriter) delta(d deltaEvent) {
	s.event(EventContentBlockDelta, struct {
		Type  string     `json:"type"`
		Index int        `json:"index"`
		Delta deltaEvent `json:"delta"`
	}{EventContentBlockDelta, s.next, d})
}

// closeBlock writes content_block_stop for the open block, if any.
func (s *StreamWriter) closeBlock() {
	if s.open == "" {
		return
	}
	s.event(EventContentBlockStop, struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}{EventContentBlockStop, s.next})
	s.open = ""
	s.next++
}

// event writes one server-sent event: "event: NAME", "data: JSON", a blank line.
func (s *StreamWriter) event(name string, v any) {
	if s.err != nil {
		return
	}
	b, err := marshal(v)
	if err != nil {
		s.err = fmt.Errorf("encode %s event: %w", name, err)
		return
	}
	s.err = s.sse.Write(name, b)
}

// flush sends what was written, when w can flush, and returns the first error.
func (s *StreamWriter) flush() error {
	if s.err == nil {
		s.err = s.sse.Flush()
	}
	return s.err
}
