package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sse"
)

// This file holds the response side of OpenAI's Responses API: the response object, its output
// items, the event stream of a streamed answer, and the error body.

// Response is a Responses API response object. Raw fields are written as sent (null when unset).
// MarshalJSON writes empty Output and Tools as [] (SDKs append to them while streaming), and
// leaves out a nil Usage (a response still in progress has none; the SDKs' types declare it an
// object when present, never null).
type Response struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Error              json.RawMessage `json:"error"`
	IncompleteDetails  json.RawMessage `json:"incomplete_details"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []OutputItem    `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Reasoning          json.RawMessage `json:"reasoning"`
	Store              bool            `json:"store"`
	Temperature        json.RawMessage `json:"temperature"`
	Text               json.RawMessage `json:"text"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              []ResponsesTool `json:"tools"`
	TopP               json.RawMessage `json:"top_p"`
	Truncation         string          `json:"truncation"`
	Usage              *ResponseUsage  `json:"usage,omitempty"`
	User               json.RawMessage `json:"user,omitempty"`
	Metadata           json.RawMessage `json:"metadata"`
	Extra              Extra           `json:"-"`
}

type response Response

// UnmarshalJSON reads a response, keeping unknown fields in Extra. It returns encoding/json's
// errors.
func (r *Response) UnmarshalJSON(b []byte) error {
	var a response
	extra, err := decodeSlow(b, &a)
	if err != nil {
		return err
	}
	*r = Response(a)
	r.Extra = extra
	return nil
}

// MarshalJSON writes the response with its Extra fields. It fails only on a raw field that is not
// valid JSON.
func (r Response) MarshalJSON() ([]byte, error) {
	if r.Output == nil {
		r.Output = []OutputItem{}
	}
	if r.Tools == nil {
		r.Tools = []ResponsesTool{}
	}
	return encodeSlow(response(r), r.Extra)
}

// OutputItem is one item of a response's output. Hippocam writes three types: "message" (Role,
// Content), "function_call" (CallID, Name, Arguments, and Namespace for a tool of a namespace)
// and "custom_tool_call" (CallID, Name, Input, Namespace); items of other types read from an
// upstream keep their other fields in Extra.
type OutputItem struct {
	ID        string          `json:"id,omitempty"`
	Type      string          `json:"type"`
	Status    string          `json:"status,omitempty"`
	Role      string          `json:"role,omitempty"`
	Content   []OutputContent `json:"content,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Input     string          `json:"input,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	Extra     Extra           `json:"-"`
}

type outputItem OutputItem

// UnmarshalJSON reads an output item, keeping unknown fields in Extra. It returns encoding/json's
// errors.
func (it *OutputItem) UnmarshalJSON(b []byte) error {
	var a outputItem
	extra, err := decodeSlow(b, &a)
	if err != nil {
		return err
	}
	*it = OutputItem(a)
	it.Extra = extra
	return nil
}

