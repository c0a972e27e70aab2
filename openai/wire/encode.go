package wire

import (
	"slices"
	"strconv"
)

// The fast encoder writes a value in one pass, with the bytes encodeSlow gives: the known
// fields as encoding/json writes the alias struct, then the unknown ones in key order. A
// MarshalJSON method writes its own unknown fields as they are, but encoding/json compacts the
// output of every MarshalJSON (and RawMessage) it calls, so the objects nested in the value
// (messages in a request, tools, choices) have theirs — and every raw value — checked,
// compacted and HTML-escaped. When such a raw value is not valid JSON, encoding fails; the
// encoder then reports false and MarshalJSON runs encodeSlow, for the same error.

type encoder struct {
	b []byte
}

func (e *encoder) str(s string) { e.b = appendString(e.b, s) }

func (e *encoder) int(n int64) { e.b = strconv.AppendInt(e.b, n, 10) }

func (e *encoder) bool(v bool) { e.b = strconv.AppendBool(e.b, v) }

// raw writes a raw value as encoding/json writes a RawMessage.
func (e *encoder) raw(v []byte) bool {
	var ok bool
	e.b, ok = appendRaw(e.b, v)
	return ok
}

// extra writes the unknown fields after the known ones (the object is open and not empty):
// as they are at the top, checked and compacted when nested.
func (e *encoder) extra(x Extra, top bool) bool {
	switch len(x) {
	case 0:
		return true
	case 1:
		for k, v := range x {
			return e.member(k, v, top)
		}
	}
	var arr [16]string
	keys := arr[:0]
	for k := range x {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !e.member(k, x[k], top) {
			return false
		}
	}
	return true
}

func (e *encoder) member(k string, v []byte, top bool) bool {
	e.b = append(e.b, ',')
	e.str(k)
	e.b = append(e.b, ':')
	if top {
		e.b = append(e.b, v...)
		return true
	}
	return e.raw(v)
}

func (e *encoder) request(r *ChatRequest, top bool) bool {
	return e.requestWith(r, top, func() bool {
		if r.Messages == nil {
			e.b = append(e.b, "null"...)
			return true
		}
		e.b = append(e.b, '[')
		for i := range r.Messages {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			if !e.message(&r.Messages[i], false) {
				return false
			}
		}
		e.b = append(e.b, ']')
		return true
	})
}

// requestWith writes r with messages writing the value of its "messages" member.
func (e *encoder) requestWith(r *ChatRequest, top bool, messages func() bool) bool {
	e.b = append(e.b, `{"model":`...)
	e.str(r.Model)
	e.b = append(e.b, `,"messages":`...)
	if !messages() {
		return false
	}
	if len(r.Tools) > 0 {
		e.b = append(e.b, `,"tools":[`...)
		for i := range r.Tools {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			if !e.toolDef(&r.Tools[i], false) {
				return false
			}
		}
		e.b = append(e.b, ']')
	}
	if len(r.ToolChoice) > 0 {
		e.b = append(e.b, `,"tool_choice":`...)
		if !e.raw(r.ToolChoice) {
			return false
		}
	}
	if r.Stream {
		e.b = append(e.b, `,"stream":true`...)
	}
	if r.StreamOptions != nil {
		e.b = append(e.b, `,"stream_options":{"include_usage":`...)
		e.bool(r.StreamOptions.IncludeUsage)
		e.b = append(e.b, '}')
	}
	if r.MaxTokens != nil {
		e.b = append(e.b, `,"max_tokens":`...)
		e.int(int64(*r.MaxTokens))
	}
	if !e.extra(r.Extra, top) {
		return false
	}
	e.b = append(e.b, '}')
	return true
}

func (e *encoder) message(m *ChatMessage, top bool) bool {
	e.b = append(e.b, `{"role":`...)
	e.str(m.Role)
	if len(m.Content) > 0 {
		e.b = append(e.b, `,"content":`...)
		if !e.raw(m.Content) {
			return false
		}
	}
	if m.Name != "" {
		e.b = append(e.b, `,"name":`...)
		e.str(m.Name)
	}
	if len(m.ToolCalls) > 0 {
		e.b = append(e.b, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.toolCall(&m.ToolCalls[i])
		}
		e.b = append(e.b, ']')
	}
	if m.ToolCallID != "" {
		e.b = append(e.b, `,"tool_call_id":`...)
		e.str(m.ToolCallID)
	}
	if !e.extra(m.Extra, top) {
		return false
	}
	e.b = append(e.b, '}')
	return true
}

func (e *encoder) toolCall(c *ToolCall) {
	e.b = append(e.b, '{')
	if c.Index != nil {
		e.b = append(e.b, `"index":`...)
		e.int(int64(*c.Index))
		e.b = append(e.b, ',')
	}
	if c.ID != "" {
		e.b = append(e.b, `"id":`...)
		e.str(c.ID)
		e.b = append(e.b, ',')
	}
	if c.Type != "" {
		e.b = append(e.b, `"type":`...)
		e.str(c.Type)
		e.b = append(e.b, ',')
	}
	if c.Custom != nil {
		e.b = append(e.b, `"custom":{"name":`...)
		e.str(c.Custom.Name)
		e.b = append(e.b, `,"input":`...)
		e.str(c.Custom.Input)
		e.b = append(e.b, "}}"...)
		return
	}
	e.b = append(e.b, `"function":{`...)
	if c.Function.Name != "" {
		e.b = append(e.b, `"name":`...)
		e.str(c.Function.Name)
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, `"arguments":`...)
	e.str(c.Function.Arguments)
	e.b = append(e.b, "}}"...)
}

