package httpapi_test

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/internal/params"
	"github.com/hippocam/hippocam/openai"
)

// sample is how a test request carries one field: body is the member added to the request
// ("" for "field": value), value the field's value as the parameter table sees it in Extra.
type sample struct{ value, body string }

// samples holds a value for every field of every parameter table, by inbound format.
var samples = map[hippocam.Format]map[string]sample{
	hippocam.FormatChat: {
		"max_tokens": {value: "123"}, "max_completion_tokens": {value: "124"},
		"temperature": {value: "1.5"}, "top_p": {value: "0.5"}, "stop": {value: `["END"]`}, "seed": {value: "7"},
		"frequency_penalty": {value: "0.1"}, "presence_penalty": {value: "0.2"}, "logprobs": {value: "true"},
		"top_logprobs": {value: "2"}, "logit_bias": {value: `{"50256":-100}`},
		"response_format": {value: `{"type":"json_object"}`}, "parallel_tool_calls": {value: "false"},
		"reasoning_effort": {value: `"low"`}, "verbosity": {value: `"low"`}, "service_tier": {value: `"default"`},
		"store": {value: "false"}, "metadata": {value: `{"team":"a"}`}, "user": {value: `"u-1"`},
		"safety_identifier": {value: `"s-1"`}, "prompt_cache_key": {value: `"k-1"`},
		"prompt_cache_retention": {value: `"24h"`}, "modalities": {value: `["text"]`},
		"audio": {value: `{"voice":"alloy","format":"mp3"}`}, "prediction": {value: `{"type":"content","content":"x"}`},
		"web_search_options": {value: `{}`},
	},
	hippocam.FormatResponses: {
		"max_output_tokens": {value: "125"}, "temperature": {value: "0.7"}, "top_p": {value: "0.5"},
		"parallel_tool_calls": {value: "false"}, "metadata": {value: `{"team":"a"}`}, "user": {value: `"u-2"`},
		"service_tier": {value: `"auto"`}, "safety_identifier": {value: `"s-2"`}, "prompt_cache_key": {value: `"k-2"`},
		"prompt_cache_retention": {value: `"in_memory"`},
		"text":                   {value: `{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}},"verbosity":"low"}`},
		"reasoning":              {value: `{"effort":"high","summary":"auto"}`}, "truncation": {value: `"auto"`},
		"include": {value: `["reasoning.encrypted_content"]`}, "background": {value: "false"},
		"conversation": {value: `"conv_1"`}, "prompt": {value: `{"id":"pmpt_1"}`}, "max_tool_calls": {value: "3"},
		"top_logprobs": {value: "2"}, "client_metadata": {value: `{"x-codex-turn":"1"}`},
	},
	hippocam.FormatAnthropic: {
		"max_tokens": {value: "126"}, "temperature": {value: "0.5"}, "top_p": {value: "0.5"}, "top_k": {value: "5"},
		"stop_sequences": {value: `["END"]`}, "metadata": {value: `{"user_id":"u-3"}`},
		"thinking": {value: `{"type":"enabled","budget_tokens":1024}`}, "service_tier": {value: `"standard_only"`},
		"context_management": {value: `{"edits":[{"type":"clear_tool_uses_20250919"}]}`},
		"output_config":      {value: `{"effort":"high"}`}, "container": {value: `"c-1"`}, "mcp_servers": {value: `[]`},
		"disable_parallel_tool_use": {value: "true", body: `"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`},
	},
}

// inbound is where and how a test request of each format is sent; body is its members before
// the field under test, which may replace one of them.
var inbound = map[hippocam.Format]struct{ path, body string }{
	hippocam.FormatChat: {"/v1/chat/completions", `"model":"m","messages":[{"role":"user","content":"!say ok"}],` +
		`"tools":[{"type":"function","function":{"name":"look","parameters":{"type":"object"}}}]`},
	hippocam.FormatResponses: {"/v1/responses", `"model":"m","input":"!say ok",` +
		`"tools":[{"type":"function","name":"look","parameters":{"type":"object"}}]`},
	hippocam.FormatAnthropic: {"/v1/messages", `"model":"m","max_tokens":50,"messages":[{"role":"user","content":"!say ok"}],` +
		`"tools":[{"name":"look","input_schema":{"type":"object"}}]`},
}

// upstreamTable is the parameter table of the upstream adapter of format up for requests in
// format from.
func upstreamTable(up, from hippocam.Format) *params.Table {
	if up == hippocam.FormatAnthropic {
		return anthropic.Params(from)
	}
	return openai.Params(from)
}

// unknownField is a field no format has.
const unknownField = "zz_not_a_setting"

