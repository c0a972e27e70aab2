package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// ReadChatRequest reads the body of POST /v1/chat/completions into a conversation: the leading
// system and developer messages become its framing, every message keeps its exact bytes as its
// Origin, content parts that are not text become Parts (and stay verbatim in Extra["content"],
// so that a chat upstream gets them unchanged), the answer's limit (max_tokens, else
// max_completion_tokens) becomes MaxTokens, and the request fields Hippocam does not interpret
// are kept in Extra under their own names. EINVALID, naming what is wrong, for a body
// that is not valid UTF-8 JSON of a chat request, no messages, an unknown role or content part
// type, content of another shape, a tool without a name, or n other than 1.
//
// The body is read in one pass, each message converted as the decoder reaches it. The
// ChatRequest returned is the request without its messages (the conversation holds them); its
// raw values (tool_choice, unknown fields) are slices of body, whereas nothing in the
// conversation shares memory with it.
func ReadChatRequest(body []byte) (*hippocam.Conversation, *ChatRequest, error) {
	conv, req, _, err := readChat(body, nil)
	return conv, req, err
}

// readChat is ReadChatRequest, taking from bases (earlier requests) the leading messages they
// share with body byte for byte. The chatReader says how many it took, and from which.
func readChat(body []byte, bases []*readRequest) (*hippocam.Conversation, *ChatRequest, *chatReader, error) {
	r := &chatReader{conv: &hippocam.Conversation{Format: hippocam.FormatChat, Store: true}, bases: bases, body: body}
	if len(bases) == 0 {
		r.bases = nil
	}
	req := new(ChatRequest)
	d := decoder{scanner: scanner{data: body}, share: true, sink: r}
	if d.ws(); !d.request(req) || !d.end() {
		if err := hippocam.CheckText(body); err != nil {
			return nil, nil, nil, err
		}
		var err error
		if req, r, err = readSlow(body); err != nil {
			return nil, nil, nil, err
		}
	} else if hippocam.CheckText(body[:r.skipFrom]) != nil || hippocam.CheckText(body[r.skipTo:]) != nil {
		// The messages reused were checked when first read, as parts of a body that passed:
		// the text around them is checked now (and, when it fails, the whole body, for the
		// error it reports).
		return nil, nil, nil, hippocam.CheckText(body)
	}
	r.done()
	if r.n == 0 {
		return nil, nil, nil, hippocam.Errorf(hippocam.EINVALID, "messages must be a non-empty array")
	}
	if n, ok := req.Extra["n"]; ok && string(n) != "1" && string(n) != "null" {
		return nil, nil, nil, hippocam.Errorf(hippocam.EINVALID, "n must be 1: Hippocam keeps one answer per request")
	}
	if r.err != nil {
		return nil, nil, nil, r.err
	}
	if err := readFields(r.conv, req); err != nil {
		return nil, nil, nil, err
	}
	return r.conv, req, r, nil
}

// readSlow reads a body the fast decoder does not take: it decodes the whole body, then reads
// its messages, reusing none.
func readSlow(body []byte) (*ChatRequest, *chatReader, error) {
	req, raws, err := decodeChatRequest(body)
	if err != nil {
		return nil, nil, err
	}
	if len(raws) != len(req.Messages) {
		return nil, nil, hippocam.Errorf(hippocam.EINVALID, "messages must be an array of message objects")
	}
	r := &chatReader{conv: &hippocam.Conversation{Format: hippocam.FormatChat, Store: true}}
	r.expect(func() int { return len(req.Messages) })
	for i := range req.Messages {
		r.add(raws[i], &req.Messages[i])
	}
	req.Messages = nil
	return req, r, nil
}

// readFields sets the conversation's fields other than its messages from the request.
func readFields(conv *hippocam.Conversation, req *ChatRequest) error {
	conv.Model, conv.Stream = req.Model, req.Stream
	for i, d := range req.Tools {
		if d.Type != "" && d.Type != "function" {
			t, err := otherTool(i, d)
			if err != nil {
				return err
			}
			conv.Tools = append(conv.Tools, t)
			continue
		}
		if strings.TrimSpace(d.Function.Name) == "" {
			return hippocam.Errorf(hippocam.EINVALID, "tools[%d] has no function name", i)
		}
		t := ToTool(d)
		t.Parameters = bytes.Clone(t.Parameters) // not a slice of the body, which the tool may outlive
		conv.Tools = append(conv.Tools, t)
	}
	var err error
	if conv.ToolChoice, err = chatToolChoice(req.ToolChoice); err != nil {
		return err
	}
	restrictTools(conv, req.ToolChoice)
	if conv.Extra, err = chatExtra(req); err != nil {
		return err
	}
	if conv.MaxTokens, err = chatLimit(req); err != nil {
		return err
	}
	return nil
}

