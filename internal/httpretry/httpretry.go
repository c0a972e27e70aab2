// Package httpretry is the attempt machinery that Hippocam's model clients (packages openai and
// anthropic) have in common: a Policy of retries with capped exponential backoff and jitter, an
// Attempt bounded by one timeout until the answer starts and by an idle timeout after, the
// Transient mark for failures that may pass, the reading of a server's Retry-After hints, and Do, the loop that
// repeats an attempt while its failure may pass. Send, ReadBody and ReadEvents carry out one
// attempt's HTTP exchange and read its answer within that attempt.
//
// It knows no provider's wire format. Each client builds its own requests, keeps its own error
// type for answers refused by status (see Refusal) and reads its own 2xx answers; this package
// imports only the root package and the standard library.
package httpretry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hippocam/hippocam"
)

// The keys under which Do logs a retry.
const (
	logOp      = "op"
	logRole    = "role"
	logAttempt = "attempt"
	logStatus  = "status"
	logWait    = "wait"
	logError   = "error"
)

// Policy says how patiently Do repeats a request.
type Policy struct {
	// MaxRetries is how many times a failed attempt may be repeated; zero means a single
	// attempt.
	MaxRetries int
	// MinBackoff is the wait before the first retry; it doubles for each later one.
	MinBackoff time.Duration
	// MaxBackoff caps every wait, one the server asked for included.
	MaxBackoff time.Duration
	// Timeout bounds an attempt until its first progress (see Attempt.Touch): for an answer
	// read whole, the whole exchange; for a stream, the wait for the headers and the first line.
	Timeout time.Duration
	// IdleTimeout bounds every pause after that: a stream may run as long as it keeps making
	// progress. Zero means Timeout.
	IdleTimeout time.Duration
}

// Backoff returns the wait after failed attempt n (counted from 1). A positive retryAfter, the
// wait the server asked for, is used as it is; otherwise the wait is MinBackoff doubled for
// every attempt after the first, with jitter. Either way it is at most MaxBackoff.
func (p Policy) Backoff(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, p.MaxBackoff)
	}
	d := p.MinBackoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.MaxBackoff)
	// Only the upper half is random: the wait still grows, while clients that failed at the
	// same moment do not all come back at the same moment.
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// Retryable reports whether an answer with this HTTP status is worth asking for again: 408,
// 409, 429 and every 5xx (Anthropic's 529 among them).
func Retryable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	}
	return status >= 500 && status <= 599
}

// Code returns the error code for an answer with this HTTP status: EUNAUTHORIZED for 401,
// EFORBIDDEN for 403, EUNAVAILABLE for a Retryable status and for anything that is not a 4xx,
// and EINVALID for the other 4xx.
func Code(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return hippocam.EUNAUTHORIZED
	case status == http.StatusForbidden:
		return hippocam.EFORBIDDEN
	case Retryable(status):
		return hippocam.EUNAVAILABLE
	case status >= 400 && status < 500:
		return hippocam.EINVALID
	}
	return hippocam.EUNAVAILABLE
}

// Refused returns the *hippocam.Error for an answer with this status, after this many
// attempts: its code is Code(status), its message "model endpoint answered STATUS TEXT",
// followed by the number of attempts when there were several and by detail, the provider's
// own message, when there is one. text is the reason phrase to print after the status.
func Refused(status int, text string, attempts int, detail string) *hippocam.Error {
	msg := fmt.Sprintf("model endpoint answered %d %s", status, text)
	if attempts > 1 {
		msg += fmt.Sprintf(" after %d attempts", attempts)
	}
	if detail != "" {
		msg += ": " + detail
	}
	return &hippocam.Error{Code: Code(status), Message: msg}
}

// RetryAfter returns the wait a server asked for in h, measured from now: Retry-After-Ms in
// milliseconds when it is present and positive, else Retry-After in seconds (fractions
// allowed) or as an HTTP date. It is zero when neither header is present, readable and in the
// future.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Transient wraps the error of an attempt that failed in a way that may pass, such as a network
// error, a timeout or a body that broke off: Do repeats such an attempt while Policy.MaxRetries
// allows. Any other error from an attempt ends Do at once.
type Transient struct {
	// Err is the failure itself.
	Err error
}

// Error returns the text of Err.
func (t Transient) Error() string { return t.Err.Error() }

// Unwrap returns Err.
func (t Transient) Unwrap() error { return t.Err }

// Refusal is what Do needs of a client's error type for an answer with a status other than
// 2xx: the status and the wait the server asked for, as UpstreamStatus gives them.
type Refusal interface {
	error
	UpstreamStatus() (status int, retryAfter time.Duration)
}

