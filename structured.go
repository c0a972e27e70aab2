package hippocam

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Structured asks the model for an answer that is one JSON object following Schema, through the
// upstream's own mechanism rather than through instructions in the messages: an OpenAI-compatible
// upstream gets response_format json_schema (with Strict, the schema rewritten by StrictSchema),
// Anthropic a forced call of a tool named Name whose input schema is Schema. A request that
// carries it offers no other tools; the answer is the object as text (OpenAI) or as the
// arguments of a call of Name (Anthropic).
type Structured struct {
	// Name names the answer (the schema's name, or the forced tool's); letters, digits, _ and -.
	Name string
	// Description says what the answer is (the forced tool's description).
	Description string
	// Schema is a JSON Schema whose root is an object.
	Schema json.RawMessage
	// Strict asks the upstream to hold the answer to the schema exactly, where it can.
	Strict bool
}

// StructuredMode is how Hippocam asks for its roles' JSON answers (serve --structured).
type StructuredMode string

// The structured modes.
const (
	// StructuredAuto asks natively, and falls back to the schema in prose for an upstream and
	// model that refused the native request once (RefusesStructured), for the rest of the
	// process.
	StructuredAuto StructuredMode = "auto"
	// StructuredNative always asks natively; a refusal is an error.
	StructuredNative StructuredMode = "native"
	// StructuredProse never asks natively: the schema travels in the messages as text.
	StructuredProse StructuredMode = "prose"
)

// ParseStructuredMode reads a mode name; "" is StructuredAuto. EINVALID for any other word.
func ParseStructuredMode(s string) (StructuredMode, error) {
	switch m := StructuredMode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return StructuredAuto, nil
	case StructuredAuto, StructuredNative, StructuredProse:
		return m, nil
	}
	return "", Errorf(EINVALID, "structured mode must be auto, native or prose, not %q", s)
}

// Native reports whether the mode starts by asking natively.
func (m StructuredMode) Native() bool { return m != StructuredProse }

// Fallback reports whether a refusal of the native request is answered by asking in prose.
func (m StructuredMode) Fallback() bool { return m == "" || m == StructuredAuto }

// StructuredRefusal is the error of a structured request an upstream refused, because it does not
// take the native mechanism (a 400 naming response_format, json_schema, strict, tools or
// tool_choice), or because it refused it earlier in this process (Remembered; then nothing was
// sent). Find it with errors.As; the caller may send the request again with the schema in prose.
type StructuredRefusal struct {
	Upstream, Model string
	Remembered      bool
	// Err is the upstream's refusal (nil when Remembered).
	Err error
}

func (e *StructuredRefusal) Error() string {
	if e.Remembered {
		return fmt.Sprintf("hippocam: %s: %s (model %s) refused structured output earlier", EINVALID, e.Upstream, e.Model)
	}
	return fmt.Sprintf("%v (structured output refused by %s, model %s)", e.Err, e.Upstream, e.Model)
}

// Unwrap returns the upstream's error, or an EINVALID error when the refusal was remembered.
func (e *StructuredRefusal) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return Errorf(EINVALID, "%s (model %s) refused structured output earlier", e.Upstream, e.Model)
}

// IsStructuredRefusal reports whether err holds a *StructuredRefusal.
func IsStructuredRefusal(err error) bool {
	var r *StructuredRefusal
	return errors.As(err, &r)
}

// structuredWords are what an upstream's refusal of the native mechanism names.
var structuredWords = []string{"response_format", "json_schema", "strict", "tool_choice", "tools", "tool use", "structured output", "guided_json", "input_schema"}