// chatLimit reads the answer's token limit: max_tokens, else max_completion_tokens (0: none).
// EINVALID when the one given is not a non-negative integer.
func chatLimit(r *ChatRequest) (int, error) {
	if r.MaxTokens != nil {
		if *r.MaxTokens < 0 {
			return 0, hippocam.Errorf(hippocam.EINVALID, "max_tokens must not be negative")
		}
		return *r.MaxTokens, nil
	}
	v, ok := r.Extra["max_completion_tokens"]
	if !ok || string(v) == "null" {
		return 0, nil
	}
	var n int
	if json.Unmarshal(v, &n) != nil || n < 0 {
		return 0, hippocam.Errorf(hippocam.EINVALID, "max_completion_tokens must be a non-negative integer")
	}
	return n, nil
}

// chatReader turns the messages of a chat request into the conversation's, one by one, as the
// decoder reads them. It keeps the first message it cannot take as err and takes no more, so
// that what is wrong with the body as a whole (invalid JSON, n) is still reported first.
type chatReader struct {
	conv    *hippocam.Conversation
	n       int // messages met
	err     error
	message bool // past the framing
	// bases are the earlier requests that have every message reused so far, same messages.
	bases []*readRequest
	same  int
	// all is the framing, then the messages, in one array (the conversation's are views of it);
	// framing counts the first. The same messages reused enter it at once, before the first
	// message read (from): in place in the array of a base that this request continues, when
	// no other request claimed the room after it (claimed), else copied. hint is the expected
	// count.
	all     []hippocam.Message
	framing int
	from    *readRequest
	claimed bool
	hint    int
	// body is the body read; skipFrom and skipTo bound the bytes of the messages reused in it (none:
	// both 0), which readChat does not check again.
	body             []byte
	skipFrom, skipTo int
}

// reuse takes the next message from the bases that have it at the same place, when rest starts
// with its exact bytes, and returns their length (0: none has it). The bytes of a message
// are a complete JSON value, which ends where they end when a separator follows, so
// comparing them is as good as reading the value again.
func (r *chatReader) reuse(rest []byte) int {
	i := r.n
	live, n := r.bases[:0], 0
	for _, b := range r.bases {
		if i >= len(b.msgs) {
			continue
		}
		raw := b.msgs[i].Origin.Raw
		if len(rest) > len(raw) && string(rest[:len(raw)]) == raw && separates(rest[len(raw)]) {
			live, n = append(live, b), len(raw)
		}
	}
	if len(live) == 0 {
		return 0 // (nothing was written over r.bases)
	}
	r.bases = live
	r.n++
	r.same++
	at := len(r.body) - len(rest)
	if r.same == 1 {
		r.skipFrom = at
	}
	r.skipTo = at + n
	return n
}