// MarshalJSON writes the item with the fields its type always has: a message's content (possibly
// []) and role, a function call's arguments (possibly ""), call_id and name, a custom tool
// call's call_id, input (possibly "") and name; a call's namespace when it has one. It fails
// only on an Extra value that is not valid JSON.
func (it OutputItem) MarshalJSON() ([]byte, error) {
	switch it.Type {
	case "message":
		content := it.Content
		if content == nil {
			content = []OutputContent{}
		}
		return encodeSlow(struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Status  string          `json:"status"`
			Content []OutputContent `json:"content"`
			Role    string          `json:"role"`
		}{it.ID, it.Type, it.Status, content, it.Role}, it.Extra)
	case "function_call":
		return encodeSlow(struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Status    string `json:"status"`
			Arguments string `json:"arguments"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Namespace string `json:"namespace,omitempty"`
		}{it.ID, it.Type, it.Status, it.Arguments, it.CallID, it.Name, it.Namespace}, it.Extra)
	case "custom_tool_call":
		return encodeSlow(struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Status    string `json:"status"`
			CallID    string `json:"call_id"`
			Input     string `json:"input"`
			Name      string `json:"name"`
			Namespace string `json:"namespace,omitempty"`
		}{it.ID, it.Type, it.Status, it.CallID, it.Input, it.Name, it.Namespace}, it.Extra)
	}
	return encodeSlow(outputItem(it), it.Extra)
}

// OutputContent is one part of an output message: output_text (Text, with Annotations, written
// as [] when unset) or refusal (Refusal). Unknown fields (logprobs…) are kept in Extra.
type OutputContent struct {
	Type        string          `json:"type"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Text        string          `json:"text,omitempty"`
	Refusal     string          `json:"refusal,omitempty"`
	Extra       Extra           `json:"-"`
}

type outputContent OutputContent

// UnmarshalJSON reads a content part, keeping unknown fields in Extra. It returns encoding/json's
// errors.
func (c *OutputContent) UnmarshalJSON(b []byte) error {
	var a outputContent
	extra, err := decodeSlow(b, &a)
	if err != nil {
		return err
	}
	*c = OutputContent(a)
	c.Extra = extra
	return nil
}

// MarshalJSON writes the part; an output_text always has its text, its annotations and its
// logprobs ([] unless the part has its own). It fails only on a raw value that is not valid JSON.
func (c OutputContent) MarshalJSON() ([]byte, error) {
	if c.Type == "output_text" {
		ann := c.Annotations
		if len(ann) == 0 {
			ann = json.RawMessage("[]")
		}
		logprobs, extra := json.RawMessage("[]"), c.Extra
		if v, ok := c.Extra["logprobs"]; ok {
			logprobs, extra = v, make(Extra, len(c.Extra)-1)
			for k, v := range c.Extra {
				if k != "logprobs" {
					extra[k] = v
				}
			}
		}
		return encodeSlow(struct {
			Type        string          `json:"type"`
			Annotations json.RawMessage `json:"annotations"`
			Logprobs    json.RawMessage `json:"logprobs"`
			Text        string          `json:"text"`
		}{c.Type, ann, logprobs, c.Text}, extra)
	}
	return encodeSlow(outputContent(c), c.Extra)
}

// ResponseUsage is a response's token accounting. InputTokens counts every prompt token, cached
// or not; InputTokensDetails.CachedTokens is the part served from the prompt cache.
type ResponseUsage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails reports the prompt tokens served from the provider's cache, and those
// written to it.
type InputTokensDetails struct {
	CachedTokens     int `json:"cached_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
}

// OutputTokensDetails reports the output tokens spent on reasoning.
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// CallUsage returns the usage in the domain's form.
func (u *ResponseUsage) CallUsage() hippocam.CallUsage {
	return hippocam.CallUsage{Input: u.InputTokens, CachedInput: u.InputTokensDetails.CachedTokens, Output: u.OutputTokens}
}

// NewResponse builds the completed response object for an answer: a message item with the
// answer's text (when it has text, or no tool calls), then one function_call item per tool call
// (a custom_tool_call item for a call of a custom tool),
// in order, with the usage and the defaults the official SDKs read (tool_choice "auto", no tools,
// metadata {}, text format "text", truncation "disabled", store true…; EchoRequest replaces
// them with what a request asked). id gets the prefix "resp_" if it lacks it; item ids derive
// from it ("msg_…", "fc_…_N"), so the same id gives the same items. previous, when not empty, is
// the previous_response_id. A nil answer is an empty one. It returns no error.
func NewResponse(id, model string, created int64, answer *hippocam.Message, u hippocam.CallUsage, previous string) Response {
	if !strings.HasPrefix(id, "resp_") {
		id = "resp_" + id
	}
	r := Response{
		ID: id, Object: "response", CreatedAt: created, Status: "completed", Model: model,
		ParallelToolCalls: true, Store: true, Truncation: "disabled",
		ToolChoice:  json.RawMessage(`"auto"`),
		Tools:       []ResponsesTool{},
		Temperature: json.RawMessage("1"),
		TopP:        json.RawMessage("1"),
		Text:        json.RawMessage(`{"format":{"type":"text"}}`),
		Metadata:    json.RawMessage("{}"),
		Usage: &ResponseUsage{
			InputTokens:        u.Input,
			InputTokensDetails: InputTokensDetails{CachedTokens: u.CachedInput},
			OutputTokens:       u.Output,
			TotalTokens:        u.Input + u.Output,
		},
	}
	if previous != "" {
		r.PreviousResponseID = &previous
	}
	if answer == nil {
		answer = &hippocam.Message{}
	}
	if answer.Content != "" || len(answer.ToolCalls) == 0 {
		r.Output = append(r.Output, messageItem(messageItemID(id, 0), answer.Content))
	}
	for i, c := range answer.ToolCalls {
		r.Output = append(r.Output, callItem(callItemID(id, i), c, "completed"))
	}
	return r
}

// EchoRequest sets the fields of r that repeat the request, as the Responses API does: the
// instructions (the conversation's framing message that came from them), tools, tool_choice,
// max_output_tokens, store, and the passed-on fields temperature, top_p, parallel_tool_calls,
// metadata, text, reasoning, truncation and user when the request gave them (not null). It
// returns no error; an Extra that is not a JSON object is ignored.
func (r *Response) EchoRequest(conv *hippocam.Conversation) {
	for _, f := range conv.Framing {
		if f.Origin != nil && f.Origin.Format == hippocam.FormatResponses && strings.HasPrefix(f.Origin.Raw, `"`) {
			r.Instructions = json.RawMessage(f.Origin.Raw) // only instructions come as a bare string
			break
		}
	}
	r.Tools = echoTools(conv.Tools)
	switch conv.ToolChoice {
	case "":
		r.ToolChoice = json.RawMessage(`"auto"`)
	case "auto", "none", "required":
		r.ToolChoice, _ = json.Marshal(conv.ToolChoice)
	default:
		typ := "function"
		for _, t := range conv.Tools {
			if t.Name == conv.ToolChoice && t.Kind == hippocam.ToolCustom {
				typ = "custom"
				break
			}
		}
		r.ToolChoice, _ = json.Marshal(map[string]string{"type": typ, "name": conv.ToolChoice})
	}
	if conv.MaxTokens > 0 {
		n := conv.MaxTokens
		r.MaxOutputTokens = &n
	}
	r.Store = conv.Store
	var extra Extra
	if len(conv.Extra) == 0 || json.Unmarshal(conv.Extra, &extra) != nil {
		return
	}
	set := func(key string, dst *json.RawMessage) {
		if v, ok := extra[key]; ok && string(v) != "null" {
			*dst = v
		}
	}
	set("temperature", &r.Temperature)
	set("top_p", &r.TopP)
	set("metadata", &r.Metadata)
	set("text", &r.Text)
	set("reasoning", &r.Reasoning)
	set("user", &r.User)
	if v, ok := extra["parallel_tool_calls"]; ok {
		_ = json.Unmarshal(v, &r.ParallelToolCalls)
	}
	if v, ok := extra["truncation"]; ok {
		_ = json.Unmarshal(v, &r.Truncation)
	}
}

