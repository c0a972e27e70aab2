// Package sim is Hippocam's simulated model: a deterministic, scripted stand-in for an
// OpenAI-compatible chat-completions endpoint (docs/sim.md). It answers the main model and the
// engine's components (JANUS, PRECIP, PALIM) by simple rules over directive and fact lines in the
// messages, counts tokens with the engine's tokenizer and simulates a provider's prompt cache.
// It measures the mechanism (what is kept, what is recalled, tokens and cache), not how well a
// real model reasons.
//
// The same sequence of requests always gives the same responses, byte for byte: there is no
// randomness, ids are derived from the request, and the clock only paces an answer when a
// Latency is set (latency.go), never changing what it says.
package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
)

// ModelID is the model the simulation lists at GET /v1/models and names in its answers when a
// request does not name one.
const ModelID = "hippocam-sim"

// Model is the simulated model. It is safe for concurrent use. Its prompt cache is shared by
// every caller, so cached tokens depend on the order in which requests arrive.
type Model struct {
	tok   hippocam.Tokenizer
	cache *promptCache

	mu      sync.Mutex
	usage   hippocam.Usage
	latency Latency
	// refuseStructured makes the model refuse structured requests (SetRefuseStructured);
	// refused counts the refusals.
	refuseStructured bool
	refused          int
}

// New returns a simulated model that counts tokens with tok, the tokenizer the engine uses. If
// tok can also encode text into token ids (as tokenizer.BPE can), the prompt cache matches
// prefixes token by token; otherwise message by message. New does no I/O. A model made with a
// nil tokenizer fails every request with EINVALID.
func New(tok hippocam.Tokenizer) *Model {
	m := &Model{tok: tok, usage: hippocam.Usage{}}
	if tok != nil {
		m.cache = newPromptCache(tok)
	}
	return m
}

// Complete answers one chat request made for role ("" means agent). It returns EINVALID for an
// unknown role, a request without messages, messages it cannot read, and a component request
// (janus, precip, palim) that does not end with its instruction as a user message.
func (m *Model) Complete(role hippocam.CallRole, req *wire.ChatRequest) (*wire.ChatResponse, error) {
	if req == nil || len(req.Messages) == 0 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "messages: at least one message is required")
	}
	msgs, tools, err := wire.ToRequest(req)
	if err != nil {
		return nil, err
	}
	digest, err := requestDigest(role, req)
	if err != nil {
		return nil, err
	}
	shape, err := chatShape(req)
	if err != nil {
		return nil, err
	}
	rep, err := m.AnswerShaped(role, msgs, tools, shape, digest, RequestSeed(req.Extra))
	if err != nil {
		return nil, err
	}
	return response(req.Model, rep), nil
}

// Reply is the simulation's answer to one request, whatever its wire format: the assistant
// message (tool calls with their ids), the finish reason ("stop" or "tool_calls") and the usage.
type Reply struct {
	Message      hippocam.Message
	FinishReason string
	Usage        hippocam.CallUsage
	// Digest identifies the request (hex); answer and call ids derive from it.
	Digest string
}

// Answer answers one request given as domain messages (system messages first, as any format's
// framing becomes), for role ("" means agent); noTools is a tool choice of "none". Every wire
// format the simulation serves goes through it, so the same content gets the same answer and
// the same usage whatever its format. digest identifies the request (a hex string of at least 24
// digits, e.g. a SHA-256 of its body without its stream options). Errors as Complete.
func (m *Model) Answer(role hippocam.CallRole, msgs []hippocam.Message, tools []hippocam.Tool, noTools bool, digest string) (*Reply, error) {
	return m.AnswerSeed(role, msgs, tools, noTools, digest, 0)
}

// AnswerSeed is Answer for a request that carries a seed (RequestSeed): the simulated agent's
// undecided choices depend on it (docs/sim.md, part 2).
func (m *Model) AnswerSeed(role hippocam.CallRole, msgs []hippocam.Message, tools []hippocam.Tool, noTools bool, digest string, seed int64) (*Reply, error) {
	return m.AnswerShaped(role, msgs, tools, Shape{NoTools: noTools}, digest, seed)
}

