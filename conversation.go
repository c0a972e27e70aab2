package hippocam

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Conversation is one request of an agent, read from whichever wire format it came in (OpenAI
// Chat Completions, OpenAI Responses, Anthropic Messages) into domain values. The session
// service continues a session from it; the simulated model answers it.
type Conversation struct {
	// Format is the wire format the request came in.
	Format Format
	// Framing holds the leading system and developer messages (role RoleSystem; the Origin of
	// each says what it was). Framing is not transcript: it may change from request to request.
	Framing []Message
	// Messages is the conversation after the framing, in order, each with its Origin. A system
	// or developer message after the first message of another role stays here, in its place
	// (role RoleSystem): it takes effect from that point of the conversation on.
	Messages []Message
	// Tools are the agent's own tools; ToolChoice is "", "auto", "none", "required" or the name
	// of a tool the model must call.
	Tools      []Tool
	ToolChoice string
	Model      string
	// MaxTokens is the most the answer may take (0: not given).
	MaxTokens int
	Stream    bool
	// Extra holds the request fields Hippocam does not interpret, to pass on to the model, as a
	// JSON object, each under its own name in Format, byte for byte. The upstream adapter
	// translates them for its own format, field by field (docs/formats.md, "Across formats").
	Extra json.RawMessage
	// Betas are the optional API features the client asked for by name (Anthropic's
	// anthropic-beta header, one value a name), in order. They are passed on only to an
	// upstream of the client's format, and only with the main model's calls.
	Betas []string
	// Store is false when the client asked that nothing be kept for a later request to refer to
	// (OpenAI Responses "store": false); Previous names the response a Responses request
	// continues (previous_response_id).
	Store    bool
	Previous string
	// Hashes, when set, is TranscriptChain("", Messages): a reader that remembers earlier
	// requests fills it in from the hashes it kept for the messages they share.
	Hashes []string
}

// CheckText returns an EINVALID error when body is not valid UTF-8 or holds a JSON escape of a
// lone UTF-16 surrogate (which a JSON decoder would silently turn into U+FFFD): text that
// Hippocam could not give back byte for byte is refused instead.
func CheckText(body []byte) error {
	if !utf8.Valid(body) {
		return Errorf(EINVALID, "the request body is not valid UTF-8")
	}
	for i := 0; i+5 < len(body); i++ {
		if body[i] != '\\' {
			k := bytes.IndexByte(body[i:], '\\')
			if k < 0 {
				break
			}
			i += k
			if i+5 >= len(body) {
				break
			}
		}
		if body[i+1] != 'u' {
			i++ // skip the escaped character, so that "\\u" is not read as an escape
			continue
		}
		r := hex4(body[i+2 : i+6])
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if i+11 < len(body) && body[i+6] == '\\' && body[i+7] == 'u' {
				if lo := hex4(body[i+8 : i+12]); lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
			}
			return Errorf(EINVALID, "the request body holds an unpaired UTF-16 surrogate escape at byte %d", i)
		case r >= 0xDC00 && r <= 0xDFFF:
			return Errorf(EINVALID, "the request body holds an unpaired UTF-16 surrogate escape at byte %d", i)
		}
		i += 5
	}
	return nil
}

// hex4 reads four hex digits, or returns -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	n := 0
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			n = n*16 + int(c-'0')
		case c >= 'a' && c <= 'f':
			n = n*16 + int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			n = n*16 + int(c-'A'+10)
		default:
			return -1
		}
	}
	return n
}