// echoTools is a request's tools as a response repeats them: each as it was sent when its bytes
// are known (a namespace once for all its tools), else as a function.
func echoTools(tools []hippocam.Tool) []ResponsesTool {
	out := make([]ResponsesTool, 0, len(tools))
	for i, t := range tools {
		if len(t.Raw) == 0 || t.Format != hippocam.FormatResponses {
			out = append(out, echoTool(t))
			continue
		}
		if t.Namespace != "" && i > 0 && tools[i-1].Namespace == t.Namespace && string(tools[i-1].Raw) == string(t.Raw) {
			continue // the namespace is already there
		}
		out = append(out, ResponsesTool{Raw: t.Raw})
	}
	return out
}

// echoTool is a function tool as a response echoes it: with its parameters and strict, null
// when the request did not say (the conversation does not keep strict).
func echoTool(t hippocam.Tool) ResponsesTool {
	params := t.Parameters
	if len(params) == 0 {
		params = json.RawMessage("null")
	}
	return ResponsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params,
		Extra: Extra{"strict": json.RawMessage("null")}}
}

// messageItemID and callItemID derive output item ids from the response id: the n-th message
// item and the i-th function call.
func messageItemID(respID string, n int) string {
	id := "msg_" + strings.TrimPrefix(respID, "resp_")
	if n > 0 {
		id += fmt.Sprintf("_%d", n)
	}
	return id
}

