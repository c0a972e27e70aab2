package hippocam

// Per-message and per-request framing, as OpenAI documents for its chat format: every message
// costs a few tokens beyond its text, and every reply is primed with a few more.
const (
	messageOverhead  = 4
	toolCallOverhead = 3
	requestOverhead  = 3
	toolOverhead     = 8
)

// MessageTokens counts m as part of a request: its text, its tool calls and the framing.
func MessageTokens(t Tokenizer, m *Message) int {
	n := messageOverhead + t.Count(m.Content)
	for _, c := range m.ToolCalls {
		n += toolCallOverhead + t.Count(c.Name) + t.Count(c.Arguments)
	}
	return n
}

// ToolTokens counts the schema of one tool as part of a request.
func ToolTokens(t Tokenizer, tool *Tool) int {
	return toolOverhead + t.Count(tool.Name) + t.Count(tool.Description) + t.Count(string(tool.Parameters))
}

// RequestTokens counts a whole request: messages (using each message's Tokens when set), tool
// schemas and framing. The engine and the simulated model count with this same function.
func RequestTokens(t Tokenizer, msgs []Message, tools []Tool) int {
	n := requestOverhead
	for i := range msgs {
		if msgs[i].Tokens > 0 {
			n += msgs[i].Tokens
		} else {
			n += MessageTokens(t, &msgs[i])
		}
	}
	for i := range tools {
		n += ToolTokens(t, &tools[i])
	}
	return n
}

// RequestSize is what one main-model request carried, in tokens, part by part: the parts add up
// to Total, which is RequestTokens of the request as sent.
type RequestSize struct {
	// Framing is the agent's own system and developer messages; System is Hippocam's system
	// message (its memory instructions), with the few tokens that prime every request.
	Framing int `json:"framing"`
	System  int `json:"system"`
	// Tools is the schemas of the agent's tools; RecallTools those of Hippocam's recall and
	// search, when the request offered them.
	Tools       int `json:"tools"`
	RecallTools int `json:"recall_tools"`
	// Memory is what Hippocam put in the context: consolidated memories, guidance, advisories
	// and the model's own recall exchanges. Messages is the agent's messages kept whole.
	Memory   int `json:"memory"`
	Messages int `json:"messages"`
	Total    int `json:"total"`
	// Reported is the input tokens the provider reported for that call, and ReportedCached the
	// part it served from its prompt cache; both 0 when it reported none.
	Reported       int `json:"reported,omitempty"`
	ReportedCached int `json:"reported_cached,omitempty"`
}
