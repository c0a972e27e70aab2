package anthropic

import (
	"encoding/json"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/params"
)

// The parameter tables of the Anthropic upstream: for each inbound format, what becomes of each
// request field on its way to a Messages endpoint (docs/formats.md, "Across formats"). The
// fields the readers interpret (model, messages or input, system or instructions, tools,
// tool_choice, stream) are written by the encoder from the domain request; the answer's token
// limit is among them, listed here because every format names it differently.

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

// limit is the row of a field that gives the answer's token limit.
func limit(field string) params.Rule {
	return params.Rule{Field: field, Action: params.Read, Becomes: "`max_tokens` (the adapter's default when none is given)"}
}

// The translations the OpenAI formats share.
var (
	temperature = params.Rule{Field: "temperature", Action: params.Translate, Translate: capTemperature,
		Becomes: "`temperature`, capped at 1"}
	parallel = params.Rule{Field: "parallel_tool_calls", Action: params.Translate, Translate: parallelToolUse,
		Becomes: "`false` as `tool_choice.disable_parallel_tool_use`"}
	topP = params.Rule{Field: "top_p", Action: params.Translate, Translate: topPAlone,
		Becomes: "`top_p`, unless `temperature` is set too (recent Claude models take one of the two)"}
	user = params.Rule{Field: "user", Action: params.Translate, Translate: userID,
		Becomes: "`metadata.user_id`"}
	serviceTier = params.Rule{Field: "service_tier", Action: params.Translate, Translate: openaiServiceTier,
		Becomes: "`service_tier`: `auto` as `auto`, `default` as `standard_only`"}
)

// fromMessages: the agent's own format, so every field goes on as sent.
var fromMessages = &params.Table{From: hippocam.FormatAnthropic, To: hippocam.FormatAnthropic, Rules: params.Join(
	[]params.Rule{limit("max_tokens")},
	params.Kept("temperature", "top_p", "top_k", "stop_sequences", "metadata", "thinking",
		"service_tier", "context_management", "output_config", "container", "mcp_servers"),
	[]params.Rule{{Field: disableParallel, Action: params.Translate, Translate: params.Rename(disableParallel),
		Becomes: "`tool_choice.disable_parallel_tool_use`, where it came from"}},
)}

// fromChat: sampling settings and stop sequences are translated; what only OpenAI's models do
// is left out.
var fromChat = &params.Table{From: hippocam.FormatChat, To: hippocam.FormatAnthropic, Rules: params.Join(
	[]params.Rule{limit("max_tokens"), limit("max_completion_tokens")},
	[]params.Rule{temperature, topP},
	[]params.Rule{
		{Field: "stop", Action: params.Translate, Translate: stopSequencesOf, Becomes: "`stop_sequences`"},
		parallel, user, serviceTier,
	},
	params.Dropped("seed", "frequency_penalty", "presence_penalty", "logprobs", "top_logprobs",
		"logit_bias", "response_format", "reasoning_effort", "verbosity", "store", "metadata",
		"safety_identifier", "prompt_cache_key", "prompt_cache_retention", "modalities", "audio",
		"prediction", "web_search_options"),
)}

// fromResponses: as from chat; the stateful features of a Responses server are left out.
var fromResponses = &params.Table{From: hippocam.FormatResponses, To: hippocam.FormatAnthropic, Rules: params.Join(
	[]params.Rule{limit("max_output_tokens")},
	[]params.Rule{temperature, topP},
	[]params.Rule{parallel, user, serviceTier},
	params.Dropped("metadata", "text", "reasoning", "truncation", "include", "background",
		"conversation", "prompt", "max_tool_calls", "top_logprobs", "client_metadata",
		"safety_identifier", "prompt_cache_key", "prompt_cache_retention"),
)}

// capTemperature sends a temperature within the format's range of 0 to 1.
func capTemperature(v json.RawMessage, out params.Fields, _ params.Call) bool {
	var t float64
	if json.Unmarshal(v, &t) != nil {
		return false
	}
	return params.Set(out, "temperature", min(max(t, 0), 1))
}

// topPAlone sends top_p when the request has no temperature: recent Claude models refuse the two
// together, and an OpenAI client often sends both. Apply takes the fields in name order, so
// temperature has been translated already.
func topPAlone(v json.RawMessage, out params.Fields, _ params.Call) bool {
	if _, ok := out["temperature"]; ok {
		return false
	}
	var p float64
	if json.Unmarshal(v, &p) != nil {
		return false
	}
	out["top_p"] = v
	return true
}

// parallelToolUse turns "parallel_tool_calls": false into disable_parallel_tool_use.
func parallelToolUse(v json.RawMessage, out params.Fields, _ params.Call) bool {
	if string(v) != "false" {
		return false
	}
	out[disableParallel] = json.RawMessage("true")
	return true
}

// userID sends the OpenAI "user" as metadata.user_id.
func userID(v json.RawMessage, out params.Fields, _ params.Call) bool {
	var id string
	if json.Unmarshal(v, &id) != nil || id == "" {
		return false
	}
	return params.Set(out, "metadata", map[string]string{"user_id": id})
}

// openaiServiceTier maps the OpenAI service tiers that have an Anthropic counterpart.
func openaiServiceTier(v json.RawMessage, out params.Fields, _ params.Call) bool {
	var s string
	json.Unmarshal(v, &s)
	switch s {
	case "auto":
		return params.Set(out, "service_tier", "auto")
	case "default":
		return params.Set(out, "service_tier", "standard_only")
	}
	return false
}

// stopSequencesOf reads a chat "stop" value, a string or an array of strings, as stop_sequences.
func stopSequencesOf(v json.RawMessage, out params.Fields, _ params.Call) bool {
	seqs := stopSequences(v)
	if len(seqs) == 0 {
		return false
	}
	return params.Set(out, "stop_sequences", seqs)
}
