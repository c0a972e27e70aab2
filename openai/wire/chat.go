package wire

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ChatRequest is the body of POST /v1/chat/completions.
type ChatRequest struct {
	Model         string          `json:"model"`
	Messages      []ChatMessage   `json:"messages"`
	Tools         []ToolDef       `json:"tools,omitempty"`
	ToolChoice    json.RawMessage `json:"tool_choice,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	StreamOptions *StreamOptions  `json:"stream_options,omitempty"`
	MaxTokens     *int            `json:"max_tokens,omitempty"`
	Extra         Extra           `json:"-"`
}

type chatRequest ChatRequest

// UnmarshalJSON keeps unknown fields in Extra.
func (r *ChatRequest) UnmarshalJSON(b []byte) error {
	var fast ChatRequest
	if d := newDecoder(b); d.request(&fast) && d.end() {
		*r = fast
		return nil
	}
	var a chatRequest
	extra, err := decodeSlow(b, &a)
	if err != nil {
		return err
	}
	*r = ChatRequest(a)
	r.Extra = extra
	return nil
}

// MarshalJSON writes Extra back.
func (r ChatRequest) MarshalJSON() ([]byte, error) {
	e := encoder{b: make([]byte, 0, requestSize(&r))}
	if e.request(&r, true) {
		return e.b, nil
	}
	return encodeSlow(chatRequest(r), r.Extra)
}

// StreamOptions asks a streaming endpoint for a final usage chunk.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatMessage is one message of a request or a response.
type ChatMessage struct {
	Role string `json:"role"`
	// Content is a JSON string, an array of content parts, or null; it is kept raw so that it
	// passes through byte for byte.
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Extra      Extra           `json:"-"`
}

type chatMessage ChatMessage

// UnmarshalJSON keeps unknown fields in Extra.
func (m *ChatMessage) UnmarshalJSON(b []byte) error {
	var fast ChatMessage
	if d := newDecoder(b); d.message(&fast) && d.end() {
		*m = fast
		return nil
	}
	var a chatMessage
	extra, err := decodeSlow(b, &a)
	if err != nil {
		return err
	}
	*m = ChatMessage(a)
	m.Extra = extra
	return nil
}

// MarshalJSON writes Extra back.
func (m ChatMessage) MarshalJSON() ([]byte, error) {
	e := encoder{b: make([]byte, 0, messageSize(&m))}
	if e.message(&m, true) {
		return e.b, nil
	}
	return encodeSlow(chatMessage(m), m.Extra)
}

// Text returns the message's text: the string content, or the text parts of an array joined
// by newlines. It fails on content of any other shape.
func (m *ChatMessage) Text() (string, error) {
	c := m.Content
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	switch c[0] {
	case '"':
		var s string
		if d := newDecoder(c); d.string(&s) && d.end() {
			return s, nil
		}
		err := json.Unmarshal(c, &s)
		return s, err
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(c, &parts); err != nil {
			return "", err
		}
		var texts []string
		for _, p := range parts {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n"), nil
	}
	return "", fmt.Errorf("content must be a string or an array of parts")
}

// StringContent returns s as a JSON string content.
func StringContent(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// ToolCall is a call in an assistant message: of a function (Function), or of a custom tool
// (Type "custom", Custom; Function is then not written).
type ToolCall struct {
	// Index is set only in streamed deltas.
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
	Custom   *CustomCall  `json:"custom,omitempty"`
}

// CustomCall names the custom tool called and carries its free-text input.
type CustomCall struct {
	Name  string `json:"name"`
	Input string `json:"input"`
}

// MarshalJSON writes a function call, or a custom call without the function member.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	e := encoder{}
	e.toolCall(&c)
	return e.b, nil
}

// FunctionCall names the function and carries its JSON arguments as a string.
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ToolDef declares a tool in a request. Raw, when set, is a tool of another type than function
// as the client sent it, written back byte for byte.
type ToolDef struct {
	Type     string          `json:"type"`
	Function FunctionDef     `json:"function"`
	Extra    Extra           `json:"-"`
	Raw      json.RawMessage `json:"-"`
}

type toolDef ToolDef

// UnmarshalJSON keeps unknown fields in Extra.
func (t *ToolDef) UnmarshalJSON(b []byte) error {
	var fast ToolDef
	if d := newDecoder(b); d.toolDef(&fast) && d.end() {
		*t = fast
		return nil
	}
	var a toolDef
	extra, err := decodeSlow(b, &a)
	if err != nil {
		return err
	}
	*t = ToolDef(a)
	t.Extra = extra
	return nil
}

// MarshalJSON writes Raw when set, otherwise the tool with its Extra.
func (t ToolDef) MarshalJSON() ([]byte, error) {
	if len(t.Raw) > 0 {
		return t.Raw, nil
	}
	e := encoder{b: make([]byte, 0, toolDefSize(&t))}
	if e.toolDef(&t, true) {
		return e.b, nil
	}
	return encodeSlow(toolDef(t), t.Extra)
}

// FunctionDef is a tool's function: name, description and JSON Schema parameters.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ChatResponse is a non-streamed completion.
type ChatResponse struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage,omitempty"`
	Extra   Extra    `json:"-"`
}

type chatResponse ChatResponse

// UnmarshalJSON keeps unknown fields in Extra.
func (r *ChatResponse) UnmarshalJSON(b []byte) error {
	var fast ChatResponse
	if d := newDecoder(b); d.response(&fast) && d.end() {
		*r = fast
		return nil
	}
	var a chatResponse
	extra, err := decodeSlow(b, &a)
	if err != nil {
		return err
	}
	*r = ChatResponse(a)
	r.Extra = extra
	return nil
}

// MarshalJSON writes Extra back.
func (r ChatResponse) MarshalJSON() ([]byte, error) {
	e := encoder{b: make([]byte, 0, responseSize(&r))}
	if e.response(&r, true) {
		return e.b, nil
	}
	return encodeSlow(chatResponse(r), r.Extra)
}

// Choice is one alternative of a completion. Logprobs is kept raw, and written as null when
// unset.
type Choice struct {
	Index        int             `json:"index"`
	Message      ChatMessage     `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Logprobs     json.RawMessage `json:"logprobs"`
}

// Usage is a completion's token accounting.
type Usage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// PromptTokensDetails reports the prompt tokens served from the provider's cache, and those of
// audio input.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
	AudioTokens  int `json:"audio_tokens"`
}

// CompletionTokensDetails breaks the completion tokens down: reasoning, audio, and the tokens
// of a predicted output that were accepted or rejected.
type CompletionTokensDetails struct {
	ReasoningTokens          int `json:"reasoning_tokens"`
	AudioTokens              int `json:"audio_tokens"`
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
}

// ChatChunk is one server-sent event of a streamed completion.
type ChatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
}

// ChunkChoice is one choice's delta in a chunk. Logprobs is kept raw, and written as null when
// unset.
type ChunkChoice struct {
	Index        int             `json:"index"`
	Delta        Delta           `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// Delta is the increment a chunk carries.
type Delta struct {
	Role      string     `json:"role,omitempty"`
	Content   *string    `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ErrorResponse is OpenAI's error body.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody describes an error.
type ErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
