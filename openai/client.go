// Package openai is Hippocam's client for OpenAI-compatible chat-completions endpoints (OpenAI,
// vLLM, llama.cpp, Ollama and the simulated model). It speaks the JSON of package wire over
// net/http, marks every call with its role, and repeats attempts that failed for reasons that
// may pass.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/httpretry"
	"github.com/hippocam/hippocam/internal/params"
	"github.com/hippocam/hippocam/openai/wire"
)

// Log keys.
const (
	logField  = "field"
	logFormat = "format"
)

// Client is a hippocam.Model backed by one OpenAI-compatible endpoint. It is safe for
// concurrent use.
type Client struct {
	cfg   Config
	base  string // BaseURL without its trailing slash
	http  *http.Client
	log   *slog.Logger
	retry httpretry.Policy
	// bodies writes the request bodies, keeping recent ones to copy what the next repeats.
	bodies *wire.RequestWriter
}

var _ hippocam.Model = (*Client)(nil)

// New returns a Client for cfg, with defaults for its zero durations (MaxRetries is taken as
// it is). It does no I/O. EINVALID when cfg fails Validate.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Client{
		cfg:  cfg,
		base: strings.TrimRight(cfg.BaseURL, "/"),
		http: cfg.HTTPClient,
		log:  cfg.Logger,
		retry: httpretry.Policy{MaxRetries: cfg.MaxRetries, MinBackoff: cfg.MinBackoff,
			MaxBackoff: cfg.MaxBackoff, Timeout: cfg.Timeout, IdleTimeout: cfg.IdleTimeout},
		bodies: wire.NewRequestWriter(cfg.RequestCacheBytes),
	}, nil
}

// Complete sends req as one non-streamed chat completion and returns the first choice as a raw
// assistant message, with the finish reason and the provider's token usage (zero when it
// reports none). Errors: EINVALID when the request cannot be encoded or the endpoint rejects it
// (EUNAUTHORIZED and EFORBIDDEN for 401 and 403), EUNAVAILABLE when the endpoint cannot be
// reached, keeps failing, or answers with something unreadable or over 32 MiB. A refusal
// by status is a *StatusError. When ctx ends the error is EUNAVAILABLE and errors.Is matches
// ctx.Err().
func (c *Client) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if err := c.structuredRefused(req); err != nil {
		return nil, err
	}
	body, err := c.requestBody(req, false)
	if err != nil {
		return nil, err
	}
	var raw []byte
	err = c.do(ctx, &exchange{
		op: "chat completion", method: http.MethodPost, path: "/chat/completions",
		body: body, role: roleOf(req), accept: "application/json",
		read: func(resp *http.Response, _ *httpretry.Attempt) (err error) {
			raw, err = readBody(resp.Body)
			return err
		},
	})
	if err != nil {
		return nil, c.structuredError(req, err)
	}
	resp, err := decodeCompletion(raw)
	if err == nil {
		hippocam.RestoreCalls(req.Tools, hippocam.FormatChat, &resp.Message)
	}
	return resp, err
}

// modelOf is the model req is sent to.
func (c *Client) modelOf(req *hippocam.Request) string {
	if req != nil && req.Model != "" {
		return req.Model
	}
	return c.cfg.Model
}

// structuredRefused is the remembered refusal of a structured request to this upstream and
// model (hippocam.RememberedRefusal); nil when the request may be sent.
func (c *Client) structuredRefused(req *hippocam.Request) error {
	return hippocam.RememberedRefusal(c.base, c.modelOf(req), req)
}

// structuredError turns the upstream's refusal of a structured request's response_format into a
// remembered *hippocam.StructuredRefusal (hippocam.RefusalOf); other errors pass as they are.
func (c *Client) structuredError(req *hippocam.Request, err error) error {
	return hippocam.RefusalOf(c.base, c.modelOf(req), req, err, c.log)
}

