// Package wire holds the OpenAI JSON shapes that Hippocam reads and writes, the openai adapter's
// own types: the model client, the simulated model and the proxy all speak through them. Every object
// keeps the fields it does not know in Extra and writes them back unchanged (internal/jsonx), so
// that a proxy passes through what it does not use.
package wire

import (
	"encoding/json"

	"github.com/hippocam/hippocam/internal/jsonx"
)

// Extra holds the JSON fields of an object that its Go type does not declare.
type Extra = jsonx.Extra

// decodeSlow fills v (a pointer to an alias struct with no methods) from data and returns the
// fields v's type does not declare. It is the reference behaviour, which the fast decoder
// (decode.go) reproduces for the input it accepts and falls back to for the rest.
func decodeSlow(data []byte, v any) (Extra, error) { return jsonx.Decode(data, v) }

// encodeSlow writes v (an alias struct) as encoding/json does and appends the extra fields, in
// key order, as they are. It is the reference behaviour, which the fast encoder (encode.go)
// reproduces and falls back to when a raw value is invalid, for the error.
func encodeSlow(v any, extra Extra) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return jsonx.Append(b, extra, jsonx.Options{})
}
