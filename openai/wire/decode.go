package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The fast decoder reads a whole request or response in one pass, decoding each known field's
// value in place and copying the raw ones (content, unknown fields…) one by one, as
// json.RawMessage does, so that nothing shares or retains the input (unless the caller, which
// keeps the input, asks for slices of it: ReadChatRequest). It handles what clients
// send. Whenever it meets anything else — invalid JSON, a value of the wrong type, a repeated
// field, a key that matches a field only case-insensitively or that has escapes or non-ASCII
// bytes, very deep nesting — it reports failure and UnmarshalJSON runs decodeSlow, the reference
// implementation, whose result and error are therefore unchanged.

type decoder struct {
	scanner
	// share makes the raw values it keeps slices of the input instead of copies, for a caller
	// that keeps the input as long as the value (ReadChatRequest).
	share bool
	// sink, when set, receives the messages of a request as they are read, each with its exact
	// bytes, instead of the request's Messages.
	sink messageSink
}

// messageSink takes the messages of a request: expect is given a count of them (to call only if
// needed: it scans the array), add is given each one. Before that, as long as it finds one,
// reuse is asked whether the sink already has the next message: rest is the input from the
// message's first byte, and reuse returns the length of the message it has there (0: none).
type messageSink interface {
	expect(count func() int)
	reuse(rest []byte) int
	add(raw []byte, m *ChatMessage)
}

// newDecoder returns a decoder over b, at its first value. UnmarshalJSON must not keep b: the
// decoder copies the raw values it keeps.
func newDecoder(b []byte) *decoder {
	d := &decoder{scanner: scanner{data: b}}
	d.ws()
	return d
}

// end reports whether only whitespace follows the value.
func (d *decoder) end() bool {
	d.ws()
	return d.pos == len(d.data)
}

// open reads the '{' of an object, and its '}' too if it is empty; more reports a first member.
func (d *decoder) open() (more, ok bool) {
	if d.peek() != '{' {
		return false, false
	}
	d.pos++
	d.ws()
	if d.peek() == '}' {
		d.pos++
		return false, true
	}
	return true, true
}

// next reads what follows a member: ',' (more is true) or '}'.
func (d *decoder) next() (more, ok bool) {
	d.ws()
	switch d.peek() {
	case ',':
		d.pos++
		d.ws()
		return true, true
	case '}':
		d.pos++
		return false, true
	}
	return false, false
}

// key reads a member's key and the colon after it. Keys with escapes or bytes outside printable
// ASCII are refused, so that a key is its bytes and matches a field name only by ASCII folding.
func (d *decoder) key() ([]byte, bool) {
	if d.peek() != '"' {
		return nil, false
	}
	start := d.pos + 1
	for i := start; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			d.pos = i + 1
			d.ws()
			if d.peek() != ':' {
				return nil, false
			}
			d.pos++
			d.ws()
			return d.data[start:i], true
		}
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return nil, false
		}
	}
	return nil, false
}

// unknown handles a key that names no field: false (the slow path) if encoding/json would
// match it to one of names case-insensitively.
func unknown(key []byte, names []string) bool {
	for _, n := range names {
		if len(n) == len(key) && bytes.EqualFold(key, []byte(n)) {
			return false
		}
	}
	return true
}

// null reads a null if there is one.
func (d *decoder) null() bool {
	return d.peek() == 'n' && d.lit("null")
}

// raw reads any value and returns its bytes.
func (d *decoder) raw(dst *json.RawMessage) bool {
	start := d.pos
	if !d.value() {
		return false
	}
	if d.share {
		*dst = d.data[start:d.pos:d.pos]
	} else {
		*dst = bytes.Clone(d.data[start:d.pos])
	}
	return true
}

// extra reads an unknown field's value into x.
func (d *decoder) extra(x *Extra, key []byte) bool {
	var v json.RawMessage
	if !d.raw(&v) {
		return false
	}
	if *x == nil {
		*x = Extra{}
	}
	(*x)[string(key)] = v
	return true
}

// skip reads a value to ignore.
func (d *decoder) skip() bool { return d.value() }

