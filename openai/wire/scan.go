package wire

import (
	"bytes"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a small JSON reader over one buffer, used by the fast decoder and by the encoder to
// check and compact raw values. It accepts exactly the JSON that encoding/json accepts, except
// input nested deeper than maxDepth, which it refuses: its callers then take the slow path, the
// reference behaviour, which applies encoding/json's own limit.
type scanner struct {
	data  []byte
	pos   int
	depth int
	// dirty is set when the bytes scanned so far are not what encoding/json's compaction with
	// HTML escaping would write: whitespace outside strings, or <, >, &, U+2028, U+2029 inside.
	dirty bool
}

// maxDepth bounds the nesting the scanner follows; encoding/json's own limit is 10000.
const maxDepth = 1000

// Byte classes inside a string.
const (
	cPlain   = iota // written as is
	cQuote          // "
	cEscape         // \
	cControl        // below 0x20: invalid
	cHTML           // <, >, &: escaped by compaction
	cHigh           // 0x80 and above: part of a multi-byte character, or invalid UTF-8
)

var strClass = func() (t [256]uint8) {
	for i := range t {
		switch {
		case i < 0x20:
			t[i] = cControl
		case i == '"':
			t[i] = cQuote
		case i == '\\':
			t[i] = cEscape
		case i == '<', i == '>', i == '&':
			t[i] = cHTML
		case i >= 0x80:
			t[i] = cHigh
		}
	}
	return t
}()

func (s *scanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// ws skips whitespace.
func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
			s.dirty = true
		default:
			return
		}
	}
}

// lit reads the literal word.
func (s *scanner) lit(word string) bool {
	if bytes.HasPrefix(s.data[s.pos:], []byte(word)) {
		s.pos += len(word)
		return true
	}
	return false
}

// str reads a string from its opening quote. plain reports that it has neither escapes nor
// bytes above 0x7f, so that its bytes are its value.
func (s *scanner) str() (plain, ok bool) {
	data := s.data
	i := s.pos + 1
	plain = true
	for i < len(data) {
		c := data[i]
		switch strClass[c] {
		case cPlain:
			i++
		case cQuote:
			s.pos = i + 1
			return plain, true
		case cEscape:
			plain = false
			if i+1 >= len(data) {
				return false, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+5 >= len(data) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
					return false, false
				}
				i += 6
			default:
				return false, false
			}
		case cControl:
			return false, false
		case cHTML:
			s.dirty = true
			i++
		default: // cHigh
			plain = false
			if c == 0xE2 && i+2 < len(data) && data[i+1] == 0x80 && data[i+2]&^1 == 0xA8 {
				s.dirty = true
			}
			i++
		}
	}
	return false, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number reads a number.
func (s *scanner) number() bool {
	data, i := s.data, s.pos
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return false
	case data[i] == '0':
		i++
	case '1' <= data[i] && data[i] <= '9':
		i++
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return false
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return false
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	s.pos = i
	return true
}

// value reads any value; the caller has skipped the whitespace before it.
func (s *scanner) value() bool {
	switch s.peek() {
	case '"':
		_, ok := s.str()
		return ok
	case '{':
		if s.depth++; s.depth > maxDepth {
			return false
		}
		s.pos++
		s.ws()
		if s.peek() == '}' {
			s.pos++
			s.depth--
			return true
		}
		for {
			if s.peek() != '"' {
				return false
			}
			if _, ok := s.str(); !ok {
				return false
			}
			s.ws()
			if s.peek() != ':' {
				return false
			}
			s.pos++
			s.ws()
			if !s.value() {
				return false
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.pos++
				s.ws()
			case '}':
				s.pos++
				s.depth--
				return true
			default:
				return false
			}
		}
	case '[':
		if s.depth++; s.depth > maxDepth {
			return false
		}
		s.pos++
		s.ws()
		if s.peek() == ']' {
			s.pos++
			s.depth--
			return true
		}
		for {
			if !s.value() {
				return false
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.pos++
				s.ws()
			case ']':
				s.pos++
				s.depth--
				return true
			default:
				return false
			}
		}
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	default:
		return s.number()
	}
}

// appendRaw appends raw as encoding/json writes a json.RawMessage (or the output of a
// MarshalJSON method) into its output: checked, compacted, with <, >, &, U+2028 and U+2029
// escaped. It reports false if raw is not a single valid JSON value.
func appendRaw(dst, raw []byte) ([]byte, bool) {
	s := scanner{data: raw}
	s.ws()
	if !s.value() {
		return dst, false
	}
	s.ws()
	if s.pos != len(raw) {
		return dst, false
	}
	if !s.dirty {
		return append(dst, raw...), true
	}
	return appendCompact(dst, raw), true
}

// appendCompact appends the valid JSON value src without whitespace outside strings and with
// HTML-sensitive characters escaped, byte for byte as encoding/json's compaction does.
func appendCompact(dst, src []byte) []byte {
	const hex = "0123456789abcdef"
	start := 0
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte is never one that changes
			case '"':
				inString = false
			case '<', '>', '&':
				dst = append(dst, src[start:i]...)
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
				start = i + 1
			case 0xE2:
				if i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 {
					dst = append(dst, src[start:i]...)
					dst = append(dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
					i += 2
					start = i + 1
				}
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			dst = append(dst, src[start:i]...)
			start = i + 1
		case '"':
			inString = true
		}
	}
	return append(dst, src[start:]...)
}

// unquote returns the value of the valid JSON string literal s, as encoding/json decodes it:
// invalid UTF-8 and lone surrogates become U+FFFD.
func unquote(s []byte) string {
	s = s[1 : len(s)-1]
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s)
	}
	b := make([]byte, 0, len(s)+2*utf8.UTFMax)
	for r := 0; r < len(s); {
		c := s[r]
		if c == '\\' {
			switch s[r+1] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(s[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
						r += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // " \ /
				b = append(b, s[r+1])
			}
			r += 2
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, c)
			r++
			continue
		}
		rr, size := utf8.DecodeRune(s[r:])
		r += size
		b = utf8.AppendRune(b, rr)
	}
	return string(b)
}

// getu4 decodes \uXXXX from the beginning of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// htmlSafe holds true for the ASCII bytes encoding/json writes as they are in a string when it
// escapes HTML.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for i := range t {
		t[i] = i >= 0x20 && i != '"' && i != '\\' && i != '<' && i != '>' && i != '&'
	}
	return t
}()

// appendString appends s as a JSON string, exactly as json.Marshal writes it.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if htmlSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