// AnswerShaped is AnswerSeed for a request whose shape says more about the form of the answer
// than whether tools may be called: a response_format json_schema, or a forced tool (Shape).
// With SetRefuseStructured, a request that asks for either is refused (EINVALID, a 400 over
// HTTP, naming response_format or tool_choice).
func (m *Model) AnswerShaped(role hippocam.CallRole, msgs []hippocam.Message, tools []hippocam.Tool, shape Shape, digest string, seed int64) (*Reply, error) {
	role, err := callRole(string(role))
	if err != nil {
		return nil, err
	}
	if m.tok == nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "the simulated model has no tokenizer")
	}
	if len(msgs) == 0 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "messages: at least one message is required")
	}
	if err := m.refuses(shape); err != nil {
		return nil, err
	}
	r := newRequest(msgs, tools)
	r.noTools = shape.NoTools
	r.format, r.forced = shape.Format, shape.Forced
	var a answer
	switch role {
	case hippocam.CallJanus:
		a, err = janus(r)
	case hippocam.CallPrecip:
		a, err = precip(r)
	case hippocam.CallPalim:
		a, err = palim(r)
	case hippocam.CallJudge:
		a, err = judge(r)
	case hippocam.CallInductor:
		a, err = inductor(r)
	case hippocam.CallLessons:
		a, err = lessonsConsolidator(r)
	case hippocam.CallRBJudge:
		a, err = rbJudge(r)
	case hippocam.CallRBExtract:
		a, err = rbExtract(r)
	case hippocam.CallRouter:
		a, err = router(r)
	case hippocam.CallAdapter:
		a, err = adapter(r)
	case hippocam.CallExtractor:
		a, err = extractor(r)
	default:
		a, err = m.agent(r, seed)
	}
	if err != nil {
		return nil, err
	}
	// A response_format's schema is part of the prompt, counted and cached like a tool (where a
	// provider puts it is not documented; a forced tool's schema goes first, with the tools).
	counted := tools
	if shape.Format != nil {
		counted = append(tools[:len(tools):len(tools)], hippocam.Tool{Name: shape.Format.Name, Description: shape.Format.Description, Parameters: shape.Format.Schema})
	}
	prompt := hippocam.RequestTokens(m.tok, msgs, counted)
	usage := hippocam.CallUsage{
		Input:       prompt,
		CachedInput: m.cache.serve(msgs, counted, prompt),
		Output:      m.answerTokens(&a),
	}
	m.mu.Lock()
	m.usage.Add(role, usage, hippocam.DefaultPrices)
	m.mu.Unlock()
	rep := &Reply{Message: hippocam.Message{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, Content: a.content}, FinishReason: "stop", Usage: usage, Digest: digest}
	for i, c := range a.calls {
		rep.Message.ToolCalls = append(rep.Message.ToolCalls, hippocam.ToolCall{ID: fmt.Sprintf("call_%s_%d", digest[:12], i), Name: c.Name, Arguments: c.Arguments})
		rep.FinishReason = "tool_calls"
	}
	// A call named as a namespaced tool's flat name, or of a custom tool, takes the form the
	// request declared the tool in (its namespace; the custom tool's text input).
	hippocam.RestoreCalls(tools, hippocam.FormatChat, &rep.Message)
	return rep, nil
}

// Digest returns the digest of a request body for Answer: a SHA-256 over the role and the body.
// Callers leave out what must not change the answer's ids (whether it is streamed).
func Digest(role hippocam.CallRole, body []byte) string {
	h := sha256.New()
	h.Write([]byte(role))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Usage returns what the simulation has served so far, by call role, priced with
// hippocam.DefaultPrices.
func (m *Model) Usage() hippocam.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage.Clone()
}

// answerTokens counts an answer: its text and the names and arguments of its calls.
func (m *Model) answerTokens(a *answer) int {
	n := m.tok.Count(a.content)
	for _, c := range a.calls {
		n += m.tok.Count(c.Name) + m.tok.Count(c.Arguments)
	}
	return n
}

// callRole reads a role name; "" is the main model. EINVALID for a role the simulation does not
// play.
func callRole(s string) (hippocam.CallRole, error) {
	switch r := hippocam.CallRole(s); r {
	case "":
		return hippocam.CallAgent, nil
	case hippocam.CallAgent, hippocam.CallJanus, hippocam.CallPrecip, hippocam.CallPalim:
		return r, nil
	case hippocam.CallRouter:
		return r, nil
	case hippocam.CallJudge, hippocam.CallInductor, hippocam.CallLessons:
		return r, nil
	case hippocam.CallRBJudge, hippocam.CallRBExtract:
		return r, nil
	case hippocam.CallAdapter, hippocam.CallExtractor:
		return r, nil
	}
	return "", hippocam.Errorf(hippocam.EINVALID, "unknown call role %q; the simulation plays agent, janus, precip, palim, router, judge, inductor, lessons, rb_judge, rb_extract, adapter and extractor", s)
}

// requestDigest identifies a request for the ids of its answer. Whether the answer is streamed
// does not change it, so a streamed answer carries the same ids as the plain one.
func requestDigest(role hippocam.CallRole, req *wire.ChatRequest) (string, error) {
	c := *req
	c.Stream, c.StreamOptions = false, nil
	b, err := json.Marshal(c)
	if err != nil {
		return "", hippocam.Errorf(hippocam.EINVALID, "request: %v", err)
	}
	return Digest(role, b), nil
}

// response renders a reply as a non-streamed completion.
func response(model string, rep *Reply) *wire.ChatResponse {
	if model == "" {
		model = ModelID
	}
	msg := wire.ChatMessage{Role: string(hippocam.RoleAssistant), Content: json.RawMessage("null")}
	if rep.Message.Content != "" || len(rep.Message.ToolCalls) == 0 {
		msg.Content = wire.StringContent(rep.Message.Content)
	}
	msg.ToolCalls = wire.FromMessage(&rep.Message).ToolCalls // custom calls in their own form
	u := rep.Usage
	return &wire.ChatResponse{
		ID:      "chatcmpl-" + rep.Digest[:24],
		Object:  "chat.completion",
		Model:   model,
		Choices: []wire.Choice{{Index: 0, Message: wire.AnswerMessage(msg), FinishReason: rep.FinishReason}},
		Usage: &wire.Usage{
			PromptTokens:            u.Input,
			CompletionTokens:        u.Output,
			TotalTokens:             u.Input + u.Output,
			PromptTokensDetails:     &wire.PromptTokensDetails{CachedTokens: u.CachedInput},
			CompletionTokensDetails: &wire.CompletionTokensDetails{},
		},
	}
}
