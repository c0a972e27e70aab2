// Package jsonx keeps the JSON members that a Go type does not declare, so that a wire format
// passes on what it does not read: a type decodes with Decode, which returns the undeclared
// members, keeps them in a field of type Extra, and encodes with Append, which writes them back
// after its own. The OpenAI formats (openai/wire) and Anthropic's (anthropic) share it; a new
// wire format does the same. openai/wire's hand-written codec of chat requests reproduces
// these bytes for speed and falls back to this package.
package jsonx

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Extra holds the JSON members of an object that its Go type does not declare, verbatim.
type Extra map[string]json.RawMessage

var declared sync.Map // reflect.Type -> map[string]bool

// Declared returns the member names in the json tags of struct type t (or of the struct t
// points to). The map is shared: callers must not change it.
func Declared(t reflect.Type) map[string]bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if k, ok := declared.Load(t); ok {
		return k.(map[string]bool)
	}
	keys := make(map[string]bool, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			keys[name] = true
		}
	}
	declared.Store(t, keys)
	return keys
}

// Decode fills v, a pointer to a struct with no UnmarshalJSON of its own (an alias type), from
// data with encoding/json, and returns the members of data that v's type does not declare, nil
// when there are none.
func Decode(data []byte, v any) (Extra, error) {
	if err := json.Unmarshal(data, v); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	for k := range Declared(reflect.TypeOf(v)) {
		delete(all, k)
	}
	if len(all) == 0 {
		return nil, nil
	}
	return Extra(all), nil
}

// Options says how Append writes the extra members.
type Options struct {
	// Skip leaves out the members whose key it holds (the keys the object declares itself, so
	// that no key is written twice).
	Skip map[string]bool
	// Check refuses a value that is not valid JSON; without it values are written as they are.
	Check bool
}

// Append returns obj, one JSON object as encoded, with the members of extra added after its
// own in key order, values verbatim and keys encoded as encoding/json encodes strings.
func Append(obj []byte, extra Extra, opt Options) ([]byte, error) {
	if len(extra) == 0 {
		return obj, nil
	}
	out := make([]byte, 0, len(obj)+64*len(extra))
	out = append(out, obj[:len(obj)-1]...)
	n := 0
	if len(obj) > 2 {
		n = 1
	}
	for _, k := range SortedKeys(extra) {
		v := extra[k]
		if opt.Skip[k] {
			continue
		}
		if opt.Check && !json.Valid(v) {
			return nil, fmt.Errorf("member %q is not valid JSON", k)
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		kb, _ := json.Marshal(k)
		out = append(append(append(out, kb...), ':'), v...)
	}
	return append(out, '}'), nil
}

// SortedKeys returns the keys of m in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