func callItemID(respID string, i int) string {
	return fmt.Sprintf("fc_%s_%d", strings.TrimPrefix(respID, "resp_"), i)
}

// messageItem is a completed assistant message item holding text.
func messageItem(id, text string) OutputItem {
	return OutputItem{ID: id, Type: "message", Status: "completed", Role: "assistant",
		Content: []OutputContent{{Type: "output_text", Text: text}}}
}

// callItem is a function_call item, or a custom_tool_call item for a call of a custom tool, with
// the given status.
func callItem(id string, c hippocam.ToolCall, status string) OutputItem {
	if c.Kind == hippocam.ToolCustom {
		return OutputItem{ID: id, Type: "custom_tool_call", Status: status, CallID: c.ID, Name: c.Name, Input: c.Arguments, Namespace: c.Namespace}
	}
	return OutputItem{ID: id, Type: "function_call", Status: status, CallID: c.ID, Name: c.Name, Arguments: c.Arguments, Namespace: c.Namespace}
}

// itemCall is the tool call a function_call or custom_tool_call item holds.
func itemCall(it *OutputItem) hippocam.ToolCall {
	if it.Type == "custom_tool_call" {
		return hippocam.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Input, Kind: hippocam.ToolCustom, Namespace: it.Namespace}
	}
	return hippocam.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments, Namespace: it.Namespace}
}

// ResponseEvent is one server-sent event of a streamed response. Which fields are set depends on
// Type: Response for response.created, response.in_progress and response.completed; OutputIndex
// and Item for response.output_item.added and .done; ItemID, OutputIndex, ContentIndex and Part
// for response.content_part.added and .done; Delta or Text (with Logprobs) for
// response.output_text.delta and .done; Delta for response.function_call_arguments.delta,
// Arguments and Name for its .done; Delta or Input for response.custom_tool_call_input.delta
// and .done.
type ResponseEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *Response       `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	Item           *OutputItem     `json:"item,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	Part           *OutputContent  `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	Name           string          `json:"name,omitempty"`
	Input          *string         `json:"input,omitempty"`
	Logprobs       json.RawMessage `json:"logprobs,omitempty"`
}

// ResponseStream writes a response as server-sent events ("event: TYPE\ndata: JSON\n\n") while
// it is produced, numbering the events from 0. Drive it with Start, then Text and ToolCall as
// the answer arrives, then Finish; it emits every event the official SDKs expect in between. It
// flushes after each event when its writer is an http.Flusher. The caller sets the HTTP headers
// (Content-Type: text/event-stream). A ResponseStream is not safe for concurrent use.
type ResponseStream struct {
	sse *sse.Writer
	seq int
	// id is the response id; output the items sent so far, the last still open while text is
	// streaming into it (open).
	id     string
	output []OutputItem
	open   bool
	// text holds the text of the open message's last part while it streams (written into the
	// part when it ends), so that a long answer is not copied once per delta.
	text     strings.Builder
	messages int
	calls    int
	state    int // 0 before Start, 1 streaming, 2 finished
	err      error
}

// NewResponseStream returns a stream that writes to w. It does no I/O.
func NewResponseStream(w io.Writer) *ResponseStream {
	return &ResponseStream{sse: sse.NewWriter(w)}
}

// Start sends response.created and response.in_progress with resp as it stands before any
// output: status "in_progress", no output, no usage. It returns EINVALID when called twice, and
// the writer's error (EINTERNAL) when writing fails.
func (s *ResponseStream) Start(resp *Response) error {
	if s.state != 0 {
		return hippocam.Errorf(hippocam.EINVALID, "the response stream has already started")
	}
	s.state, s.id = 1, resp.ID
	snap := *resp
	snap.Status, snap.Output, snap.Usage = "in_progress", []OutputItem{}, nil
	s.send(ResponseEvent{Type: "response.created", Response: &snap})
	s.send(ResponseEvent{Type: "response.in_progress", Response: &snap})
	return s.err
}

