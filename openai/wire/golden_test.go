package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Documents with unknown fields at every level, and what the implementation before the fast
// decoder and encoder wrote for them (golden outputs, produced by that implementation). Unknown
// fields come after the known ones in key order; those of the value encoded come as they were
// received (MarshalJSON), those of nested objects compacted and HTML-escaped as encoding/json
// does; unknown fields of ToolCall, FunctionCall, FunctionDef and Choice are dropped (a
// choice's logprobs, known since, are kept).

var goldenRequest = `{
  "zeta": {"b" : 1, "a": [1, 2]},
  "model": "gpt-4o",
  "temperature": 0.5,
  "messages": [
    {"role": "system", "content": "Be <brief> & exact\u2028", "cache_control": {"type": "ephemeral"}},
    {"role": "user", "content": [ {"type": "text", "text": "hi"} ], "name": "ann", "x_b": "2", "x_a": null},
    {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.go\"}", "extra_fn": 1}, "extra_call": true}
    ]},
    {"role": "tool", "tool_call_id": "c1", "content": "package a\n"}
  ],
  "tools": [
    {"type": "function", "function": {"name": "read", "description": "Reads.", "parameters": {"type": "object"}, "strict": true, "x": 1}, "cache_control": {"type": "ephemeral"}}
  ],
  "tool_choice": { "type": "function", "function": {"name": "read"} },
  "stream": true,
  "stream_options": {"include_usage": true},
  "max_tokens": 100,
  "Metadata": {"user": "<u>"},
  "a": "first"
}`

var goldenResponse = `{"id": "r1", "object": "chat.completion", "created": 1700000000, "model": "m",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok", "reasoning_content": "hmm ",
    "annotations": [ ]}, "finish_reason": "stop", "logprobs": null}],
  "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12, "prompt_tokens_details": {"cached_tokens": 8}},
  "system_fingerprint": "fp_1", "service_tier": "default"}`

