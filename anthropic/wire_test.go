package anthropic_test

import (
	"encoding/json"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
)

func TestWireRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		v    any
	}{
		{"Request", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi","citations":[{"x":1}]}]}],` +
			`"tools":[{"name":"t","input_schema":{"type":"object"},"strict":true}],"tool_choice":{"type":"auto"},"temperature":0.5,"top_k":3,` +
			`"stop_sequences":["x"],"metadata":{"user_id":"u"},"thinking":{"type":"disabled"},"service_tier":"auto","container":{"id":"c"},"mcp_servers":[]}`, &anthropic.Request{}},
		{"ToolUse", `{"type":"tool_use","id":"a","name":"b","input":{"k":[1,2]},"cache_control":{"type":"ephemeral","ttl":"1h"}}`, &anthropic.Block{}},
		{"ToolResult", `{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"r"}],"is_error":true}`, &anthropic.Block{}},
		{"Document", `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"},"title":"T","context":"c","citations":{"enabled":true}}`, &anthropic.Block{}},
		{"Thinking", `{"type":"thinking","thinking":"","signature":""}`, &anthropic.Block{}},
		{"UnknownType", `{"type":"future_block","a":1,"b":"x"}`, &anthropic.Block{}},
		{"ServerTool", `{"type":"web_search_20250305","name":"web_search","max_uses":5}`, &anthropic.Tool{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := json.Unmarshal([]byte(c.in), c.v); err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if hippocam.CanonicalJSON(string(out)) != hippocam.CanonicalJSON(c.in) {
				t.Errorf("round trip:\n got %s\nwant %s", out, c.in)
			}
		})
	}
}

func TestWireForms(t *testing.T) {
	var m anthropic.Message
	if err := json.Unmarshal([]byte(`{"role":"user","content":"plain"}`), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || m.Content[0].Type != "text" || m.Content[0].Text != "plain" {
		t.Errorf("string content read as %+v", m.Content)
	}
	b, _ := json.Marshal(m)
	if string(b) != `{"role":"user","content":[{"type":"text","text":"plain"}]}` {
		t.Errorf("written as %s", b)
	}
	// An Extra member that the type declares is not written twice.
	r := anthropic.Request{Model: "m", MaxTokens: 1, Extra: anthropic.Extra{"model": json.RawMessage(`"other"`), "z": json.RawMessage(`1`)}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"model":"m","max_tokens":1,"messages":null,"z":1}` {
		t.Errorf("request written as %s", b)
	}
	var blk anthropic.Block
	if err := json.Unmarshal([]byte(`{"type":"tool_use","input":{bad}}`), &blk); err == nil {
		t.Error("a tool_use with invalid input was read")
	}
}