// string reads a string into dst; null leaves it unchanged.
func (d *decoder) string(dst *string) bool {
	switch d.peek() {
	case 'n':
		return d.lit("null")
	case '"':
	default:
		return false
	}
	start := d.pos
	plain, ok := d.str()
	if !ok {
		return false
	}
	if plain {
		*dst = intern(d.data[start+1 : d.pos-1])
	} else {
		*dst = unquote(d.data[start:d.pos])
	}
	return true
}

// intern returns the string of b, without allocating for the common values.
func intern(b []byte) string {
	switch string(b) {
	case "":
		return ""
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "system":
		return "system"
	case "tool":
		return "tool"
	case "developer":
		return "developer"
	case "function":
		return "function"
	case "stop":
		return "stop"
	case "tool_calls":
		return "tool_calls"
	case "length":
		return "length"
	case "chat.completion":
		return "chat.completion"
	}
	return string(b)
}

// bool reads a boolean into dst; null leaves it unchanged.
func (d *decoder) bool(dst *bool) bool {
	switch d.peek() {
	case 't':
		*dst = true
		return d.lit("true")
	case 'f':
		*dst = false
		return d.lit("false")
	case 'n':
		return d.lit("null")
	}
	return false
}

// boolPtr reads a boolean into a new *bool; null sets nil.
func (d *decoder) boolPtr(dst **bool) bool {
	if d.null() {
		*dst = nil
		return true
	}
	var v bool
	if !d.bool(&v) {
		return false
	}
	*dst = &v
	return true
}

// int64 reads an integer as encoding/json does (strconv.ParseInt of the number's text);
// null reports isNull.
func (d *decoder) int64() (n int64, isNull, ok bool) {
	if d.null() {
		return 0, true, true
	}
	c := d.peek()
	if c != '-' && !isDigit(c) {
		return 0, false, false
	}
	start := d.pos
	if !d.number() {
		return 0, false, false
	}
	n, err := strconv.ParseInt(string(d.data[start:d.pos]), 10, 64)
	return n, false, err == nil
}

// int reads an int into dst; null leaves it unchanged.
func (d *decoder) int(dst *int) bool {
	n, isNull, ok := d.int64()
	if !ok || int64(int(n)) != n {
		return false
	}
	if !isNull {
		*dst = int(n)
	}
	return true
}

// intPtr reads an int into a new *int; null sets nil.
func (d *decoder) intPtr(dst **int) bool {
	n, isNull, ok := d.int64()
	if !ok || int64(int(n)) != n {
		return false
	}
	if isNull {
		*dst = nil
	} else {
		v := int(n)
		*dst = &v
	}
	return true
}

// std reads a value with encoding/json, for the small types without Extra.
func (d *decoder) std(v any) bool {
	start := d.pos
	if !d.value() {
		return false
	}
	return json.Unmarshal(d.data[start:d.pos], v) == nil
}

// list reads an array of T into dst as encoding/json does: null sets nil, [] an empty slice.
func list[T any](d *decoder, dst *[]T, elem func(*decoder, *T) bool) bool {
	if d.null() {
		*dst = nil
		return true
	}
	if d.peek() != '[' {
		return false
	}
	out := make([]T, 0, countObjects(d.data[d.pos:]))
	d.pos++
	d.ws()
	if d.peek() == ']' {
		d.pos++
		*dst = out
		return true
	}
	for {
		var zero T
		out = append(out, zero)
		if !elem(d, &out[len(out)-1]) {
			return false
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.pos++
			d.ws()
		case ']':
			d.pos++
			*dst = out
			return true
		default:
			return false
		}
	}
}

// countObjects counts the objects in the array that data starts with, to size the slice that
// receives them. It does not check the JSON (the decoder does): on invalid input its count is
// merely wrong. Counting only objects, each at least 3 bytes with its comma, keeps the memory
// set aside in proportion to the input that a failing decoding would have read anyway.
func countObjects(data []byte) int {
	n, depth := 0, 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{':
			if depth == 1 {
				n++
			}
			depth++
		case '[':
			depth++
		case ']', '}':
			if depth--; depth <= 0 {
				return n
			}
		}
	}
	return n
}