// ListModels returns the body of GET {BaseURL}/models unchanged, for a proxy to pass through.
// Errors as for Complete.
func (c *Client) ListModels(ctx context.Context) ([]byte, error) {
	var raw []byte
	err := c.do(ctx, &exchange{
		op: "list models", method: http.MethodGet, path: "/models", accept: "application/json",
		read: func(resp *http.Response, _ *httpretry.Attempt) (err error) {
			raw, err = readBody(resp.Body)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// roleOf returns the call role of req, CallAgent when it names none.
func roleOf(req *hippocam.Request) hippocam.CallRole {
	if req == nil || req.Role == "" {
		return hippocam.CallAgent
	}
	return req.Role
}

// requestBody encodes req for the wire; stream asks for a streamed answer with a final usage
// chunk. The fields of req.Extra go through the parameter table of req.ExtraFormat (Params);
// those it leaves out are logged at debug level. MaxTokens is sent as max_tokens, or as
// max_completion_tokens to a reasoning model. Fields the client sets itself are dropped from
// Extra, so that the body never names a key twice. The messages that the client's recent
// requests also carried are copied from those requests' bodies instead of encoded again.
func (c *Client) requestBody(req *hippocam.Request, stream bool) ([]byte, error) {
	if req == nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "openai: no request")
	}
	model := c.cfg.Model
	if req.Model != "" {
		model = req.Model
	}
	req, err := c.translate(req, model)
	if err != nil {
		return nil, err
	}
	b, err := c.bodies.Body(model, req, stream)
	if err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "openai: %v", err)
	}
	return b, nil
}

// translate returns req with its Extra in the chat format's names, through the parameter table
// of its ExtraFormat, and its token limit under the name model takes. EINVALID when Extra is not
// a JSON object or comes in a format Hippocam does not read.
func (c *Client) translate(req *hippocam.Request, model string) (*hippocam.Request, error) {
	field := limitField(model)
	if len(req.Extra) == 0 && (req.MaxTokens <= 0 || field == "max_tokens") {
		return req, nil
	}
	table := Params(req.ExtraFormat)
	if table == nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "openai: request fields of the unknown format %q", req.ExtraFormat)
	}
	var extra params.Fields
	if len(req.Extra) > 0 {
		if err := json.Unmarshal(req.Extra, &extra); err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "openai: request extra fields must be a JSON object: %v", err)
		}
	}
	out, dropped := table.Apply(extra, params.Call{Model: model})
	for _, k := range dropped {
		c.log.Debug("left out a request field the chat completions API does not take from this format",
			logField, k, logFormat, string(table.From))
	}
	r := *req
	if r.MaxTokens > 0 && field != "max_tokens" {
		out[field], _ = json.Marshal(r.MaxTokens)
		r.MaxTokens = 0
	}
	r.Extra, r.ExtraFormat = nil, hippocam.FormatChat
	if len(out) > 0 {
		b, err := out.JSON()
		if err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "openai: request extra fields: %v", err)
		}
		r.Extra = b
	}
	return &r, nil
}

// decodeCompletion reads a non-streamed answer. EUNAVAILABLE when it is not a usable one.
func decodeCompletion(raw []byte) (*hippocam.Response, error) {
	var cr wire.ChatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return nil, unreadable(err.Error())
	}
	if len(cr.Choices) == 0 {
		if e, ok := cr.Extra["error"]; ok && string(e) != "null" {
			return nil, unreadable("error in a success answer: " + parseErrorBody(raw).Error.Message)
		}
		return nil, unreadable("no choices")
	}
	choice := cr.Choices[0]
	m, err := assistantMessage(choice.Message)
	if err != nil {
		return nil, err
	}
	return &hippocam.Response{Message: m, FinishReason: choice.FinishReason, Usage: usageOf(cr.Usage)}, nil
}

