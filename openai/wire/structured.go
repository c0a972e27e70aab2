package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hippocam/hippocam"
)

// ResponseFormat is the response_format member that asks a chat-completions upstream for the
// structured answer s: {"type":"json_schema","json_schema":{"name":…,"description":…,
// "schema":…,"strict":true}}. With s.Strict the schema is hippocam.StrictSchema of s.Schema, the
// form strict mode takes (every property required, nullable when it was optional;
// additionalProperties false at every object level); a schema that has no strict form is sent as
// it is, with strict false. Errors: s.Schema is not JSON.
func ResponseFormat(s *hippocam.Structured) (json.RawMessage, error) {
	schema, strict := s.Schema, s.Strict
	if strict {
		if st, err := hippocam.StrictSchema(s.Schema); err == nil {
			schema = st
		} else {
			// A schema strict mode cannot express (a map) is sent as it is, not strict.
			strict = false
		}
	}
	type jsonSchema struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Schema      json.RawMessage `json:"schema"`
		Strict      bool            `json:"strict,omitempty"`
	}
	if !json.Valid(bytes.TrimSpace(schema)) {
		return nil, fmt.Errorf("structured %s: the schema is not valid JSON", s.Name)
	}
	return json.Marshal(struct {
		Type       string     `json:"type"`
		JSONSchema jsonSchema `json:"json_schema"`
	}{"json_schema", jsonSchema{s.Name, s.Description, schema, strict}})
}

// ReadResponseFormat reads a request's response_format member when it asks for a JSON schema:
// the schema's name and the schema, whether strict; ok is false for no member or another type.
// Errors: the member is not the JSON it should be.
func ReadResponseFormat(extra Extra) (s hippocam.Structured, ok bool, err error) {
	raw, found := extra["response_format"]
	if !found || string(raw) == "null" {
		return s, false, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      bool            `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return s, false, fmt.Errorf("response_format: %v", err)
	}
	if rf.Type != "json_schema" {
		return s, false, nil
	}
	if rf.JSONSchema == nil || rf.JSONSchema.Name == "" {
		return s, false, fmt.Errorf("response_format: json_schema needs a name")
	}
	js := rf.JSONSchema
	return hippocam.Structured{Name: js.Name, Description: js.Description, Schema: js.Schema, Strict: js.Strict}, true, nil
}

// withStructured puts the response_format of r.Structured into extra (made when nil); a request
// without Structured leaves extra as it is.
func withStructured(extra Extra, r *hippocam.Request) (Extra, error) {
	if r.Structured == nil {
		return extra, nil
	}
	rf, err := ResponseFormat(r.Structured)
	if err != nil {
		return extra, err
	}
	if extra == nil {
		extra = Extra{}
	}
	extra["response_format"] = rf
	return extra, nil
}