func (e *encoder) toolDef(t *ToolDef, top bool) bool {
	if len(t.Raw) > 0 {
		return e.raw(t.Raw)
	}
	e.b = append(e.b, `{"type":`...)
	e.str(t.Type)
	f := &t.Function
	e.b = append(e.b, `,"function":{"name":`...)
	e.str(f.Name)
	if f.Description != "" {
		e.b = append(e.b, `,"description":`...)
		e.str(f.Description)
	}
	if len(f.Parameters) > 0 {
		e.b = append(e.b, `,"parameters":`...)
		if !e.raw(f.Parameters) {
			return false
		}
	}
	if f.Strict != nil {
		e.b = append(e.b, `,"strict":`...)
		e.bool(*f.Strict)
	}
	e.b = append(e.b, '}')
	if !e.extra(t.Extra, top) {
		return false
	}
	e.b = append(e.b, '}')
	return true
}

func (e *encoder) response(r *ChatResponse, top bool) bool {
	e.b = append(e.b, `{"id":`...)
	e.str(r.ID)
	e.b = append(e.b, `,"object":`...)
	e.str(r.Object)
	e.b = append(e.b, `,"created":`...)
	e.int(r.Created)
	e.b = append(e.b, `,"model":`...)
	e.str(r.Model)
	e.b = append(e.b, `,"choices":`...)
	if r.Choices == nil {
		e.b = append(e.b, "null"...)
	} else {
		e.b = append(e.b, '[')
		for i := range r.Choices {
			c := &r.Choices[i]
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(e.b, `{"index":`...)
			e.int(int64(c.Index))
			e.b = append(e.b, `,"message":`...)
			if !e.message(&c.Message, false) {
				return false
			}
			e.b = append(e.b, `,"finish_reason":`...)
			e.str(c.FinishReason)
			e.b = append(e.b, `,"logprobs":`...)
			if c.Logprobs == nil {
				e.b = append(e.b, "null"...)
			} else if !e.raw(c.Logprobs) {
				return false
			}
			e.b = append(e.b, '}')
		}
		e.b = append(e.b, ']')
	}
	if u := r.Usage; u != nil {
		e.b = append(e.b, `,"usage":{"prompt_tokens":`...)
		e.int(int64(u.PromptTokens))
		e.b = append(e.b, `,"completion_tokens":`...)
		e.int(int64(u.CompletionTokens))
		e.b = append(e.b, `,"total_tokens":`...)
		e.int(int64(u.TotalTokens))
		if d := u.PromptTokensDetails; d != nil {
			e.b = append(e.b, `,"prompt_tokens_details":{"cached_tokens":`...)
			e.int(int64(d.CachedTokens))
			e.b = append(e.b, `,"audio_tokens":`...)
			e.int(int64(d.AudioTokens))
			e.b = append(e.b, '}')
		}
		if d := u.CompletionTokensDetails; d != nil {
			e.b = append(e.b, `,"completion_tokens_details":{"reasoning_tokens":`...)
			e.int(int64(d.ReasoningTokens))
			e.b = append(e.b, `,"audio_tokens":`...)
			e.int(int64(d.AudioTokens))
			e.b = append(e.b, `,"accepted_prediction_tokens":`...)
			e.int(int64(d.AcceptedPredictionTokens))
			e.b = append(e.b, `,"rejected_prediction_tokens":`...)
			e.int(int64(d.RejectedPredictionTokens))
			e.b = append(e.b, '}')
		}
		e.b = append(e.b, '}')
	}
	if !e.extra(r.Extra, top) {
		return false
	}
	e.b = append(e.b, '}')
	return true
}

// Size estimates, so that the output buffer is allocated once in the common case.

func extraSize(x Extra) int {
	n := 0
	for k, v := range x {
		n += len(k) + len(v) + 4
	}
	return n
}

func messageSize(m *ChatMessage) int {
	n := 32 + len(m.Role) + len(m.Content) + len(m.Name) + len(m.ToolCallID) + extraSize(m.Extra)
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		// Arguments are JSON: their quotes come back escaped.
		n += 64 + len(c.ID) + len(c.Type) + len(c.Function.Name) + len(c.Function.Arguments)*5/4
	}
	return n + n/16
}

func toolDefSize(t *ToolDef) int {
	return 80 + len(t.Type) + len(t.Function.Name) + len(t.Function.Description) + len(t.Function.Parameters) + extraSize(t.Extra)
}

func requestSize(r *ChatRequest) int {
	n := 128 + len(r.Model) + len(r.ToolChoice) + extraSize(r.Extra)
	for i := range r.Messages {
		n += messageSize(&r.Messages[i])
	}
	for i := range r.Tools {
		n += toolDefSize(&r.Tools[i])
	}
	return n
}

func responseSize(r *ChatResponse) int {
	n := 256 + len(r.ID) + len(r.Object) + len(r.Model) + extraSize(r.Extra)
	for i := range r.Choices {
		n += 80 + len(r.Choices[i].FinishReason) + len(r.Choices[i].Logprobs) + messageSize(&r.Choices[i].Message)
	}
	return n
}
