package wire

// The reference: the implementation before the fast decoder and encoder, kept verbatim (types
// renamed with a Zref prefix, which tests strip from error messages) so that tests can compare
// the two on any input.

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"sync"
)

var refKnownKeys sync.Map // reflect.Type -> map[string]bool

func refKeysOf(t reflect.Type) map[string]bool {
	if k, ok := refKnownKeys.Load(t); ok {
		return k.(map[string]bool)
	}
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	refKnownKeys.Store(t, keys)
	return keys
}

func refDecode(data []byte, v any) (Extra, error) {
	if err := json.Unmarshal(data, v); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	known := refKeysOf(reflect.TypeOf(v).Elem())
	var extra Extra
	for k, raw := range all {
		if !known[k] {
			if extra == nil {
				extra = Extra{}
			}
			extra[k] = raw
		}
	}
	return extra, nil
}

func refEncode(v any, extra Extra) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	first := len(b) == 2
	for _, k := range keys {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(extra[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

type ZrefChatRequest struct {
	Model         string            `json:"model"`
	Messages      []ZrefChatMessage `json:"messages"`
	Tools         []ZrefToolDef     `json:"tools,omitempty"`
	ToolChoice    json.RawMessage   `json:"tool_choice,omitempty"`
	Stream        bool              `json:"stream,omitempty"`
	StreamOptions *StreamOptions    `json:"stream_options,omitempty"`
	MaxTokens     *int              `json:"max_tokens,omitempty"`
	Extra         Extra             `json:"-"`
}

type ZrefchatRequest ZrefChatRequest

func (r *ZrefChatRequest) UnmarshalJSON(b []byte) error {
	var a ZrefchatRequest
	extra, err := refDecode(b, &a)
	if err != nil {
		return err
	}
	*r = ZrefChatRequest(a)
	r.Extra = extra
	return nil
}

func (r ZrefChatRequest) MarshalJSON() ([]byte, error) { return refEncode(ZrefchatRequest(r), r.Extra) }

type ZrefChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Extra      Extra           `json:"-"`
}

type ZrefchatMessage ZrefChatMessage

func (m *ZrefChatMessage) UnmarshalJSON(b []byte) error {
	var a ZrefchatMessage
	extra, err := refDecode(b, &a)
	if err != nil {
		return err
	}
	*m = ZrefChatMessage(a)
	m.Extra = extra
	return nil
}

func (m ZrefChatMessage) MarshalJSON() ([]byte, error) { return refEncode(ZrefchatMessage(m), m.Extra) }

type ZrefToolDef struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
	Extra    Extra       `json:"-"`
}

type ZreftoolDef ZrefToolDef

func (t *ZrefToolDef) UnmarshalJSON(b []byte) error {
	var a ZreftoolDef
	extra, err := refDecode(b, &a)
	if err != nil {
		return err
	}
	*t = ZrefToolDef(a)
	t.Extra = extra
	return nil
}

func (t ZrefToolDef) MarshalJSON() ([]byte, error) { return refEncode(ZreftoolDef(t), t.Extra) }

type ZrefChatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ZrefChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
	Extra   Extra        `json:"-"`
}

type ZrefchatResponse ZrefChatResponse

func (r *ZrefChatResponse) UnmarshalJSON(b []byte) error {
	var a ZrefchatResponse
	extra, err := refDecode(b, &a)
	if err != nil {
		return err
	}
	*r = ZrefChatResponse(a)
	r.Extra = extra
	return nil
}

func (r ZrefChatResponse) MarshalJSON() ([]byte, error) {
	return refEncode(ZrefchatResponse(r), r.Extra)
}

type ZrefChoice struct {
	Index        int             `json:"index"`
	Message      ZrefChatMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Logprobs     json.RawMessage `json:"logprobs"`
}

// Conversions between the reference types and the real ones; they keep nil and empty apart.

func convSlice[A, B any](in []A, f func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func msgToRef(m ChatMessage) ZrefChatMessage   { return ZrefChatMessage(m) }
func msgFromRef(m ZrefChatMessage) ChatMessage { return ChatMessage(m) }
func toolToRef(t ToolDef) ZrefToolDef {
	return ZrefToolDef{Type: t.Type, Function: t.Function, Extra: t.Extra}
}
func toolFromRef(t ZrefToolDef) ToolDef {
	return ToolDef{Type: t.Type, Function: t.Function, Extra: t.Extra}
}

func reqToRef(r ChatRequest) ZrefChatRequest {
	return ZrefChatRequest{Model: r.Model, Messages: convSlice(r.Messages, msgToRef), Tools: convSlice(r.Tools, toolToRef),
		ToolChoice: r.ToolChoice, Stream: r.Stream, StreamOptions: r.StreamOptions, MaxTokens: r.MaxTokens, Extra: r.Extra}
}

func reqFromRef(r ZrefChatRequest) ChatRequest {
	return ChatRequest{Model: r.Model, Messages: convSlice(r.Messages, msgFromRef), Tools: convSlice(r.Tools, toolFromRef),
		ToolChoice: r.ToolChoice, Stream: r.Stream, StreamOptions: r.StreamOptions, MaxTokens: r.MaxTokens, Extra: r.Extra}
}

func respToRef(r ChatResponse) ZrefChatResponse {
	return ZrefChatResponse{ID: r.ID, Object: r.Object, Created: r.Created, Model: r.Model, Usage: r.Usage, Extra: r.Extra,
		Choices: convSlice(r.Choices, func(c Choice) ZrefChoice {
			return ZrefChoice{Index: c.Index, Message: ZrefChatMessage(c.Message), FinishReason: c.FinishReason, Logprobs: c.Logprobs}
		})}
}

func respFromRef(r ZrefChatResponse) ChatResponse {
	return ChatResponse{ID: r.ID, Object: r.Object, Created: r.Created, Model: r.Model, Usage: r.Usage, Extra: r.Extra,
		Choices: convSlice(r.Choices, func(c ZrefChoice) Choice {
			return Choice{Index: c.Index, Message: ChatMessage(c.Message), FinishReason: c.FinishReason, Logprobs: c.Logprobs}
		})}
}