// RefusesStructured reports whether err is an upstream's refusal of a structured request's native
// mechanism: a 400 or 422 (UpstreamStatus) whose error (UpstreamError: type, code, message) names
// one of response_format, json_schema, strict, tool_choice, tools, input_schema or structured
// output.
func RefusesStructured(err error) bool {
	var status interface {
		UpstreamStatus() (int, time.Duration)
	}
	if !errors.As(err, &status) {
		return false
	}
	if code, _ := status.UpstreamStatus(); code != 400 && code != 422 {
		return false
	}
	text := err.Error()
	var detail interface {
		UpstreamError() (typ, code, message string)
	}
	if errors.As(err, &detail) {
		typ, code, msg := detail.UpstreamError()
		text += " " + typ + " " + code + " " + msg
	}
	text = strings.ToLower(text)
	for _, w := range structuredWords {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

// structuredRefusals remembers, for this process, the upstreams (base URL and model) that refused
// a structured request.
var structuredRefusals sync.Map

// RememberStructuredRefusal records that upstream (a base URL) refused structured requests for
// model; StructuredRefused reports it from then on, for the life of the process.
func RememberStructuredRefusal(upstream, model string) {
	structuredRefusals.Store(upstream+"\x00"+model, true)
}

// StructuredRefused reports whether upstream refused structured requests for model.
func StructuredRefused(upstream, model string) bool {
	_, ok := structuredRefusals.Load(upstream + "\x00" + model)
	return ok
}

// StrictSchema rewrites an object schema into the form strict structured output takes (OpenAI's
// strict json_schema): at every object level (the root, properties, array items, anyOf branches,
// $defs), every property is listed in required and additionalProperties is false. A property the
// schema did not require becomes nullable: its type X becomes [X, "null"] (and null joins its
// enum), or, when it names no type, it becomes anyOf the original and {"type":"null"}. The order
// of properties, which sets the order the model writes them in, is kept. An answer then carries
// null for what it leaves out, which a Go decoder reads as the field's zero value. Errors: schema
// is not JSON, or describes a map (an object whose additionalProperties is a schema), which
// strict mode cannot express.
func StrictSchema(schema json.RawMessage) (json.RawMessage, error) {
	v, err := parseOrdered(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if openMap(v) {
		return nil, fmt.Errorf("schema: an object whose additionalProperties is a schema (a map) has no strict form")
	}
	v = strictNode(v)
	var b bytes.Buffer
	writeOrdered(&b, v)
	return b.Bytes(), nil
}

// DropNulls removes, at every level, the members of the JSON objects in text whose value is null,
// keeping everything else (the order of members too); text that holds no null, or is not JSON, is
// returned as it is. Under a strict schema (StrictSchema) a model writes null for every field the
// contract lets it leave out; dropping them gives the answer the contract describes, so that a
// decoder tells a left-out field from a zero one (a map entry, a pointer) as it would in prose.
func DropNulls(text string) string {
	if !strings.Contains(text, "null") {
		return text
	}
	v, err := parseOrdered([]byte(text))
	if err != nil {
		return text
	}
	var b bytes.Buffer
	writeOrdered(&b, dropNulls(v))
	return b.String()
}

func dropNulls(v any) any {
	switch v := v.(type) {
	case ordered:
		out := v[:0:0]
		for _, m := range v {
			if scalar(m.val) == "null" {
				continue
			}
			out = append(out, member{m.key, dropNulls(m.val)})
		}
		return out
	case []any:
		for i := range v {
			v[i] = dropNulls(v[i])
		}
	}
	return v
}

// openMap reports whether a schema node, or one within it, describes a map: an object whose
// additionalProperties is itself a schema. Strict mode cannot say that.
func openMap(v any) bool {
	switch v := v.(type) {
	case ordered:
		for _, m := range v {
			if _, isSchema := m.val.(ordered); m.key == "additionalProperties" && isSchema {
				return true
			}
			if openMap(m.val) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if openMap(x) {
				return true
			}
		}
	}
	return false
}

// ordered is a JSON object that keeps its members' order.
type ordered []member

type member struct {
	key string
	val any // ordered, []any, or a json.RawMessage scalar
}

func (o ordered) get(k string) (any, int) {
	for i, m := range o {
		if m.key == k {
			return m.val, i
		}
	}
	return nil, -1
}

func (o ordered) set(k string, v any) ordered {
	if _, i := o.get(k); i >= 0 {
		o[i].val = v
		return o
	}
	return append(o, member{k, v})
}

func parseOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := readOrdered(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func readOrdered(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		if t == '{' {
			o := ordered{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := readOrdered(dec)
				if err != nil {
					return nil, err
				}
				o = append(o, member{kt.(string), v})
			}
			_, err := dec.Token()
			return o, err
		}
		a := []any{}
		for dec.More() {
			v, err := readOrdered(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	b, err := json.Marshal(t)
	return json.RawMessage(b), err
}

func writeOrdered(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case ordered:
		b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(m.key)
			b.Write(k)
			b.WriteByte(':')
			writeOrdered(b, m.val)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeOrdered(b, x)
		}
		b.WriteByte(']')
	case json.RawMessage:
		b.Write(v)
	default:
		x, _ := json.Marshal(v)
		b.Write(x)
	}
}

// scalar is the JSON text of a scalar member value ("" when it is not one).
func scalar(v any) string {
	if r, ok := v.(json.RawMessage); ok {
		return string(r)
	}
	return ""
}

// strictNode rewrites one schema node (see StrictSchema).
func strictNode(v any) any {
	o, ok := v.(ordered)
	if !ok {
		return v
	}
	for _, k := range []string{"items", "additionalItems", "not"} {
		if x, i := o.get(k); i >= 0 {
			o[i].val = strictNode(x)
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		if x, i := o.get(k); i >= 0 {
			if a, ok := x.([]any); ok {
				for j := range a {
					a[j] = strictNode(a[j])
				}
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		if x, i := o.get(k); i >= 0 {
			if defs, ok := x.(ordered); ok {
				for j := range defs {
					defs[j].val = strictNode(defs[j].val)
				}
			}
		}
	}
	props, _ := o.get("properties")
	p, hasProps := props.(ordered)
	if !hasProps && !isObjectType(o) {
		return o
	}
	required := map[string]bool{}
	if r, _ := o.get("required"); r != nil {
		if a, ok := r.([]any); ok {
			for _, x := range a {
				var s string
				if json.Unmarshal([]byte(scalar(x)), &s) == nil {
					required[s] = true
				}
			}
		}
	}
	all := []any{}
	for j := range p {
		p[j].val = strictNode(p[j].val)
		if !required[p[j].key] {
			p[j].val = nullable(p[j].val)
		}
		k, _ := json.Marshal(p[j].key)
		all = append(all, json.RawMessage(k))
	}
	if p == nil {
		p = ordered{}
	}
	o = o.set("properties", p)
	o = o.set("required", all)
	o = o.set("additionalProperties", json.RawMessage("false"))
	return o
}

// isObjectType reports whether a schema node's type is (or includes) "object".
func isObjectType(o ordered) bool {
	t, _ := o.get("type")
	switch t := t.(type) {
	case json.RawMessage:
		return string(t) == `"object"`
	case []any:
		for _, x := range t {
			if scalar(x) == `"object"` {
				return true
			}
		}
	}
	return false
}

// nullable lets a property's schema take null as well.
func nullable(v any) any {
	o, ok := v.(ordered)
	if !ok {
		return v
	}
	t, i := o.get("type")
	if i < 0 {
		return ordered{{"anyOf", []any{o, ordered{{"type", json.RawMessage(`"null"`)}}}}}
	}
	switch t := t.(type) {
	case json.RawMessage:
		if string(t) != `"null"` {
			o[i].val = []any{t, json.RawMessage(`"null"`)}
		}
	case []any:
		has := false
		for _, x := range t {
			has = has || scalar(x) == `"null"`
		}
		if !has {
			o[i].val = append(t, json.RawMessage(`"null"`))
		}
	}
	if e, j := o.get("enum"); j >= 0 {
		if a, ok := e.([]any); ok {
			has := false
			for _, x := range a {
				has = has || scalar(x) == "null"
			}
			if !has {
				o[j].val = append(a, json.RawMessage("null"))
			}
		}
	}
	return o
}

// RememberedRefusal is the error of a structured request (Request.Structured) to an upstream
// and model that refused one earlier in this process: a remembered *StructuredRefusal, so the
// model client sends nothing. Nil for any other request.
func RememberedRefusal(upstream, model string, req *Request) error {
	if req == nil || req.Structured == nil || !StructuredRefused(upstream, model) {
		return nil
	}
	return &StructuredRefusal{Upstream: upstream, Model: model, Remembered: true}
}

// RefusalOf turns an upstream's refusal of a structured request (RefusesStructured) into a
// *StructuredRefusal and remembers it for the upstream and model, logging it once on log; any
// other error is returned as it is.
func RefusalOf(upstream, model string, req *Request, err error, log *slog.Logger) error {
	if req == nil || req.Structured == nil || !RefusesStructured(err) {
		return err
	}
	RememberStructuredRefusal(upstream, model)
	if log != nil {
		log.Warn("the upstream refused structured output; remembered for this upstream and model",
			"upstream", upstream, "model", model, "error", err)
	}
	return &StructuredRefusal{Upstream: upstream, Model: model, Err: err}
}
