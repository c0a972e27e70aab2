package anthropic

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/httpretry"
)

// Log keys.
const (
	logTool   = "tool"
	logField  = "field"
	logFormat = "format"
	logPart   = "part"
)

// Client is a hippocam.Model backed by an Anthropic Messages endpoint. It is safe for
// concurrent use.
type Client struct {
	cfg   Config
	url   string // the messages endpoint
	http  *http.Client
	log   *slog.Logger
	retry httpretry.Policy
}

var _ hippocam.Model = (*Client)(nil)

// New returns a Client for cfg, with defaults for its zero fields (MaxRetries is taken as it
// is). It does no I/O. EINVALID when cfg fails Validate.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	base := strings.TrimRight(cfg.BaseURL, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return &Client{
		cfg: cfg, url: base + "/messages", http: cfg.HTTPClient, log: cfg.Logger,
		retry: httpretry.Policy{MaxRetries: cfg.MaxRetries, MinBackoff: cfg.MinBackoff,
			MaxBackoff: cfg.MaxBackoff, Timeout: cfg.Timeout, IdleTimeout: cfg.IdleTimeout},
	}, nil
}

// Complete sends req as one non-streamed Messages request (see the package's request mapping
// in encode.go) and returns the answer as a raw assistant message: text blocks joined, tool_use
// blocks as tool calls with the exact bytes of their input, thinking and other blocks as Parts
// with their bytes; the finish reason in the chat vocabulary ("stop", "tool_calls", "length")
// and the usage with Input the whole prompt. Errors: EINVALID when the request cannot be
// encoded or the endpoint rejects it (EUNAUTHORIZED and EFORBIDDEN for 401 and 403),
// EUNAVAILABLE when the endpoint cannot be reached, keeps failing (429, 5xx, 529), or answers
// with something unreadable or over 32 MiB. A refusal by status is a *StatusError. When ctx
// ends the error is EUNAVAILABLE and errors.Is matches ctx.Err().
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
		op: "messages", body: body, role: roleOf(req), betas: req.Betas, accept: "application/json",
		read: func(resp *http.Response, _ *httpretry.Attempt) (err error) {
			raw, err = readBody(resp.Body)
			return err
		},
	})
	if err != nil {
		return nil, c.structuredError(req, err)
	}
	resp, err := decodeResponse(raw)
	if err == nil {
		hippocam.RestoreCalls(req.Tools, hippocam.FormatAnthropic, &resp.Message)
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
	return hippocam.RememberedRefusal(c.url, c.modelOf(req), req)
}

// structuredError turns the upstream's refusal of a structured request's forced tool into a
// remembered *hippocam.StructuredRefusal (hippocam.RefusalOf); other errors pass as they are.
func (c *Client) structuredError(req *hippocam.Request, err error) error {
	return hippocam.RefusalOf(c.url, c.modelOf(req), req, err, c.log)
}

// roleOf returns the call role of req, CallAgent when it names none.
func roleOf(req *hippocam.Request) hippocam.CallRole {
	if req == nil || req.Role == "" {
		return hippocam.CallAgent
	}
	return req.Role
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
	body   []byte
	role   hippocam.CallRole
	betas  []string // sent as the anthropic-beta header
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
	req, err := http.NewRequestWithContext(a.Context(), http.MethodPost, c.url, bytes.NewReader(x.body))
	if err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "anthropic: %s: %v", x.op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", x.accept)
	req.Header.Set("Anthropic-Version", Version)
	if c.cfg.APIKey != "" {
		req.Header.Set("X-Api-Key", c.cfg.APIKey)
	}
	if x.role != "" {
		req.Header.Set(hippocam.RoleHeader, string(x.role))
	}
	if len(x.betas) > 0 {
		req.Header.Set(BetaHeader, strings.Join(x.betas, ","))
	}
	return httpretry.Send(a, c.http, req, maxResponseBytes,
		func(resp *http.Response, b []byte) error { return newStatusError(resp, b, a.Number(), time.Now()) },
		func(resp *http.Response) error { return x.read(resp, a) })
}