// separates reports whether c may follow an element of an array.
func separates(c byte) bool {
	return c == ',' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// expect makes room for the messages: as many as the largest base has, and a few more, or as
// many as count finds.
func (r *chatReader) expect(count func() int) {
	n := 0
	for _, b := range r.bases {
		n = max(n, len(b.msgs)+16)
	}
	if n == 0 {
		n = count()
	}
	r.hint = n
}

// takeSame puts the same messages reused into all: the base's own array, extended from there on,
// when this request continues all of the base and is the first to claim the room after it.
func (r *chatReader) takeSame() {
	if r.all != nil || r.same == 0 {
		return
	}
	b := r.bases[0]
	r.from = b
	if r.same == len(b.msgs) && b.room.CompareAndSwap(false, true) {
		r.all, r.claimed = b.msgs, true
	} else {
		r.all = append(make([]hippocam.Message, 0, max(r.hint, r.same)+readRoom(r.hint)), b.msgs[:r.same]...)
	}
	r.framing = min(r.same, b.framing)
	r.message = r.same > b.framing
}

// readRoom is the spare room an array of n messages gets, so that the requests that resend it
// with more append to it in place for a while.
func readRoom(n int) int { return 16 + n/8 }

// take appends m to the framing or the messages.
func (r *chatReader) take(m hippocam.Message) {
	r.takeSame()
	if r.all == nil {
		r.all = make([]hippocam.Message, 0, r.hint+readRoom(r.hint))
	}
	r.all = append(r.all, m)
	if !r.message && m.Role == hippocam.RoleSystem {
		r.framing++
		return
	}
	r.message = true
}

// done sets the conversation's framing and messages, views of all that no append can reach.
func (r *chatReader) done() {
	r.takeSame()
	if r.framing > 0 {
		r.conv.Framing = r.all[:r.framing:r.framing]
	}
	r.conv.Messages = r.all[r.framing:len(r.all):len(r.all)]
}

// add reads the message c, whose exact bytes are raw.
func (r *chatReader) add(raw []byte, c *ChatMessage) {
	i := r.n
	r.n++
	if r.err != nil {
		return
	}
	m, err := ToMessage(*c)
	if err != nil {
		r.err = hippocam.Errorf(hippocam.EINVALID, "messages[%d]: %s", i, hippocam.ErrorMessage(err))
		return
	}
	if m.Parts, err = chatParts(c.Content); err != nil {
		r.err = hippocam.Errorf(hippocam.EINVALID, "messages[%d].%s", i, hippocam.ErrorMessage(err))
		return
	}
	for j, tc := range c.ToolCalls {
		if tc.Custom != nil && strings.TrimSpace(tc.Custom.Name) == "" {
			r.err = hippocam.Errorf(hippocam.EINVALID, "messages[%d].tool_calls[%d] names no custom tool", i, j)
			return
		}
		if tc.Custom == nil && strings.TrimSpace(tc.Function.Name) == "" {
			r.err = hippocam.Errorf(hippocam.EINVALID, "messages[%d].tool_calls[%d] names no function", i, j)
			return
		}
	}
	if m.Role == hippocam.RoleTool && c.ToolCallID == "" {
		r.err = hippocam.Errorf(hippocam.EINVALID, "messages[%d]: a tool message needs a tool_call_id", i)
		return
	}
	m.Origin = &hippocam.Origin{Format: hippocam.FormatChat, Raw: string(raw)}
	r.take(m)
}

// decodeChatRequest decodes a chat request the fast decoder does not take, and finds the exact
// bytes of each of its messages.
func decodeChatRequest(body []byte) (*ChatRequest, []json.RawMessage, error) {
	req := new(ChatRequest)
	if err := req.UnmarshalJSON(body); err != nil {
		return nil, nil, hippocam.Errorf(hippocam.EINVALID, "the request body is not valid JSON for chat completions: %v", err)
	}
	msgs, ok := rawMessages(body)
	if !ok {
		var raw struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(body, &raw); err != nil {
			return nil, nil, hippocam.Errorf(hippocam.EINVALID, "messages must be an array of message objects")
		}
		msgs = raw.Messages
	}
	return req, msgs, nil
}

// rawMessages returns the exact bytes of each element of a request's "messages" array, found in
// one pass of the fast scanner (the slices share body). It reports false for anything the
// scanner does not take (then the standard decoder does the same job, slower).
func rawMessages(body []byte) ([]json.RawMessage, bool) {
	d := newDecoder(body)
	var out []json.RawMessage
	more, ok := d.open()
	for ok && more {
		k, good := d.key()
		if !good {
			return nil, false
		}
		if string(k) != "messages" {
			if !d.skip() {
				return nil, false
			}
		} else {
			if d.peek() != '[' {
				return nil, false
			}
			d.pos++
			d.ws()
			out = out[:0]
			for d.peek() != ']' {
				start := d.pos
				if !d.skip() {
					return nil, false
				}
				out = append(out, body[start:d.pos])
				d.ws()
				if d.peek() == ',' {
					d.pos++
					d.ws()
				} else if d.peek() != ']' {
					return nil, false
				}
			}
			d.pos++
		}
		more, ok = d.next()
	}
	return out, ok && d.end()
}

// chatParts reads the parts of a chat content array that are not text. EINVALID for a part type
// the chat format does not have, or content that is neither a string, an array nor null.
func chatParts(content json.RawMessage) ([]hippocam.Part, error) {
	if len(content) == 0 || content[0] != '[' {
		if len(content) > 0 && content[0] != '"' && string(content) != "null" {
			return nil, hippocam.Errorf(hippocam.EINVALID, "content must be a string, an array of parts or null")
		}
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(content, &raws); err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "content: %v", err)
	}
	var parts []hippocam.Part
	for j, r := range raws {
		var p struct {
			Type     string `json:"type"`
			Text     *string
			ImageURL *struct {
				URL    string `json:"url"`
				Detail string `json:"detail"`
			} `json:"image_url"`
			InputAudio *struct {
				Data   string `json:"data"`
				Format string `json:"format"`
			} `json:"input_audio"`
			File *struct {
				FileData string `json:"file_data"`
				FileID   string `json:"file_id"`
				Filename string `json:"filename"`
			} `json:"file"`
		}
		if err := json.Unmarshal(r, &p); err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "content[%d] is not a content part: %v", j, err)
		}
		part := hippocam.Part{Format: hippocam.FormatChat, Raw: string(r)}
		switch p.Type {
		case "text", "refusal":
			continue
		case "image_url":
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return nil, hippocam.Errorf(hippocam.EINVALID, "content[%d]: an image_url part needs image_url.url", j)
			}
			part.Type, part.Detail = hippocam.PartImage, p.ImageURL.Detail
			part.MediaType, part.Data, part.URL = splitDataURL(p.ImageURL.URL)
		case "input_audio":
			if p.InputAudio == nil || p.InputAudio.Data == "" {
				return nil, hippocam.Errorf(hippocam.EINVALID, "content[%d]: an input_audio part needs input_audio.data", j)
			}
			part.Type, part.Data, part.MediaType = hippocam.PartAudio, p.InputAudio.Data, "audio/"+p.InputAudio.Format
		case "file":
			if p.File == nil || (p.File.FileData == "" && p.File.FileID == "") {
				return nil, hippocam.Errorf(hippocam.EINVALID, "content[%d]: a file part needs file.file_data or file.file_id", j)
			}
			part.Type, part.FileID, part.Name = hippocam.PartFile, p.File.FileID, p.File.Filename
			part.MediaType, part.Data, _ = splitDataURL(p.File.FileData)
		default:
			return nil, hippocam.Errorf(hippocam.EINVALID, "content[%d]: unknown content part type %q", j, p.Type)
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// otherTool reads tool i of a type other than function: a custom tool ({"type":"custom",
// "custom":{"name","description","format"}}, Parameters its format), or a tool of another type,
// kept as a provider tool named by its type. Raw is either's members, type first.
func otherTool(i int, d ToolDef) (hippocam.Tool, error) {
	// The members as sent: its type and the others (a tool of another type has no function).
	raw, err := encodeSlow(struct {
		Type string `json:"type"`
	}{d.Type}, d.Extra)
	if err != nil {
		return hippocam.Tool{}, hippocam.Errorf(hippocam.EINVALID, "tools[%d]: %v", i, err)
	}
	if d.Type != "custom" {
		return hippocam.Tool{Name: d.Type, Kind: hippocam.ToolProvider, Type: d.Type, Format: hippocam.FormatChat, Raw: raw}, nil
	}
	var c struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Format      json.RawMessage `json:"format"`
	}
	if err := json.Unmarshal(d.Extra["custom"], &c); err != nil || strings.TrimSpace(c.Name) == "" {
		return hippocam.Tool{}, hippocam.Errorf(hippocam.EINVALID, "tools[%d]: a custom tool needs custom.name", i)
	}
	t := hippocam.Tool{Name: c.Name, Description: c.Description, Kind: hippocam.ToolCustom, Type: "custom", Format: hippocam.FormatChat, Raw: raw}
	if len(c.Format) > 0 && string(c.Format) != "null" {
		t.Parameters = c.Format
	}
	return t, nil
}