func TestGoldenRoundTrip(t *testing.T) {
	var req ChatRequest
	if err := json.Unmarshal([]byte(goldenRequest), &req); err != nil {
		t.Fatal(err)
	}
	var resp ChatResponse
	if err := json.Unmarshal([]byte(goldenResponse), &resp); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                               string
		v                                  interface{ MarshalJSON() ([]byte, error) }
		marshalJSON, marshal, noEscapeHTML string
	}{
		{"req", req,
			`{"model":"gpt-4o","messages":[{"role":"system","content":"Be \u003cbrief\u003e \u0026 exact\u2028","cache_control":{"type":"ephemeral"}},{"role":"user","content":[{"type":"text","text":"hi"}],"name":"ann","x_a":null,"x_b":"2"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.go\"}"}}],"refusal":null},{"role":"tool","content":"package a\n","tool_call_id":"c1"}],"tools":[{"type":"function","function":{"name":"read","description":"Reads.","parameters":{"type":"object"},"strict":true},"cache_control":{"type":"ephemeral"}}],"tool_choice":{"type":"function","function":{"name":"read"}},"stream":true,"stream_options":{"include_usage":true},"max_tokens":100,"Metadata":{"user": "<u>"},"a":"first","temperature":0.5,"zeta":{"b" : 1, "a": [1, 2]}}`,
			`{"model":"gpt-4o","messages":[{"role":"system","content":"Be \u003cbrief\u003e \u0026 exact\u2028","cache_control":{"type":"ephemeral"}},{"role":"user","content":[{"type":"text","text":"hi"}],"name":"ann","x_a":null,"x_b":"2"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.go\"}"}}],"refusal":null},{"role":"tool","content":"package a\n","tool_call_id":"c1"}],"tools":[{"type":"function","function":{"name":"read","description":"Reads.","parameters":{"type":"object"},"strict":true},"cache_control":{"type":"ephemeral"}}],"tool_choice":{"type":"function","function":{"name":"read"}},"stream":true,"stream_options":{"include_usage":true},"max_tokens":100,"Metadata":{"user":"\u003cu\u003e"},"a":"first","temperature":0.5,"zeta":{"b":1,"a":[1,2]}}`,
			`{"model":"gpt-4o","messages":[{"role":"system","content":"Be \u003cbrief\u003e \u0026 exact\u2028","cache_control":{"type":"ephemeral"}},{"role":"user","content":[{"type":"text","text":"hi"}],"name":"ann","x_a":null,"x_b":"2"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.go\"}"}}],"refusal":null},{"role":"tool","content":"package a\n","tool_call_id":"c1"}],"tools":[{"type":"function","function":{"name":"read","description":"Reads.","parameters":{"type":"object"},"strict":true},"cache_control":{"type":"ephemeral"}}],"tool_choice":{"type":"function","function":{"name":"read"}},"stream":true,"stream_options":{"include_usage":true},"max_tokens":100,"Metadata":{"user":"<u>"},"a":"first","temperature":0.5,"zeta":{"b":1,"a":[1,2]}}`},
		{"msg1", req.Messages[1],
			`{"role":"user","content":[{"type":"text","text":"hi"}],"name":"ann","x_a":null,"x_b":"2"}`,
			`{"role":"user","content":[{"type":"text","text":"hi"}],"name":"ann","x_a":null,"x_b":"2"}`,
			`{"role":"user","content":[{"type":"text","text":"hi"}],"name":"ann","x_a":null,"x_b":"2"}`},
		{"tool0", req.Tools[0],
			`{"type":"function","function":{"name":"read","description":"Reads.","parameters":{"type":"object"},"strict":true},"cache_control":{"type": "ephemeral"}}`,
			`{"type":"function","function":{"name":"read","description":"Reads.","parameters":{"type":"object"},"strict":true},"cache_control":{"type":"ephemeral"}}`,
			`{"type":"function","function":{"name":"read","description":"Reads.","parameters":{"type":"object"},"strict":true},"cache_control":{"type":"ephemeral"}}`},
		{"resp", resp,
			`{"id":"r1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok","annotations":[],"reasoning_content":"hmm "},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":8,"audio_tokens":0}},"service_tier":"default","system_fingerprint":"fp_1"}`,
			`{"id":"r1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok","annotations":[],"reasoning_content":"hmm "},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":8,"audio_tokens":0}},"service_tier":"default","system_fingerprint":"fp_1"}`,
			`{"id":"r1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok","annotations":[],"reasoning_content":"hmm "},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":8,"audio_tokens":0}},"service_tier":"default","system_fingerprint":"fp_1"}`},
	} {
		b, err := c.v.MarshalJSON()
		if err != nil || string(b) != c.marshalJSON {
			t.Errorf("%s MarshalJSON:\ngot  %s %v\nwant %s", c.name, b, err, c.marshalJSON)
		}
		b, err = json.Marshal(c.v)
		if err != nil || string(b) != c.marshal {
			t.Errorf("%s json.Marshal:\ngot  %s %v\nwant %s", c.name, b, err, c.marshal)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(c.v); err != nil || buf.String() != c.noEscapeHTML+"\n" {
			t.Errorf("%s Encoder without HTML escaping:\ngot  %s %v\nwant %s", c.name, buf.Bytes(), err, c.noEscapeHTML)
		}
	}
	// The fast decoder read these documents (the comparison with the reference is elsewhere).
	for i, k := range []kind{kinds[0], kinds[3]} {
		if doc := []string{goldenRequest, goldenResponse}[i]; !k.fast(newDecoder([]byte(doc))) {
			t.Errorf("the fast decoder refused %s", k.name)
		}
		checkDecode(t, k, []byte([]string{goldenRequest, goldenResponse}[i]))
	}
}

// TestGoldenErrors checks that failures read as before (messages written by the previous
// implementation).
func TestGoldenErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"model":"m","messages":[{"role":1}]}`, "json: cannot unmarshal number into Go struct field chatRequest.messages.role of type string"},
		{`{"model":"m","messages":"x"}`, "json: cannot unmarshal string into Go struct field chatRequest.messages of type []wire.ChatMessage"},
		{`{"model":"m","max_tokens":1.5}`, "json: cannot unmarshal number 1.5 into Go struct field chatRequest.max_tokens of type int"},
		{`{"model":"m",}`, "invalid character '}' looking for beginning of object key string"},
		{`[]`, "json: cannot unmarshal array into Go value of type wire.chatRequest"},
	} {
		var req ChatRequest
		if err := json.Unmarshal([]byte(c.doc), &req); errText(err) != c.want {
			t.Errorf("%s: error %v, want %s", c.doc, err, c.want)
		}
	}
	bad := ChatRequest{Model: "m", Messages: []ChatMessage{{Role: "user", Extra: Extra{"x": json.RawMessage("{")}}}}
	want := "json: error calling MarshalJSON for type wire.ChatRequest: json: error calling MarshalJSON for type wire.ChatMessage: unexpected end of JSON input"
	if _, err := json.Marshal(bad); errText(err) != want {
		t.Errorf("encoding an invalid nested extra: error %v, want %s", err, want)
	}
	if b, err := bad.Messages[0].MarshalJSON(); err != nil || string(b) != `{"role":"user","x":{}` {
		t.Errorf("MarshalJSON writes its own extras as they are: %s %v", b, err)
	}
}