// Text streams delta as more of the answer's text: it opens a message item first if none is
// open, and sends the text in pieces of at most 64 bytes, cut between characters. It returns
// EINVALID outside Start…Finish and the writer's error when writing fails.
func (s *ResponseStream) Text(delta string) error {
	if err := s.streaming(); err != nil {
		return err
	}
	if delta == "" {
		return nil
	}
	if !s.open {
		s.openMessage(messageItemID(s.id, s.messages))
	}
	s.appendText(delta)
	return s.err
}

// ToolCall streams one complete function call as its own item (closing an open message first),
// with its arguments in pieces of at most 64 bytes. It returns EINVALID outside Start…Finish and
// the writer's error when writing fails.
func (s *ResponseStream) ToolCall(c hippocam.ToolCall) error {
	if err := s.streaming(); err != nil {
		return err
	}
	s.closeMessage()
	s.call(callItemID(s.id, s.calls), c)
	return s.err
}

// Finish closes the open message, if any (or sends an empty one when the answer had no output at
// all), and sends response.completed with resp, whose output is replaced by the items the stream
// sent, so that the final response always matches the events. An empty resp.Status becomes
// "completed". It returns EINVALID outside Start…Finish and the writer's error when writing fails.
func (s *ResponseStream) Finish(resp *Response) error {
	if err := s.streaming(); err != nil {
		return err
	}
	s.closeMessage()
	if len(s.output) == 0 {
		s.openMessage(messageItemID(s.id, 0))
		s.closeMessage()
	}
	final := *resp
	final.Output = append([]OutputItem(nil), s.output...)
	if final.Status == "" {
		final.Status = "completed"
	}
	s.send(ResponseEvent{Type: "response.completed", Response: &final})
	s.state = 2
	return s.err
}

// Fail ends the stream as the Responses API ends an answer that failed: response.failed with
// resp as it stood, its status "failed", its error {"code","message"} and the output the stream
// sent (an item still open is "incomplete"). No response.completed follows. An empty code is
// "server_error". It returns EINVALID outside Start…Finish and the writer's error when writing
// fails.
func (s *ResponseStream) Fail(resp *Response, code, message string) error {
	if err := s.streaming(); err != nil {
		return err
	}
	if code == "" {
		code = "server_error"
	}
	if s.open {
		s.open = false
		idx := len(s.output) - 1
		it := &s.output[idx]
		it.Content[len(it.Content)-1].Text += s.text.String()
		it.Status = "incomplete"
		s.text.Reset()
	}
	failed := *resp
	failed.Status, failed.Usage = "failed", nil
	failed.Output = append([]OutputItem(nil), s.output...)
	failed.Error, _ = json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{code, message})
	s.send(ResponseEvent{Type: "response.failed", Response: &failed})
	s.state = 2
	return s.err
}

// WriteResponseStream writes a whole completed response as an event stream: the same events a
// ResponseStream sends for it, with the items' own ids, ending with response.completed carrying
// resp. Items other than messages and tool calls are sent as they are (added, then done). It
// returns the writer's error (EINTERNAL) when writing fails.
func WriteResponseStream(w io.Writer, resp *Response) error {
	s := NewResponseStream(w)
	if err := s.Start(resp); err != nil {
		return err
	}
	for i := range resp.Output {
		it := resp.Output[i]
		switch it.Type {
		case "message":
			s.streamMessage(&it)
		case "function_call", "custom_tool_call":
			s.call(it.ID, itemCall(&it))
		default:
			idx := len(s.output)
			s.send(ResponseEvent{Type: "response.output_item.added", OutputIndex: &idx, Item: &it})
			s.send(ResponseEvent{Type: "response.output_item.done", OutputIndex: &idx, Item: &it})
			s.output = append(s.output, it)
		}
	}
	if len(resp.Output) == 0 {
		s.state = 2 // an empty output stays empty
		final := *resp
		s.send(ResponseEvent{Type: "response.completed", Response: &final})
		return s.err
	}
	return s.Finish(resp)
}