// chatToolChoice reads tool_choice: "auto", "none", "required", a named function or custom
// tool, or allowed_tools (read as its mode; restrictTools applies its list).
func chatToolChoice(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return s, nil
		}
		return "", hippocam.Errorf(hippocam.EINVALID, "tool_choice must be \"auto\", \"none\", \"required\" or a named function, not %q", s)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
		Custom struct {
			Name string `json:"name"`
		} `json:"custom"`
		AllowedTools struct {
			Mode string `json:"mode"`
		} `json:"allowed_tools"`
	}
	err := json.Unmarshal(raw, &named)
	switch {
	case err == nil && named.Type == "custom" && named.Custom.Name != "":
		return named.Custom.Name, nil
	case err == nil && named.Type == "allowed_tools":
		if named.AllowedTools.Mode == "required" {
			return "required", nil
		}
		return "auto", nil
	}
	if err != nil || named.Function.Name == "" {
		return "", hippocam.Errorf(hippocam.EINVALID, "tool_choice must be a string or {\"type\":\"function\",\"function\":{\"name\":…}}")
	}
	return named.Function.Name, nil
}

// chatExtra collects the request fields Hippocam does not interpret, to send them on: all but
// the token limits, which the conversation holds as MaxTokens.
func chatExtra(r *ChatRequest) (json.RawMessage, error) {
	extra := Extra{}
	for k, v := range r.Extra {
		if k != "max_completion_tokens" {
			extra[k] = v
		}
	}
	if len(extra) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(extra)
	if err != nil {
		return nil, fmt.Errorf("request fields: %w", err)
	}
	return b, nil
}
