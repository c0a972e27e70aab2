package hippocam

import (
	"context"
	"encoding/json"
	"strings"
)

// CallRole names who a model call is made for. Every call carries it (the X-Hippocam-Role
// header), so that usage, cost, logs and the simulated model can tell calls apart.
type CallRole string

// The call roles.
const (
	CallAgent  CallRole = "agent"  // the main model
	CallJanus  CallRole = "janus"  // intent maintenance
	CallPrecip CallRole = "precip" // intent consolidation
	CallPalim  CallRole = "palim"  // prefix consolidation
)

// RoleHeader is the HTTP header that carries a call's CallRole.
const RoleHeader = "X-Hippocam-Role"

// Tool describes a tool the model may call: a function (Parameters is a JSON Schema object), a
// custom tool taking free text, or a tool the provider defines (tool.go says how each reaches an
// upstream).
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Kind is ToolFunction (""), ToolCustom or ToolProvider.
	Kind ToolKind `json:"kind,omitempty"`
	// Type is the type the client gave a tool that is not a plain function: "custom",
	// "web_search", "web_search_20250305", "bash_20250124"….
	Type string `json:"type,omitempty"`
	// Namespace names the group a tool was declared in (an OpenAI Responses namespace tool);
	// an upstream without namespaces sees it under FlatName(Namespace, Name).
	Namespace string `json:"namespace,omitempty"`
	// Format and Raw are the tool's declaration as the client sent it, byte for byte (for a
	// tool of a namespace, the whole namespace's), when it is not a plain function.
	Format Format          `json:"format,omitempty"`
	Raw    json.RawMessage `json:"raw,omitempty"`
}

// Request is one chat-completion call.
type Request struct {
	Role CallRole
	// Model names the provider's model; empty means the client's configured default.
	Model    string
	Messages []Message
	Tools    []Tool
	// ToolChoice is "" (the provider's default), "auto", "none", "required", or a tool name
	// the model must call.
	ToolChoice string
	// Structured, when set, asks for an answer that is one JSON object following a schema, by the
	// upstream's own means (structured.go). Such a request offers no Tools.
	Structured *Structured
	// MaxTokens is the most the answer may take (0: the adapter's default). Every upstream
	// adapter sends it in its own format's field.
	MaxTokens int
	// Extra keeps the agent's request fields Hippocam does not interpret (temperature,
	// response_format…), verbatim, as a JSON object named as in ExtraFormat; the adapter
	// translates, keeps or leaves out each of them for its own format. Only the main model's
	// calls carry any.
	Extra json.RawMessage
	// ExtraFormat is the wire format whose field names Extra uses (the agent's); empty means
	// FormatChat.
	ExtraFormat Format
	// Betas are the agent's named optional API features (Conversation.Betas), which an
	// upstream of that same format receives with the call.
	Betas []string
}

// Response is the model's answer to a Request.
type Response struct {
	Message      Message
	FinishReason string
	Usage        CallUsage
}

// Model is a chat-completion endpoint. Implementations return EUNAVAILABLE when the endpoint
// cannot be reached or keeps failing, and EINVALID when it rejects the request.
type Model interface {
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// StreamModel is a Model that can deliver its answer as it is produced (docs/architecture.md §7).
// CompleteStream is Complete, except that fn is called, in order, with each piece of the
// answer's text as it arrives (never with tool calls: the Response carries them whole). An error
// from fn ends the call and is returned. The Response is the whole answer, as Complete's.
type StreamModel interface {
	Model
	CompleteStream(ctx context.Context, req *Request, fn func(text string) error) (*Response, error)
}

// RequestCounter is implemented by a model client whose wire format frames a request otherwise
// than RequestTokens counts it (Anthropic's single system prompt): it counts req as it will be
// sent, with t. The engine uses it to tell a client what a request will cost (engine.Preview).
type RequestCounter interface {
	RequestTokens(t Tokenizer, req *Request) int
}

// Tokenizer counts tokens offline.
type Tokenizer interface {
	Count(text string) int
}

// JSONObject finds the JSON object in a model's text answer: the whole text when it is one
// (a memory may quote code between ``` fences inside its strings), else what a ``` fence holds
// (a leading "json" tag dropped), else the span from the first '{' to the last '}' of the text.
// A candidate that is not valid JSON gives way to the next; when none is, the last one is
// returned, so that the decoder's error names what is wrong. Every structured call of the engine
// and of the learning layer reads its answer through it.
func JSONObject(text string) (string, bool) {
	s := strings.TrimSpace(text)
	if strings.HasPrefix(s, "{") && json.Valid([]byte(s)) {
		return s, true
	}
	var fallback string
	if i := strings.Index(s, "```"); i >= 0 {
		rest := strings.TrimPrefix(s[i+3:], "json")
		if j := strings.Index(rest, "```"); j >= 0 {
			if obj, ok := braces(strings.TrimSpace(rest[:j])); ok {
				if json.Valid([]byte(obj)) {
					return obj, true
				}
				fallback = obj
			}
		}
	}
	if obj, ok := braces(s); ok && (fallback == "" || json.Valid([]byte(obj))) {
		return obj, true
	}
	return fallback, fallback != ""
}

// braces is s from its first '{' to its last '}'.
func braces(s string) (string, bool) {
	i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
	if i < 0 || j < i {
		return "", false
	}
	return s[i : j+1], true
}