// timeoutError is an attempt's failure that its timeout caused: its text is the failure's, and
// errors.Is finds hippocam.ErrTimeout in it as well as what the failure wraps.
type timeoutError struct{ err error }

func (e timeoutError) Error() string   { return e.err.Error() }
func (e timeoutError) Unwrap() []error { return []error{e.err, hippocam.ErrTimeout} }

// errAttemptTimeout is the cause an attempt's context gets when its timeout passes.
var errAttemptTimeout = errors.New("attempt timed out")

// Attempt is one try of a request. Its context ends with the parent context given to Do, when
// Policy.Timeout passes before the first call of Touch, or when Policy.IdleTimeout passes
// between two calls.
type Attempt struct {
	ctx   context.Context
	timer *time.Timer
	idle  time.Duration
	n     int

	mu    sync.Mutex
	limit time.Duration // the limit now running: Timeout, then IdleTimeout
}

// Context returns the context that the attempt's request must be made with.
func (a *Attempt) Context() context.Context { return a.ctx }

// Number returns which attempt this is, counted from 1.
func (a *Attempt) Number() int { return a.n }

// Touch records progress, such as a line of a stream: from now on the idle timeout runs.
func (a *Attempt) Touch() {
	a.mu.Lock()
	a.limit = a.idle
	a.mu.Unlock()
	a.timer.Reset(a.idle)
}

// Explain returns err with a note in front that the attempt made no progress within its
// timeout, and hippocam.ErrTimeout in its chain, when that is why the attempt's context ended;
// otherwise err unchanged.
func (a *Attempt) Explain(err error) error {
	if context.Cause(a.ctx) == errAttemptTimeout {
		a.mu.Lock()
		limit := a.limit
		a.mu.Unlock()
		return timeoutError{fmt.Errorf("no progress within %v: %w", limit, err)}
	}
	return err
}

// Do calls try, once per attempt, until it succeeds, fails for good, the retries of p are spent
// or ctx ends. R is the client's refusal type, as a pointer such as *StatusError; an error that
// holds one (found with errors.As) is repeated only when its status is Retryable, and the last
// one is returned itself. Errors that hold a Transient are repeated too; when the retries run
// out they become EUNAVAILABLE ("model endpoint unreachable"), with the failure in the chain.
// Every other error is returned as try gave it. When ctx ends the error is EUNAVAILABLE ("OP
// cancelled") with ctx.Err() in the chain.
//
// Each retry is logged at warning level with op, role, the attempt number, the status (0 when
// there was none), the wait and the error; the wait follows p.Backoff, with the server's
// retry-after for a refusal.
func Do[R Refusal](ctx context.Context, p Policy, log *slog.Logger, op, role string, try func(a *Attempt) error) error {
	for n := 1; ; n++ {
		err := p.attempt(ctx, n, try)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return cancelled(ctx, op)
		}
		var ref R
		var tr Transient
		var status int
		var retryAfter time.Duration
		switch {
		case errors.As(err, &ref):
			status, retryAfter = ref.UpstreamStatus()
			if !Retryable(status) || n > p.MaxRetries {
				return ref
			}
		case errors.As(err, &tr):
			if n > p.MaxRetries {
				msg := "model endpoint unreachable"
				if n > 1 {
					msg += fmt.Sprintf(" after %d attempts", n)
				}
				return fmt.Errorf("%w: %w", &hippocam.Error{Code: hippocam.EUNAVAILABLE, Message: msg}, tr.Err)
			}
		default:
			return err
		}
		wait := p.Backoff(n, retryAfter)
		log.Warn("model request failed, retrying", logOp, op, logRole, role,
			logAttempt, n, logStatus, status, logWait, wait, logError, err)
		if sleep(ctx, wait) != nil {
			return cancelled(ctx, op)
		}
	}
}

// attempt runs try as attempt n, under its own timeout.
func (p Policy) attempt(ctx context.Context, n int, try func(a *Attempt) error) error {
	actx, cancel := context.WithCancelCause(ctx)
	a := &Attempt{ctx: actx, idle: p.IdleTimeout, limit: p.Timeout, n: n}
	if a.idle <= 0 {
		a.idle = p.Timeout
	}
	a.timer = time.AfterFunc(p.Timeout, func() { cancel(errAttemptTimeout) })
	defer func() {
		a.timer.Stop()
		cancel(nil)
	}()
	return try(a)
}

// sleep waits d, or less when ctx ends first; then it returns ctx.Err().
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

// cancelled is Do's error when ctx ends: EUNAVAILABLE, with ctx.Err() in the chain as well.
func cancelled(ctx context.Context, op string) error {
	return fmt.Errorf("%w: %w", hippocam.Errorf(hippocam.EUNAVAILABLE, "%s cancelled", op), ctx.Err())
}
