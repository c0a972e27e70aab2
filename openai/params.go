package openai

import (
	"encoding/json"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/params"
)

// The parameter tables of the chat-completions upstream: for each inbound format, what becomes
// of each request field on its way to a chat-completions endpoint (docs/formats.md, "Across
// formats"). The fields the readers interpret (model, messages or input, system or
// instructions, tools, tool_choice, stream) are written by the request writer from the domain
// request; the answer's token limit is among them and is listed here because its name depends
// on the model (ReasoningModel).

// Params returns the table for requests that came in format from (FormatChat for ""), or nil
// for a format Hippocam does not read.
func Params(from hippocam.Format) *params.Table {
	switch from {
	case hippocam.FormatChat, "":
		return fromChat
	case hippocam.FormatResponses:
		return fromResponses
	case hippocam.FormatAnthropic:
		return fromMessages
	}
	return nil
}

// ReasoningModel reports whether model names one of OpenAI's reasoning models, which take the
// answer's limit as max_completion_tokens and refuse max_tokens: the o1, o3 and o4 families
// and later ("o" and a digit) and GPT-5 and later ("gpt-" and a major version of 5 or more),
// with or without a provider prefix ("openai/o3"). Any other name, every non-OpenAI model
// included, gets max_tokens, which every chat-completions server knows.
func ReasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9' {
		return true
	}
	if rest, ok := strings.CutPrefix(m, "gpt-"); ok {
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n > 0 && (n > 1 || rest[0] >= '5') {
			return true
		}
	}
	return false
}

// limitField names the field of the answer's token limit for model.
func limitField(model string) string {
	if ReasoningModel(model) {
		return "max_completion_tokens"
	}
	return "max_tokens"
}

// limit is the row of a field that gives the answer's token limit.
func limit(field string) params.Rule {
	return params.Rule{Field: field, Action: params.Read,
		Becomes: "the answer's limit: `max_tokens`, or `max_completion_tokens` for a reasoning model"}
}

// fromChat: the agent's own format, so every field goes on as sent.
var fromChat = &params.Table{From: hippocam.FormatChat, To: hippocam.FormatChat, Rules: params.Join(
	[]params.Rule{limit("max_tokens"), limit("max_completion_tokens")},
	params.Kept("temperature", "top_p", "stop", "seed", "frequency_penalty", "presence_penalty",
		"logprobs", "top_logprobs", "logit_bias", "response_format", "parallel_tool_calls",
		"reasoning_effort", "verbosity", "service_tier", "store", "metadata", "user",
		"safety_identifier", "prompt_cache_key", "prompt_cache_retention", "modalities", "audio",
		"prediction", "web_search_options"),
)}

// fromResponses: the settings both OpenAI formats share keep their names; text.format,
// text.verbosity and reasoning.effort have chat counterparts; what only a stateful Responses
// server can do is left out, metadata included (the chat API takes it only with "store": true,
// which Hippocam never asks of the upstream).
var fromResponses = &params.Table{From: hippocam.FormatResponses, To: hippocam.FormatChat, Rules: params.Join(
	[]params.Rule{limit("max_output_tokens")},
	params.Kept("temperature", "top_p", "parallel_tool_calls", "user", "service_tier",
		"safety_identifier", "prompt_cache_key", "prompt_cache_retention"),
	[]params.Rule{
		{Field: "text", Action: params.Translate, Translate: responsesText,
			Becomes: "`format` as `response_format` (`json_schema`, `json_object`); `verbosity` as `verbosity`, for a reasoning model only"},
		{Field: "reasoning", Action: params.Translate, Translate: responsesReasoning,
			Becomes: "`effort` as `reasoning_effort`, for a reasoning model only"},
	},
	params.Dropped("metadata", "truncation", "include", "background", "conversation", "prompt", "max_tool_calls",
		"top_logprobs", "client_metadata"),
)}

