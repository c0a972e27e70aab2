package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
)

// Shape is what a request says about the form of its answer besides its messages and tools.
type Shape struct {
	// NoTools: tool_choice "none".
	NoTools bool
	// Forced is the tool tool_choice names (chat {"type":"function",…}, Anthropic
	// {"type":"tool",…}); the answer is a call of it.
	Forced string
	// Format is a response_format of type json_schema; the answer is the JSON object as text.
	Format *hippocam.Structured
}

// SetRefuseStructured makes the model refuse, with EINVALID (a 400 over HTTP), every request
// that asks for a structured answer: a response_format json_schema (the error names
// response_format) or a forced tool (it names tool_choice), as an upstream without structured
// output does. It lets a test see Hippocam fall back to the schema in prose.
func (m *Model) SetRefuseStructured(refuse bool) {
	m.mu.Lock()
	m.refuseStructured = refuse
	m.mu.Unlock()
}

// StructuredRefusals is how many requests SetRefuseStructured made the model refuse.
func (m *Model) StructuredRefusals() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused
}

// refuses is the refusal of a structured request under SetRefuseStructured, and the check of a
// strict response_format's schema: strict mode takes a schema whose every object lists all its
// properties as required and sets additionalProperties false, and refuses any other, as OpenAI
// does. Nil when the request may be answered.
func (m *Model) refuses(shape Shape) error {
	if shape.Format == nil && shape.Forced == "" {
		return nil
	}
	m.mu.Lock()
	refuse := m.refuseStructured
	if refuse {
		m.refused++
	}
	m.mu.Unlock()
	switch {
	case refuse && shape.Format != nil:
		return hippocam.Errorf(hippocam.EINVALID, "response_format of type json_schema is not supported by this model")
	case refuse:
		return hippocam.Errorf(hippocam.EINVALID, "tool_choice that forces a tool is not supported by this model")
	case shape.Format != nil && shape.Format.Strict:
		if p := strictProblem(shape.Format.Schema, "schema"); p != "" {
			return hippocam.Errorf(hippocam.EINVALID, "Invalid schema for response_format '%s': %s", shape.Format.Name, p)
		}
	}
	return nil
}

// chatShape reads the shape of a chat-completions request. EINVALID for a response_format that
// is not the JSON it should be.
func chatShape(req *wire.ChatRequest) (Shape, error) {
	shape := Shape{NoTools: string(req.ToolChoice) == `"none"`}
	var tc struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if len(req.ToolChoice) > 0 && req.ToolChoice[0] == '{' && json.Unmarshal(req.ToolChoice, &tc) == nil {
		shape.Forced = tc.Function.Name
	}
	s, ok, err := wire.ReadResponseFormat(req.Extra)
	if err != nil {
		return shape, hippocam.Errorf(hippocam.EINVALID, "%v", err)
	}
	if ok {
		shape.Format = &s
	}
	return shape, nil
}

// conversationShape is the shape of a request read as a conversation (Anthropic's): its tool
// choice, "none" or a tool's name.
func conversationShape(choice string) Shape {
	switch choice {
	case "", "auto", "required":
		return Shape{}
	case "none":
		return Shape{NoTools: true}
	}
	return Shape{Forced: choice}
}

// strictProblem says what keeps schema from being a strict one (at path), "" when nothing does.
func strictProblem(schema json.RawMessage, path string) string {
	var node map[string]json.RawMessage
	if json.Unmarshal(schema, &node) != nil {
		return ""
	}
	var props map[string]json.RawMessage
	_ = json.Unmarshal(node["properties"], &props)
	var typ any
	_ = json.Unmarshal(node["type"], &typ)
	object := props != nil || typ == "object"
	if t, ok := typ.([]any); ok {
		for _, x := range t {
			object = object || x == "object"
		}
	}
	if object {
		if string(node["additionalProperties"]) != "false" {
			return fmt.Sprintf("In context=%s, 'additionalProperties' is required to be supplied and to be false", path)
		}
		var required []string
		_ = json.Unmarshal(node["required"], &required)
		listed := map[string]bool{}
		for _, r := range required {
			listed[r] = true
		}
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if !listed[k] {
				return fmt.Sprintf("In context=%s, 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'", path, k)
			}
			if p := strictProblem(props[k], path+".properties."+k); p != "" {
				return p
			}
		}
	}
	if x, ok := node["items"]; ok {
		if p := strictProblem(x, path+".items"); p != "" {
			return p
		}
	}
	var anyOf []json.RawMessage
	if json.Unmarshal(node["anyOf"], &anyOf) == nil {
		for i, x := range anyOf {
			if p := strictProblem(x, fmt.Sprintf("%s.anyOf[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

// withNulls writes the JSON object text as a strict model answers schema: every property the
// object leaves out is there, null, at every level. Its members come in the schema's order.
func withNulls(text string, schema json.RawMessage) (string, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber() // numbers as written: "0.20" stays 0.20
	if err := dec.Decode(&v); err != nil {
		return "", hippocam.Errorf(hippocam.EINTERNAL, "structured answer: %v", err)
	}
	var b bytes.Buffer
	if err := writeFilled(&b, v, schema); err != nil {
		return "", hippocam.Errorf(hippocam.EINTERNAL, "structured answer: %v", err)
	}
	return b.String(), nil
}

// writeFilled writes v, filling in the properties schema names with null where v has none.
func writeFilled(b *bytes.Buffer, v any, schema json.RawMessage) error {
	var node struct {
		Properties json.RawMessage   `json:"properties"`
		Items      json.RawMessage   `json:"items"`
		AnyOf      []json.RawMessage `json:"anyOf"`
	}
	_ = json.Unmarshal(schema, &node)
	if len(node.AnyOf) > 0 { // a nullable property without a type: the original is the first branch
		return writeFilled(b, v, node.AnyOf[0])
	}
	switch v := v.(type) {
	case map[string]any:
		keys, props := propertyOrder(node.Properties)
		var extra []string
		for k := range v {
			if _, ok := props[k]; !ok {
				extra = append(extra, k)
			}
		}
		sort.Strings(extra)
		keys = append(keys, extra...)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			x, ok := v[k]
			if !ok {
				b.WriteString("null")
				continue
			}
			if err := writeFilled(b, x, props[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeFilled(b, x, node.Items); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		var x bytes.Buffer
		enc := json.NewEncoder(&x)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.WriteString(strings.TrimSpace(x.String()))
	}
	return nil
}

// propertyOrder reads the names of a properties object in their order, and their schemas.
func propertyOrder(raw json.RawMessage) ([]string, map[string]json.RawMessage) {
	props := map[string]json.RawMessage{}
	if json.Unmarshal(raw, &props) != nil {
		return nil, props
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var keys []string
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, props
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	return keys, props
}