// Every row of every parameter table, sent by an agent of the inbound format through the proxy,
// reaches the upstream as the row says: kept byte for byte, translated into what the row's
// translation gives, or absent; the answer's limit arrives as max_tokens. A field no table lists
// is kept for an upstream of the agent's own format and absent from any other. Hippocam's own
// calls carry none of the agent's fields (a response_format they carry is their own structured
// output).
func TestParameterTables(t *testing.T) {
	for _, up := range []hippocam.Format{hippocam.FormatChat, hippocam.FormatAnthropic} {
		for _, from := range []hippocam.Format{hippocam.FormatChat, hippocam.FormatResponses, hippocam.FormatAnthropic} {
			table := upstreamTable(up, from)
			t.Run(string(from)+"→"+string(up), func(t *testing.T) {
				s, rec := newServerOver(t, up, 8000)
				rows := append(append([]params.Rule(nil), table.Rules...), params.Rule{Field: unknownField, Action: table.Unlisted()})
				for i, r := range rows {
					smp, ok := samples[from][r.Field]
					if r.Field == unknownField {
						smp, ok = sample{value: `{"a":1}`}, true
					}
					if !ok {
						t.Fatalf("no sample value for %s field %q", from, r.Field)
					}
					member := smp.body
					if member == "" {
						member = `"` + r.Field + `":` + smp.value
					}
					in := inbound[from]
					body := "{" + in.body + "," + member + "}"
					if r.Field == "max_tokens" && from == hippocam.FormatAnthropic {
						body = "{" + strings.Replace(in.body, `"max_tokens":50,`, "", 1) + "," + member + "}"
					}
					session := "p" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
					if resp := s.do(t, "POST", in.path, "", session, []byte(body)); resp.status != 200 {
						t.Fatalf("%s: %d %s", r.Field, resp.status, resp.body)
					}
					calls := rec.agentCalls()
					got := calls[len(calls)-1].body
					checkRow(t, up, r, smp.value, got)
				}
				if len(rec.roleCalls()) == 0 {
					t.Fatal("no call of Hippocam's own components was made")
				}
				for _, c := range rec.roleCalls() {
					for k, v := range c.body {
						if _, agents := samples[from][k]; agents && k != "max_tokens" && (k != "response_format" || !ownFormat(v)) {
							t.Errorf("a %s call carries the agent's field %q", c.role, k)
						}
					}
				}
			})
		}
	}
}

// ownFormat reports whether a role call's response_format is Hippocam's own: a strict
// json_schema named after one of the components' contracts, not the agent's.
func ownFormat(v json.RawMessage) bool {
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string `json:"name"`
			Strict bool   `json:"strict"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(v, &rf) != nil || rf.Type != "json_schema" || !rf.JSONSchema.Strict {
		return false
	}
	switch rf.JSONSchema.Name {
	case engine.JanusTool, engine.PrecipTool, engine.PalimTool:
		return true
	}
	return false
}

// checkRow checks the upstream body got for the row r, whose field had the value v.
func checkRow(t *testing.T, up hippocam.Format, r params.Rule, v string, got map[string]json.RawMessage) {
	t.Helper()
	same := func(a, b json.RawMessage) bool {
		return hippocam.CanonicalJSON(string(a)) == hippocam.CanonicalJSON(string(b))
	}
	switch r.Action {
	case params.Keep:
		if !same(got[r.Field], json.RawMessage(v)) {
			t.Errorf("%s: kept as %s, want %s", r.Field, got[r.Field], v)
		}
	case params.Drop:
		if _, ok := got[r.Field]; ok {
			t.Errorf("%s: sent (%s), want it left out", r.Field, got[r.Field])
		}
	case params.Read:
		if !same(got["max_tokens"], json.RawMessage(v)) {
			t.Errorf("%s: max_tokens %s, want %s", r.Field, got["max_tokens"], v)
		}
	case params.Translate:
		want := params.Fields{}
		if !r.Translate(json.RawMessage(v), want, params.Call{Model: "m"}) {
			if _, ok := got[r.Field]; ok {
				t.Errorf("%s: sent (%s), want it left out", r.Field, got[r.Field])
			}
			return
		}
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			g := got[k]
			if k == "disable_parallel_tool_use" && up == hippocam.FormatAnthropic {
				var tc struct {
					Disable json.RawMessage `json:"disable_parallel_tool_use"`
				}
				json.Unmarshal(got["tool_choice"], &tc)
				g = tc.Disable
			}
			if !same(g, want[k]) {
				t.Errorf("%s: %s is %s, want %s", r.Field, k, g, want[k])
			}
		}
	}
}

// The parameter tables in docs/formats.md are the code's.
func TestParameterTablesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/formats.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, up := range []hippocam.Format{hippocam.FormatChat, hippocam.FormatAnthropic} {
		for _, from := range []hippocam.Format{hippocam.FormatChat, hippocam.FormatResponses, hippocam.FormatAnthropic} {
			if md := upstreamTable(up, from).Markdown(); !strings.Contains(string(doc), md) {
				t.Errorf("docs/formats.md lacks the table %s → %s:\n%s", from, up, md)
			}
		}
	}
}
