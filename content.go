package hippocam

import (
	"bytes"
	"encoding/json"
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
)

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
