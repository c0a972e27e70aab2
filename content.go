package hippocam

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Format names a wire format that messages arrive in or are sent in.
type Format string

// The wire formats Hippocam speaks.
const (
	FormatChat      Format = "openai.chat"        // OpenAI Chat Completions
	FormatResponses Format = "openai.responses"   // OpenAI Responses
	FormatAnthropic Format = "anthropic.messages" // Anthropic Messages
)

// Origin is the exact wire form a raw message arrived in: the bytes of the element it was read
// from (a chat message, a Responses input item, an Anthropic message or content block). It is
// kept so that every message that entered Hippocam can be given back byte for byte.
type Origin struct {
	Format Format `json:"format"`
	Raw    string `json:"raw"`
}

// Part types. A part of any other type is one Hippocam passes on without reading it.
const (
	PartImage = "image"
	PartAudio = "audio"
	PartFile  = "file"
	// PartTools is a declaration of tools that a client made within its history rather than
	// in the request's tool list (OpenAI Responses additional_tools items): the reader adds
	// the tools to the Conversation's Tools and keeps the item, byte for byte in Raw, as a
	// message of its own whose only part this is. Data holds the declared tools as canonical
	// JSON, so that a changed list is a changed message. No model request carries such a
	// message (Message.DeclaresTools): its tools reach the model as tools.
	PartTools = "tools"
)

// DeclaresTools reports whether m only declares tools: no text and no calls, its parts all of
// type PartTools. Upstream adapters leave such a message out of the requests they write, and it
// counts no tokens in them (MessageTokens).
func (m *Message) DeclaresTools() bool {
	if m.Content != "" || len(m.ToolCalls) > 0 || len(m.Parts) == 0 {
		return false
	}
	for _, p := range m.Parts {
		if p.Type != PartTools {
			return false
		}
	}
	return true
}

// Part is a piece of a message's content that is not text: an image, audio, a file. Text parts
// are joined into Message.Content; the other parts are kept here, in a form every upstream
// adapter can render, beside their exact bytes in the format they came in.
type Part struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	// Data is the part's bytes in base64, or URL where they are; FileID names a file the
	// provider already holds.
	Data   string `json:"data,omitempty"`
	URL    string `json:"url,omitempty"`
	FileID string `json:"file_id,omitempty"`
	Name   string `json:"name,omitempty"`
	// Detail is an image's requested detail ("low", "high", "auto"), when given.
	Detail string `json:"detail,omitempty"`
	// Format and Raw are the part as it was sent.
	Format Format `json:"format,omitempty"`
	Raw    string `json:"raw,omitempty"`
}

// CanonicalJSON returns a JSON text in a canonical form (no insignificant space, object keys
// sorted, numbers as written), so that two serializations of one value compare equal; text that
// is not JSON is returned as it is.
func CanonicalJSON(text string) string {
	if isCanonicalJSON(text) {
		return text
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return text
	}
	b, err := json.Marshal(v)
	if err != nil {
		return text
	}
	return string(b)
}

// isCanonicalJSON reports whether text is one JSON value already in the form CanonicalJSON
// gives (json.Marshal of what encoding/json decodes it to), so that nothing need be decoded: no
// space outside strings, the keys of every object in strictly increasing order, and strings
// written exactly as json.Marshal writes them. It may report false for some canonical texts
// (keys with escapes, objects nested very deep); CanonicalJSON then takes the long way.
func isCanonicalJSON(text string) bool {
	c := canonicalScan{s: text}
	return c.value(0) && c.i == len(text)
}

// canonicalScan reads a JSON text for isCanonicalJSON.
type canonicalScan struct {
	s string
	i int
}

// canonicalDepth bounds the nesting isCanonicalJSON follows.
const canonicalDepth = 100

func (c *canonicalScan) value(depth int) bool {
	if c.i >= len(c.s) || depth > canonicalDepth {
		return false
	}
	switch b := c.s[c.i]; {
	case b == '{':
		return c.object(depth)
	case b == '[':
		c.i++
		if c.i < len(c.s) && c.s[c.i] == ']' {
			c.i++
			return true
		}
		for {
			if !c.value(depth + 1) {
				return false
			}
			if c.i < len(c.s) && c.s[c.i] == ',' {
				c.i++
				continue
			}
			if c.i < len(c.s) && c.s[c.i] == ']' {
				c.i++
				return true
			}
			return false
		}
	case b == '"':
		_, ok := c.str()
		return ok
	case b == 't':
		return c.lit("true")
	case b == 'f':
		return c.lit("false")
	case b == 'n':
		return c.lit("null")
	default:
		return c.number()
	}
}

func (c *canonicalScan) object(depth int) bool {
	c.i++
	if c.i < len(c.s) && c.s[c.i] == '}' {
		c.i++
		return true
	}
	prev, first := "", true
	for {
		if c.i >= len(c.s) || c.s[c.i] != '"' {
			return false
		}
		key, ok := c.str()
		if !ok || strings.IndexByte(key, '\\') >= 0 || (!first && key <= prev) {
			return false
		}
		prev, first = key, false
		if c.i >= len(c.s) || c.s[c.i] != ':' {
			return false
		}
		c.i++
		if !c.value(depth + 1) {
			return false
		}
		if c.i < len(c.s) && c.s[c.i] == ',' {
			c.i++
			continue
		}
		if c.i < len(c.s) && c.s[c.i] == '}' {
			c.i++
			return true
		}
		return false
	}
}

func (c *canonicalScan) lit(word string) bool {
	if !strings.HasPrefix(c.s[c.i:], word) {
		return false
	}
	c.i += len(word)
	return true
}

// str reads a string literal and returns what is between its quotes. It reports false unless
// every byte is written as json.Marshal writes it: printable ASCII other than <, > and & as it
// is, valid UTF-8 other than U+2028 and U+2029 as it is, and everything else by the one escape
// json.Marshal uses for it.
func (c *canonicalScan) str() (string, bool) {
	start := c.i + 1
	for i := start; i < len(c.s); {
		b := c.s[i]
		switch {
		case b == '"':
			c.i = i + 1
			return c.s[start:i], true
		case b == '\\':
			n := canonicalEscape(c.s[i:])
			if n == 0 {
				return "", false
			}
			i += n
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			return "", false
		case b < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(c.s[i:])
			if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
				return "", false
			}
			i += size
		}
	}
	return "", false
}

// canonicalEscape returns the length of the escape s starts with when it is the one json.Marshal
// writes for the character it stands for, else 0.
func canonicalEscape(s string) int {
	if len(s) < 2 {
		return 0
	}
	switch s[1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(s) < 6 {
			return 0
		}
		switch u := s[2:6]; u {
		case "003c", "003e", "0026", "2028", "2029":
			return 6
		default:
			// Control characters without a short escape, as \u00XX in lower case.
			if u[0] == '0' && u[1] == '0' && (u[2] == '0' || u[2] == '1') && isLowerHex(u[3]) {
				switch u[2:] {
				case "08", "09", "0a", "0c", "0d":
					return 0
				}
				return 6
			}
		}
	}
	return 0
}

func isLowerHex(b byte) bool { return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' }

// number reads a number literal as the JSON grammar has it.
func (c *canonicalScan) number() bool {
	s, i := c.s, c.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	c.i = i
	return true
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }
