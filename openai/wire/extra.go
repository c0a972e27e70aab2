// Package wire holds the OpenAI JSON shapes that Hippocam reads and writes, the openai adapter's
// own types: the model client, the simulated model and the proxy all speak through them. Every object
// keeps the fields it does not know in Extra and writes them back unchanged, so that a proxy
// passes through what it does not use.
package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// Extra holds the JSON fields of an object that its Go type does not declare.
type Extra map[string]json.RawMessage

var knownKeys sync.Map // reflect.Type -> map[string]bool

func keysOf(t reflect.Type) map[string]bool {
	if k, ok := knownKeys.Load(t); ok {
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
	knownKeys.Store(t, keys)
	return keys
}

// decodeSlow fills v (a pointer to an alias struct with no methods) from data and returns the
// fields v's type does not declare. It is the reference behaviour, which the fast decoder
// (decode.go) reproduces for the input it accepts and falls back to for the rest.
func decodeSlow(data []byte, v any) (Extra, error) {
	if err := json.Unmarshal(data, v); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	known := keysOf(reflect.TypeOf(v).Elem())
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

// encodeSlow writes v (an alias struct) and appends the extra fields, in key order. It is the
// reference behaviour, which the fast encoder (encode.go) reproduces and falls back to when a raw
// value is invalid, for the error.
func encodeSlow(v any, extra Extra) ([]byte, error) {
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