// streaming reports misuse: a call outside Start…Finish, or after a write failed.
func (s *ResponseStream) streaming() error {
	if s.err != nil {
		return s.err
	}
	if s.state != 1 {
		return hippocam.Errorf(hippocam.EINVALID, "the response stream is not streaming (call Start first, nothing after Finish)")
	}
	return nil
}

// openMessage starts a message item with one empty output_text part.
func (s *ResponseStream) openMessage(id string) {
	idx := len(s.output)
	item := OutputItem{ID: id, Type: "message", Status: "in_progress", Role: "assistant"}
	s.send(ResponseEvent{Type: "response.output_item.added", OutputIndex: &idx, Item: &item})
	item.Content = []OutputContent{{Type: "output_text"}}
	s.output = append(s.output, item)
	s.messages++
	s.open = true
	s.partAdded(0)
}

// partAdded announces content part k of the open message, empty.
func (s *ResponseStream) partAdded(k int) {
	idx := len(s.output) - 1
	it := &s.output[idx]
	empty := it.Content[k]
	empty.Text, empty.Refusal = "", ""
	s.send(ResponseEvent{Type: "response.content_part.added", ItemID: it.ID, OutputIndex: &idx, ContentIndex: &k, Part: &empty})
}

// appendText streams text into the last part of the open message.
func (s *ResponseStream) appendText(text string) {
	idx := len(s.output) - 1
	it := &s.output[idx]
	k := len(it.Content) - 1
	for _, p := range sse.Split(text, responsePiece) {
		s.send(ResponseEvent{Type: "response.output_text.delta", ItemID: it.ID, OutputIndex: &idx, ContentIndex: &k,
			Delta: &p, Logprobs: json.RawMessage("[]")})
	}
	s.text.WriteString(text)
}

// partDone ends content part k of the open message.
func (s *ResponseStream) partDone(k int) {
	idx := len(s.output) - 1
	it := &s.output[idx]
	if it.Content[k].Type == "output_text" && s.text.Len() > 0 {
		it.Content[k].Text += s.text.String()
		s.text.Reset()
	}
	part := it.Content[k]
	if part.Type == "output_text" {
		s.send(ResponseEvent{Type: "response.output_text.done", ItemID: it.ID, OutputIndex: &idx, ContentIndex: &k,
			Text: &part.Text, Logprobs: json.RawMessage("[]")})
	}
	s.send(ResponseEvent{Type: "response.content_part.done", ItemID: it.ID, OutputIndex: &idx, ContentIndex: &k, Part: &part})
}

// closeMessage ends the open message item, if any.
func (s *ResponseStream) closeMessage() {
	if !s.open {
		return
	}
	s.open = false
	idx := len(s.output) - 1
	s.partDone(len(s.output[idx].Content) - 1)
	s.output[idx].Status = "completed"
	item := s.output[idx]
	s.send(ResponseEvent{Type: "response.output_item.done", OutputIndex: &idx, Item: &item})
}

// streamMessage streams a whole message item part by part: output_text parts as text deltas,
// other parts (refusals) whole.
func (s *ResponseStream) streamMessage(src *OutputItem) {
	idx := len(s.output)
	item := *src
	item.Status, item.Content = "in_progress", nil
	s.send(ResponseEvent{Type: "response.output_item.added", OutputIndex: &idx, Item: &item})
	s.output = append(s.output, item)
	s.messages++
	s.open = true
	for k, part := range src.Content {
		it := &s.output[idx]
		if part.Type != "output_text" {
			it.Content = append(it.Content, part)
			s.partAdded(k)
			s.partDone(k)
			continue
		}
		text := part.Text
		part.Text = ""
		it.Content = append(it.Content, part)
		s.partAdded(k)
		s.appendText(text)
		if k < len(src.Content)-1 {
			s.partDone(k)
		}
	}
	if len(src.Content) == 0 || src.Content[len(src.Content)-1].Type != "output_text" {
		s.open = false
		s.output[idx].Status = "completed"
		done := s.output[idx]
		s.send(ResponseEvent{Type: "response.output_item.done", OutputIndex: &idx, Item: &done})
		return
	}
	s.closeMessage()
}