// assistantMessage converts the message of an answer; the role is always assistant. Fields that
// would do harm when the message is sent back in a later request are dropped first: null or
// empty values (OpenAI's "refusal": null, "annotations": []) and the model's reasoning
// ("reasoning_content", "reasoning"), which some providers refuse as input and which would
// occupy the context without being counted. Other unknown fields stay in Message.Extra.
func assistantMessage(c wire.ChatMessage) (hippocam.Message, error) {
	c.Role = string(hippocam.RoleAssistant)
	if emptyJSON(c.Content) {
		c.Content = nil
	}
	for k, v := range c.Extra {
		if k == "reasoning_content" || k == "reasoning" || emptyJSON(v) {
			delete(c.Extra, k)
		}
	}
	m, err := wire.ToMessage(c)
	if err != nil {
		return m, unreadable(hippocam.ErrorMessage(err))
	}
	return m, nil
}

// emptyJSON reports whether v is absent, null, [] or {}.
func emptyJSON(v json.RawMessage) bool {
	switch string(bytes.TrimSpace(v)) {
	case "", "null", "[]", "{}":
		return true
	}
	return false
}

// usageOf converts the provider's usage; nil gives zero usage.
func usageOf(u *wire.Usage) hippocam.CallUsage {
	if u == nil {
		return hippocam.CallUsage{}
	}
	cu := hippocam.CallUsage{Input: u.PromptTokens, Output: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		cu.CachedInput = u.PromptTokensDetails.CachedTokens
	}
	return cu
}

// unreadable is the error for an answer the client cannot use.
func unreadable(detail string) error {
	return hippocam.Errorf(hippocam.EUNAVAILABLE, "model endpoint sent an unreadable answer: %s", detail)
}

// readBody reads a whole answer of at most maxResponseBytes. A failed read is transient.
func readBody(r io.Reader) ([]byte, error) { return httpretry.ReadBody(r, maxResponseBytes) }

// exchange is one logical request, sent once per attempt.
type exchange struct {
	op     string // what the request does, for messages and logs
	method string
	path   string
	body   []byte
	role   hippocam.CallRole // "" sends no role header
	accept string
	// read consumes a 2xx answer. Errors wrapped in httpretry.Transient let the attempt be
	// repeated.
	read func(resp *http.Response, a *httpretry.Attempt) error
}

// do sends x until an attempt succeeds, the failure is permanent, the retries are spent or ctx
// ends (see httpretry.Do).
func (c *Client) do(ctx context.Context, x *exchange) error {
	return httpretry.Do[*StatusError](ctx, c.retry, c.log, x.op, string(x.role),
		func(a *httpretry.Attempt) error { return c.try(a, x) })
}

// try makes attempt a of x. Failures before a 2xx answer are *StatusError or transient.
func (c *Client) try(a *httpretry.Attempt, x *exchange) error {
	var body io.Reader
	if x.body != nil {
		body = bytes.NewReader(x.body)
	}
	req, err := http.NewRequestWithContext(a.Context(), x.method, c.base+x.path, body)
	if err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "openai: %s: %v", x.op, err)
	}
	if x.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", x.accept)
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	if x.role != "" {
		req.Header.Set(hippocam.RoleHeader, string(x.role))
	}
	return httpretry.Send(a, c.http, req, maxResponseBytes,
		func(resp *http.Response, b []byte) error { return newStatusError(resp, b, a.Number(), time.Now()) },
		func(resp *http.Response) error { return x.read(resp, a) })
}

// backoff returns the wait after failed attempt n, which se (nil for none) ended: the server's
// Retry-After when it gave one, else MinBackoff doubled per attempt with jitter; never more
// than MaxBackoff. httpretry.Do computes the same wait itself; this form of it, in terms of
// the client's own config and error, is what the package's tests check.
func (c *Client) backoff(n int, se *StatusError) time.Duration {
	var hint time.Duration
	if se != nil {
		hint = se.RetryAfter
	}
	return c.retry.Backoff(n, hint)
}
