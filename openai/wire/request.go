package wire

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/hippocam/hippocam"
)

// Writing a domain request as a chat-completions body. The bytes are those of json.Marshal over
// FromRequest's value (the reference the tests hold it to), but written in one pass from the
// domain messages, without the wire values in between. Successive requests of a session repeat
// almost all of their messages (JANUS and the main model share the context, and the next step
// resends it with a few more), so a RequestWriter keeps the encoded messages of recent requests
// and copies the bytes of every message that has not changed instead of encoding it again.

// RequestWriter writes the bodies of domain requests. It is safe for concurrent use.
type RequestWriter struct {
	mu     sync.Mutex
	max    int         // bytes the kept encodings may take; 0 keeps none
	size   int         // bytes they take
	recent []*encoding // most recently written last
}

// NewRequestWriter returns a writer that keeps up to maxBytes of recent encodings (0: none).
func NewRequestWriter(maxBytes int) *RequestWriter {
	return &RequestWriter{max: max(0, maxBytes)}
}

// encoding is the "messages" array of one written body, without its brackets: the messages as
// they were (their keys) and their bytes, message i ending at ends[i] (a comma separates two).
// It never changes once made.
type encoding struct {
	keys chunks[messageKey]
	body []byte
	ends []int32
}

func (c *encoding) bytes() int {
	return len(c.body) + len(c.ends)*4 + c.keys.n*int(unsafe.Sizeof(messageKey{}))
}

// messageKey holds everything a message's encoding depends on, in copies that no caller can
// change (strings are immutable; the slices are the key's own).
type messageKey struct {
	role       hippocam.Role
	content    string
	toolCallID string
	extra      string
	toolCalls  []hippocam.ToolCall
	parts      []hippocam.Part
}

func keyOf(m *hippocam.Message) messageKey {
	k := messageKey{role: m.Role, content: m.Content, toolCallID: m.ToolCallID}
	if len(m.Extra) > 0 {
		k.extra = string(m.Extra)
	}
	if len(m.ToolCalls) > 0 {
		k.toolCalls = slices.Clone(m.ToolCalls)
	}
	if len(m.Parts) > 0 {
		k.parts = slices.Clone(m.Parts)
	}
	return k
}

// encodes reports whether m encodes as the message k was made of. Strings that share their
// bytes compare in constant time, so a message copied from the same stored one costs little.
func (k *messageKey) encodes(m *hippocam.Message) bool {
	return k.role == m.Role && k.content == m.Content && k.toolCallID == m.ToolCallID &&
		k.extra == string(m.Extra) && slices.Equal(k.toolCalls, m.ToolCalls) && slices.Equal(k.parts, m.Parts)
}