// fromMessages: sampling settings both formats know go on; the stop sequences, the parallel
// tool-use switch, the user id, the service tier and the effort are renamed; Anthropic's own
// features are left out.
var fromMessages = &params.Table{From: hippocam.FormatAnthropic, To: hippocam.FormatChat, Rules: params.Join(
	[]params.Rule{limit("max_tokens")},
	params.Kept("temperature", "top_p"),
	[]params.Rule{
		{Field: "stop_sequences", Action: params.Translate, Translate: params.Rename("stop"), Becomes: "`stop`"},
		{Field: "disable_parallel_tool_use", Action: params.Translate, Translate: parallelToolCalls,
			Becomes: "`parallel_tool_calls: false` (read from `tool_choice`)"},
		{Field: "metadata", Action: params.Translate, Translate: messagesUser, Becomes: "`user_id` as `user`"},
		{Field: "service_tier", Action: params.Translate, Translate: messagesServiceTier,
			Becomes: "`service_tier`: `auto` as `auto`, `standard_only` as `default`"},
		{Field: "output_config", Action: params.Translate, Translate: messagesEffort,
			Becomes: "`effort` (`low`, `medium`, `high`) as `reasoning_effort`, for a reasoning model only"},
	},
	params.Dropped("top_k", "thinking", "context_management", "container", "mcp_servers"),
)}

// responsesText translates the Responses "text" setting.
func responsesText(v json.RawMessage, out params.Fields, c params.Call) bool {
	var text struct {
		Format    map[string]json.RawMessage `json:"format"`
		Verbosity *string                    `json:"verbosity"`
	}
	if json.Unmarshal(v, &text) != nil {
		return false
	}
	set := false
	if text.Verbosity != nil && ReasoningModel(c.Model) { // the other models refuse the field
		set = params.Set(out, "verbosity", *text.Verbosity)
	}
	var typ string
	json.Unmarshal(text.Format["type"], &typ)
	switch typ {
	case "json_schema":
		schema := map[string]json.RawMessage{}
		for k, v := range text.Format {
			if k != "type" {
				schema[k] = v
			}
		}
		set = params.Set(out, "response_format", map[string]any{"type": "json_schema", "json_schema": schema}) || set
	case "json_object":
		out["response_format"] = json.RawMessage(`{"type":"json_object"}`)
		set = true
	}
	return set
}

// responsesReasoning translates the Responses "reasoning" setting for a reasoning model (the
// others refuse reasoning_effort).
func responsesReasoning(v json.RawMessage, out params.Fields, c params.Call) bool {
	var r struct {
		Effort *string `json:"effort"`
	}
	if !ReasoningModel(c.Model) || json.Unmarshal(v, &r) != nil || r.Effort == nil {
		return false
	}
	return params.Set(out, "reasoning_effort", *r.Effort)
}

// parallelToolCalls turns Anthropic's disable_parallel_tool_use into parallel_tool_calls.
func parallelToolCalls(v json.RawMessage, out params.Fields, _ params.Call) bool {
	if string(v) != "true" {
		return false
	}
	out["parallel_tool_calls"] = json.RawMessage("false")
	return true
}

// messagesUser sends the user id of Anthropic's metadata as the chat "user".
func messagesUser(v json.RawMessage, out params.Fields, _ params.Call) bool {
	var md struct {
		UserID string `json:"user_id"`
	}
	if json.Unmarshal(v, &md) != nil || md.UserID == "" {
		return false
	}
	return params.Set(out, "user", md.UserID)
}

// messagesServiceTier maps Anthropic's service tiers onto the chat ones.
func messagesServiceTier(v json.RawMessage, out params.Fields, _ params.Call) bool {
	var s string
	json.Unmarshal(v, &s)
	switch s {
	case "auto":
		return params.Set(out, "service_tier", "auto")
	case "standard_only":
		return params.Set(out, "service_tier", "default")
	}
	return false
}

// messagesEffort sends Anthropic's output_config.effort as reasoning_effort, when the model is
// a reasoning model (the others refuse the field) and the level is one the chat API has.
func messagesEffort(v json.RawMessage, out params.Fields, c params.Call) bool {
	var oc struct {
		Effort string `json:"effort"`
	}
	if !ReasoningModel(c.Model) || json.Unmarshal(v, &oc) != nil {
		return false
	}
	switch oc.Effort {
	case "low", "medium", "high":
		return params.Set(out, "reasoning_effort", oc.Effort)
	}
	return false
}