// Each decoding function below reads one object into a zero value. A field met twice gives up
// (encoding/json would merge the two values); seen has one bit per field.

var requestKeys = []string{"model", "messages", "tools", "tool_choice", "stream", "stream_options", "max_tokens"}

func (d *decoder) request(r *ChatRequest) bool {
	if d.null() {
		return true
	}
	more, ok := d.open()
	var seen, bit uint
	for ok && more {
		var k []byte
		if k, ok = d.key(); !ok {
			return false
		}
		switch string(k) {
		case "model":
			bit, ok = 1<<0, d.string(&r.Model)
		case "messages":
			if d.sink != nil {
				bit, ok = 1<<1, d.sinkMessages()
			} else {
				bit, ok = 1<<1, list(d, &r.Messages, (*decoder).message)
			}
		case "tools":
			bit, ok = 1<<2, list(d, &r.Tools, (*decoder).toolDef)
		case "tool_choice":
			bit, ok = 1<<3, d.raw(&r.ToolChoice)
		case "stream":
			bit, ok = 1<<4, d.bool(&r.Stream)
		case "stream_options":
			bit, ok = 1<<5, d.std(&r.StreamOptions)
		case "max_tokens":
			bit, ok = 1<<6, d.intPtr(&r.MaxTokens)
		default:
			bit, ok = 0, unknown(k, requestKeys) && d.extra(&r.Extra, k)
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		more, ok = d.next()
	}
	return ok
}

var messageKeys = []string{"role", "content", "name", "tool_calls", "tool_call_id"}

func (d *decoder) message(m *ChatMessage) bool {
	if d.null() {
		return true
	}
	more, ok := d.open()
	var seen, bit uint
	for ok && more {
		var k []byte
		if k, ok = d.key(); !ok {
			return false
		}
		switch string(k) {
		case "role":
			bit, ok = 1<<0, d.string(&m.Role)
		case "content":
			bit, ok = 1<<1, d.raw(&m.Content)
		case "name":
			bit, ok = 1<<2, d.string(&m.Name)
		case "tool_calls":
			bit, ok = 1<<3, list(d, &m.ToolCalls, (*decoder).toolCall)
		case "tool_call_id":
			bit, ok = 1<<4, d.string(&m.ToolCallID)
		default:
			bit, ok = 0, unknown(k, messageKeys) && d.extra(&m.Extra, k)
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		more, ok = d.next()
	}
	return ok
}

// sinkMessages reads the messages array of a request into d.sink, as list would read it into
// the request (null and [] give no message).
func (d *decoder) sinkMessages() bool {
	if d.null() {
		return true
	}
	if d.peek() != '[' {
		return false
	}
	array := d.data[d.pos:]
	d.sink.expect(func() int { return countObjects(array) })
	d.pos++
	d.ws()
	if d.peek() == ']' {
		d.pos++
		return true
	}
	m := new(ChatMessage) // one for all: the sink copies what it keeps
	reusing := true
	for {
		start := d.pos
		if reusing {
			n := d.sink.reuse(d.data[start:])
			d.pos += n
			reusing = n > 0
		}
		if !reusing {
			*m = ChatMessage{}
			if !d.message(m) {
				return false
			}
			d.sink.add(d.data[start:d.pos], m)
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.pos++
			d.ws()
		case ']':
			d.pos++
			return true
		default:
			return false
		}
	}
}

var toolCallKeys = []string{"index", "id", "type", "function", "custom"}

func (d *decoder) toolCall(c *ToolCall) bool {
	if d.null() {
		return true
	}
	more, ok := d.open()
	var seen, bit uint
	for ok && more {
		var k []byte
		if k, ok = d.key(); !ok {
			return false
		}
		switch string(k) {
		case "index":
			bit, ok = 1<<0, d.intPtr(&c.Index)
		case "id":
			bit, ok = 1<<1, d.string(&c.ID)
		case "type":
			bit, ok = 1<<2, d.string(&c.Type)
		case "function":
			bit, ok = 1<<3, d.functionCall(&c.Function)
		default:
			bit, ok = 0, unknown(k, toolCallKeys) && d.skip()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		more, ok = d.next()
	}
	return ok
}

var functionCallKeys = []string{"name", "arguments"}

func (d *decoder) functionCall(f *FunctionCall) bool {
	if d.null() {
		return true
	}
	more, ok := d.open()
	var seen, bit uint
	for ok && more {
		var k []byte
		if k, ok = d.key(); !ok {
			return false
		}
		switch string(k) {
		case "name":
			bit, ok = 1<<0, d.string(&f.Name)
		case "arguments":
			bit, ok = 1<<1, d.string(&f.Arguments)
		default:
			bit, ok = 0, unknown(k, functionCallKeys) && d.skip()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		more, ok = d.next()
	}
	return ok
}

var toolDefKeys = []string{"type", "function"}

func (d *decoder) toolDef(t *ToolDef) bool {
	if d.null() {
		return true
	}
	more, ok := d.open()
	var seen, bit uint
	for ok && more {
		var k []byte
		if k, ok = d.key(); !ok {
			return false
		}
		switch string(k) {
		case "type":
			bit, ok = 1<<0, d.string(&t.Type)
		case "function":
			bit, ok = 1<<1, d.functionDef(&t.Function)
		default:
			bit, ok = 0, unknown(k, toolDefKeys) && d.extra(&t.Extra, k)
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		more, ok = d.next()
	}
	return ok
}

var functionDefKeys = []string{"name", "description", "parameters", "strict"}

func (d *decoder) functionDef(f *FunctionDef) bool {
	if d.null() {
		return true
	}
	more, ok := d.open()
	var seen, bit uint
	for ok && more {
		var k []byte
		if k, ok = d.key(); !ok {
			return false
		}
		switch string(k) {
		case "name":
			bit, ok = 1<<0, d.string(&f.Name)
		case "description":
			bit, ok = 1<<1, d.string(&f.Description)
		case "parameters":
			bit, ok = 1<<2, d.raw(&f.Parameters)
		case "strict":
			bit, ok = 1<<3, d.boolPtr(&f.Strict)
		default:
			bit, ok = 0, unknown(k, functionDefKeys) && d.skip()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		more, ok = d.next()
	}
	return ok
}

var responseKeys = []string{"id", "object", "created", "model", "choices", "usage"}

func (d *decoder) response(r *ChatResponse) bool {
	if d.null() {
		return true
	}
	more, ok := d.open()
	var seen, bit uint
	for ok && more {
		var k []byte
		if k, ok = d.key(); !ok {
			return false
		}
		switch string(k) {
		case "id":
			bit, ok = 1<<0, d.string(&r.ID)
		case "object":
			bit, ok = 1<<1, d.string(&r.Object)
		case "created":
			var isNull bool
			var n int64
			n, isNull, ok = d.int64()
			if !isNull {
				r.Created = n
			}
			bit = 1 << 2
		case "model":
			bit, ok = 1<<3, d.string(&r.Model)
		case "choices":
			bit, ok = 1<<4, list(d, &r.Choices, (*decoder).choice)
		case "usage":
			bit, ok = 1<<5, d.std(&r.Usage)
		default:
			bit, ok = 0, unknown(k, responseKeys) && d.extra(&r.Extra, k)
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		more, ok = d.next()
	}
	return ok
}

var choiceKeys = []string{"index", "message", "finish_reason", "logprobs"}

func (d *decoder) choice(c *Choice) bool {
	if d.null() {
		return true
	}
	more, ok := d.open()
	var seen, bit uint
	for ok && more {
		var k []byte
		if k, ok = d.key(); !ok {
			return false
		}
		switch string(k) {
		case "index":
			bit, ok = 1<<0, d.int(&c.Index)
		case "message":
			bit, ok = 1<<1, d.message(&c.Message)
		case "finish_reason":
			bit, ok = 1<<2, d.string(&c.FinishReason)
		case "logprobs":
			bit, ok = 1<<3, d.raw(&c.Logprobs)
		default:
			bit, ok = 0, unknown(k, choiceKeys) && d.skip()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		more, ok = d.next()
	}
	return ok
}