// call streams one function_call item (added with empty arguments, the arguments in pieces,
// done), or one custom_tool_call item (the same with its input).
func (s *ResponseStream) call(id string, c hippocam.ToolCall) {
	idx := len(s.output)
	item := callItem(id, c, "in_progress")
	item.Arguments, item.Input = "", ""
	s.send(ResponseEvent{Type: "response.output_item.added", OutputIndex: &idx, Item: &item})
	args := c.Arguments
	if c.Kind == hippocam.ToolCustom {
		for _, p := range sse.Split(args, responsePiece) {
			s.send(ResponseEvent{Type: "response.custom_tool_call_input.delta", ItemID: id, OutputIndex: &idx, Delta: &p})
		}
		s.send(ResponseEvent{Type: "response.custom_tool_call_input.done", ItemID: id, OutputIndex: &idx, Input: &args})
	} else {
		for _, p := range sse.Split(args, responsePiece) {
			s.send(ResponseEvent{Type: "response.function_call_arguments.delta", ItemID: id, OutputIndex: &idx, Delta: &p})
		}
		s.send(ResponseEvent{Type: "response.function_call_arguments.done", ItemID: id, OutputIndex: &idx, Arguments: &args, Name: c.Name})
	}
	done := callItem(id, c, "completed")
	s.send(ResponseEvent{Type: "response.output_item.done", OutputIndex: &idx, Item: &done})
	s.output = append(s.output, done)
	s.calls++
}

// send writes one event with the next sequence number; after a failed write it does nothing.
func (s *ResponseStream) send(ev ResponseEvent) {
	if s.err != nil {
		return
	}
	ev.SequenceNumber = s.seq
	s.seq++
	s.write(ev.Type, ev)
}

// write writes one event named typ with v as its data, and flushes; after a failed write it
// does nothing.
func (s *ResponseStream) write(typ string, v any) {
	if s.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		s.err = fmt.Errorf("encode %s event: %w", typ, err)
		return
	}
	if err := s.sse.Event(typ, b); err != nil {
		s.err = fmt.Errorf("write %s event: %w", typ, err)
	}
}

// responsePiece is the most bytes one text or arguments delta carries.
const responsePiece = 64

// ReadResponseEvents parses an event stream of a Responses answer into its events, in order. It
// returns EINVALID for a line that is not "event: …" or "data: …", data that is not an event, or
// an event line whose type differs from its data's.
func ReadResponseEvents(r io.Reader) ([]ResponseEvent, error) {
	var events []ResponseEvent
	sr := sse.NewReader(r)
	sr.Check = func(line []byte) error {
		if !bytes.HasPrefix(line, []byte("event: ")) && !bytes.HasPrefix(line, []byte("data: ")) {
			return hippocam.Errorf(hippocam.EINVALID, "unexpected stream line %q", line)
		}
		return nil
	}
	for {
		se, err := sr.Next()
		if se.Data != nil {
			var ev ResponseEvent
			if err := json.Unmarshal(se.Data, &ev); err != nil {
				return nil, hippocam.Errorf(hippocam.EINVALID, "event %d: %v", len(events), err)
			}
			if se.Name != "" && se.Name != ev.Type {
				return nil, hippocam.Errorf(hippocam.EINVALID, "event %d: named %q, but its data is a %q", len(events), se.Name, ev.Type)
			}
			events = append(events, ev)
		}
		switch {
		case err == io.EOF:
			return events, nil
		case hippocam.ErrorCode(err) == hippocam.EINVALID:
			return nil, err
		case err != nil:
			return nil, hippocam.Errorf(hippocam.EINVALID, "read the stream: %v", err)
		}
	}
}

// WriteResponsesError writes OpenAI's error body ({"error":{"message","type","param","code"}})
// with the given HTTP status; an empty code is written as null. It returns nothing: a failed
// write leaves nothing more to do.
func WriteResponsesError(w http.ResponseWriter, status int, typ, code, msg string) {
	body := ErrorResponse{Error: ErrorBody{Message: msg, Type: typ}}
	if code != "" {
		body.Error.Code = &code
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
