package anthropic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
)

// Log keys.
const (
	logOp      = "op"
	logRole    = "role"
	logAttempt = "attempt"
	logStatus  = "status"
	logWait    = "wait"
	logError   = "error"
	logTool    = "tool"
	logField   = "field"
	logPart    = "part"
)

// Client is a hippocam.Model backed by an Anthropic Messages endpoint. It is safe for
// concurrent use.
type Client struct {
	cfg  Config
	url  string // the messages endpoint
	http *http.Client
	log  *slog.Logger
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
	return &Client{cfg: cfg, url: base + "/messages", http: cfg.HTTPClient, log: cfg.Logger}, nil
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
	body, err := c.requestBody(req, false)
	if err != nil {
		return nil, err
	}
	var raw []byte
	err = c.do(ctx, &exchange{
		op: "messages", body: body, role: roleOf(req), accept: "application/json",
		read: func(resp *http.Response, _ *attempt) (err error) {
			raw, err = readBody(resp.Body)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	return decodeResponse(raw)
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
func readBody(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxResponseBytes+1))
	if err != nil {
		return nil, transient{err}
	}
	if len(b) > maxResponseBytes {
		return nil, hippocam.Errorf(hippocam.EUNAVAILABLE, "model endpoint sent an answer over %d MiB", maxResponseBytes>>20)
	}
	return b, nil
}

// exchange is one logical request, sent once per attempt.
type exchange struct {
	op     string // what the request does, for messages and logs
	body   []byte
	role   hippocam.CallRole
	accept string
	// read consumes a 2xx answer. Errors wrapped in transient let the attempt be repeated.
	read func(resp *http.Response, a *attempt) error
}

// transient marks an error after which the attempt may be repeated.
type transient struct{ err error }

func (t transient) Error() string { return t.err.Error() }
func (t transient) Unwrap() error { return t.err }

// errAttemptTimeout is the cause with which an attempt's context ends when Timeout passes.
var errAttemptTimeout = errors.New("attempt timed out")

// attempt is the state of one try: its context ends when the parent's does, or when the
// timeout passes without touch being called.
type attempt struct {
	ctx     context.Context
	timer   *time.Timer
	timeout time.Duration
}

// touch restarts the attempt's timeout.
func (a *attempt) touch() { a.timer.Reset(a.timeout) }

// explain adds to err that the attempt timed out, if it did.
func (a *attempt) explain(err error) error {
	if context.Cause(a.ctx) == errAttemptTimeout {
		return fmt.Errorf("no progress within %v: %w", a.timeout, err)
	}
	return err
}

// do sends x until an attempt succeeds, the failure is permanent, the retries are spent or ctx
// ends.
func (c *Client) do(ctx context.Context, x *exchange) error {
	for n := 1; ; n++ {
		err := c.try(ctx, x)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return cancelled(ctx, x.op)
		}
		var se *StatusError
		var tr transient
		switch {
		case errors.As(err, &se):
			se.Attempts = n
			if !retryableStatus(se.Status) || n > c.cfg.MaxRetries {
				return se
			}
		case errors.As(err, &tr):
			if n > c.cfg.MaxRetries {
				msg := "model endpoint unreachable"
				if n > 1 {
					msg += fmt.Sprintf(" after %d attempts", n)
				}
				return fmt.Errorf("%w: %w", &hippocam.Error{Code: hippocam.EUNAVAILABLE, Message: msg}, tr.err)
			}
		default:
			return err
		}
		wait := c.backoff(n, se)
		c.log.Warn("model request failed, retrying", logOp, x.op, logRole, string(x.role),
			logAttempt, n, logStatus, statusOf(se), logWait, wait, logError, err)
		if sleep(ctx, wait) != nil {
			return cancelled(ctx, x.op)
		}
	}
}

// try makes one attempt. Failures before a 2xx answer are *StatusError or transient.
func (c *Client) try(ctx context.Context, x *exchange) error {
	actx, cancel := context.WithCancelCause(ctx)
	a := &attempt{ctx: actx, timeout: c.cfg.Timeout}
	a.timer = time.AfterFunc(a.timeout, func() { cancel(errAttemptTimeout) })
	defer func() {
		a.timer.Stop()
		cancel(nil)
	}()

	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.url, bytes.NewReader(x.body))
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
	resp, err := c.http.Do(req)
	if err != nil {
		return transient{a.explain(err)}
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		return newStatusError(resp, b, time.Now())
	}
	if err := x.read(resp, a); err != nil {
		var tr transient
		if errors.As(err, &tr) {
			return transient{a.explain(tr.err)}
		}
		return err
	}
	return nil
}

// backoff returns the wait after failed attempt n: the server's retry-after when it gave one,
// else MinBackoff doubled per attempt with jitter; never more than MaxBackoff.
func (c *Client) backoff(n int, se *StatusError) time.Duration {
	if se != nil && se.RetryAfter > 0 {
		return min(se.RetryAfter, c.cfg.MaxBackoff)
	}
	d := c.cfg.MinBackoff
	for i := 1; i < n && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	// Half fixed, half random, so that clients failing together spread out.
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// statusOf returns se's status, 0 for nil.
func statusOf(se *StatusError) int {
	if se == nil {
		return 0
	}
	return se.Status
}

// sleep waits d or until ctx ends, returning ctx's error in that case.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// cancelled is the error for a request whose ctx ended: EUNAVAILABLE, and ctx.Err() in the
// chain.
func cancelled(ctx context.Context, op string) error {
	return fmt.Errorf("%w: %w", hippocam.Errorf(hippocam.EUNAVAILABLE, "%s cancelled", op), ctx.Err())
}