// Body returns the chat-completions body of r for model: json.Marshal of FromRequest(model, r),
// less the members of r.Extra that the body sets itself (model, messages, stream and
// stream_options always; tools, tool_choice and max_tokens when r sets them). stream asks for a
// streamed answer with a final usage chunk. Errors: r.Extra is not a JSON object, or a raw
// value (a tool's parameters, a message's kept fields) is not valid JSON. The body must not be
// changed: the writer keeps its messages for the next request.
func (w *RequestWriter) Body(model string, r *hippocam.Request, stream bool) ([]byte, error) {
	r = forChat(r)
	head, err := requestHead(model, r, stream)
	if err != nil {
		return nil, err
	}
	base, same := w.find(r.Messages)
	e := encoder{b: make([]byte, 0, bodySize(&head, r.Messages, base, same))}
	next := &encoding{ends: make([]int32, len(r.Messages))}
	if !e.requestWith(&head, false, func() bool { return w.messages(&e, r.Messages, base, same, next) }) {
		// A raw value is not valid JSON: encoding/json says which.
		wr, err := FromRequest(model, r)
		if err == nil {
			_, err = json.Marshal(wr)
		}
		if err == nil {
			err = fmt.Errorf("a raw value is not valid JSON")
		}
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if len(r.Messages) > 0 && len(e.b) <= 1<<31-1 {
		w.keep(next, base, same)
	}
	return e.b, nil
}

// requestHead is the body of r without its messages.
func requestHead(model string, r *hippocam.Request, stream bool) (ChatRequest, error) {
	head := ChatRequest{Model: model}
	if len(r.Extra) > 0 {
		if err := json.Unmarshal(r.Extra, &head.Extra); err != nil {
			return head, fmt.Errorf("request extra fields: %w", err)
		}
	}
	var err error
	if head.Extra, err = withStructured(head.Extra, r); err != nil {
		return head, err
	}
	if len(r.Tools) > 0 {
		head.Tools = make([]ToolDef, len(r.Tools))
		for i := range r.Tools {
			head.Tools[i] = FromTool(&r.Tools[i])
		}
	}
	head.ToolChoice = toolChoice(r.ToolChoice)
	if r.MaxTokens > 0 {
		n := r.MaxTokens
		head.MaxTokens = &n
	}
	for _, k := range []string{"model", "messages", "stream", "stream_options"} {
		delete(head.Extra, k)
	}
	if len(head.Tools) > 0 {
		delete(head.Extra, "tools")
	}
	if len(head.ToolChoice) > 0 {
		delete(head.Extra, "tool_choice")
	}
	if head.MaxTokens != nil {
		delete(head.Extra, "max_tokens")
	}
	if stream {
		head.Stream = true
		head.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	return head, nil
}

// messages writes the "messages" member's value: the first same messages copied from base, the
// others encoded, each recorded in next. It reports false when a raw value is not valid JSON.
func (w *RequestWriter) messages(e *encoder, msgs []hippocam.Message, base *encoding, same int, next *encoding) bool {
	if len(msgs) == 0 { // as FromRequest leaves it
		e.b = append(e.b, "null"...)
		return true
	}
	e.b = append(e.b, '[')
	start := len(e.b)
	if same > 0 {
		e.b = append(e.b, base.body[:base.ends[same-1]]...)
		next.keys.share(&base.keys, same)
		copy(next.ends, base.ends[:same])
	}
	for i := same; i < len(msgs); i++ {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		if !e.domainMessage(&msgs[i]) {
			return false
		}
		if w.max > 0 {
			next.keys.add(keyOf(&msgs[i]))
		}
		next.ends[i] = int32(len(e.b) - start)
	}
	next.body = e.b[start:len(e.b):len(e.b)]
	e.b = append(e.b, ']')
	return true
}

// toolChoice is the tool_choice member of a domain request's choice.
func toolChoice(choice string) json.RawMessage {
	switch choice {
	case "":
		return nil
	case "auto", "none", "required":
		b, _ := json.Marshal(choice)
		return b
	}
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": choice}})
	return b
}

// bodySize estimates a body's length, so that it is allocated once in the common case.
func bodySize(head *ChatRequest, msgs []hippocam.Message, base *encoding, same int) int {
	n := requestSize(head)
	if same > 0 {
		n += int(base.ends[same-1])
	}
	for i := same; i < len(msgs); i++ {
		m := &msgs[i]
		k := 48 + len(m.Role) + len(m.Content) + len(m.ToolCallID) + len(m.Extra)
		for j := range m.ToolCalls {
			c := &m.ToolCalls[j]
			k += 64 + len(c.ID) + len(c.Name) + len(c.Arguments)*5/4
		}
		for j := range m.Parts {
			k += 64 + len(m.Parts[j].Data) + len(m.Parts[j].URL) + len(m.Parts[j].Raw)
		}
		n += k + k/16
	}
	return n
}

// domainMessage writes m as the encoder writes FromMessage(m) inside a request. It reports
// false when a raw value m keeps is not valid JSON.
func (e *encoder) domainMessage(m *hippocam.Message) bool {
	if len(m.Extra) > 0 || len(m.Parts) > 0 {
		c := FromMessage(m)
		return e.message(&c, false)
	}
	e.b = append(e.b, `{"role":`...)
	e.str(string(m.Role))
	if m.Content != "" || len(m.ToolCalls) == 0 {
		e.b = append(e.b, `,"content":`...)
		e.str(m.Content)
	}
	if len(m.ToolCalls) > 0 {
		e.b = append(e.b, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			c := &m.ToolCalls[i]
			e.toolCall(&ToolCall{ID: c.ID, Type: "function", Function: FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
		e.b = append(e.b, ']')
	}
	if m.ToolCallID != "" {
		e.b = append(e.b, `,"tool_call_id":`...)
		e.str(m.ToolCallID)
	}
	e.b = append(e.b, '}')
	return true
}

// find returns the kept encoding that shares the longest run of leading messages with msgs, and
// the length of that run (0 when none shares any).
func (w *RequestWriter) find(msgs []hippocam.Message) (*encoding, int) {
	w.mu.Lock()
	candidates := slices.Clone(w.recent)
	w.mu.Unlock()
	var best *encoding
	bestProbe := 0
	for _, c := range slices.Backward(candidates) {
		if p := probe(c, msgs); p > bestProbe {
			best, bestProbe = c, p
		}
	}
	if best == nil {
		return nil, 0
	}
	n := 0
	for n < min(best.keys.n, len(msgs)) && best.keys.at(n).encodes(&msgs[n]) {
		n++
	}
	return best, n
}

// probe guesses, in a few comparisons, how many leading messages c shares with msgs: it
// bisects as if they agreed up to some point and differed after it.
func probe(c *encoding, msgs []hippocam.Message) int {
	lo, hi := 0, min(c.keys.n, len(msgs))
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if c.keys.at(mid).encodes(&msgs[mid]) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// keep records next, a request's encoding written from base (nil: from nothing) with its first
// same messages copied. A request that carries on from base takes its place: the previous
// request of the same session is not needed once the next one is written.
func (w *RequestWriter) keep(next, base *encoding, same int) {
	if w.max == 0 || next.bytes() > w.max {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if base != nil && 2*same >= base.keys.n {
		if i := slices.Index(w.recent, base); i >= 0 {
			w.size -= base.bytes()
			w.recent = slices.Delete(w.recent, i, i+1)
		}
	}
	w.recent = append(w.recent, next)
	w.size += next.bytes()
	for w.size > w.max {
		w.size -= w.recent[0].bytes()
		w.recent = slices.Delete(w.recent, 0, 1)
	}
}
