package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
)

// statusOverloaded is Anthropic's status for an endpoint that is overloaded.
const statusOverloaded = 529

// StatusError is an answer of the endpoint with a status other than 2xx, returned after the
// last attempt, so that a proxy can pass the status and the retry-after hint on to its own
// client (UpstreamStatus); find it with errors.As. Its chain also holds a *hippocam.Error whose
// code follows from Status (see Code), so hippocam.ErrorCode works on it directly.
type StatusError struct {
	// Status is the HTTP status code of the last attempt.
	Status int
	// RetryAfter is the wait the server asked for (retry-after-ms or retry-after), uncapped;
	// zero when it asked for none.
	RetryAfter time.Duration
	// Body is the server's error, read leniently: when the body is not Anthropic's error JSON
	// its text (shortened) becomes Body.Error.Message.
	Body ErrorResponse
	// RequestID is the request-id header of the answer, when the server sent one.
	RequestID string
	// Attempts is how many attempts were made, the last one included.
	Attempts int
}

// Code maps Status to an error code: EUNAUTHORIZED for 401, EFORBIDDEN for 403, EUNAVAILABLE
// for the statuses worth retrying (408, 409, 429, 5xx, 529) and anything unexpected, and
// EINVALID for every other 4xx.
func (e *StatusError) Code() string {
	switch {
	case e.Status == http.StatusUnauthorized:
		return hippocam.EUNAUTHORIZED
	case e.Status == http.StatusForbidden:
		return hippocam.EFORBIDDEN
	case retryableStatus(e.Status):
		return hippocam.EUNAVAILABLE
	case e.Status >= 400 && e.Status < 500:
		return hippocam.EINVALID
	}
	return hippocam.EUNAVAILABLE
}

// Error returns the same text as the *hippocam.Error it unwraps to.
func (e *StatusError) Error() string { return e.Unwrap().Error() }

// Unwrap returns the *hippocam.Error that carries Code and a message naming the status and the
// provider's own message.
func (e *StatusError) Unwrap() error {
	text := http.StatusText(e.Status)
	if e.Status == statusOverloaded {
		text = "Overloaded"
	}
	msg := fmt.Sprintf("model endpoint answered %d %s", e.Status, text)
	if e.Attempts > 1 {
		msg += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	if m := e.Body.Error.Message; m != "" {
		msg += ": " + m
	}
	return &hippocam.Error{Code: e.Code(), Message: msg}
}

// UpstreamStatus returns the provider's HTTP status and the wait it asked for, so that a proxy
// can answer its own client with the same status and Retry-After without importing this package.
func (e *StatusError) UpstreamStatus() (int, time.Duration) { return e.Status, e.RetryAfter }

// retryableStatus reports whether an attempt that got status may succeed when repeated.
func retryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	}
	return status >= 500 && status <= 599
}

// newStatusError reads the error answer resp whose body is body.
func newStatusError(resp *http.Response, body []byte, now time.Time) *StatusError {
	return &StatusError{
		Status:     resp.StatusCode,
		RetryAfter: retryAfter(resp.Header, now),
		Body:       parseErrorBody(body),
		RequestID:  resp.Header.Get("Request-Id"),
	}
}

// retryAfter reads the wait a server asks for: retry-after-ms, else retry-after as seconds or
// as an HTTP date. Zero when absent, unreadable or in the past.
func retryAfter(h http.Header, now time.Time) time.Duration {
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

// maxErrorText bounds how much of a non-JSON error body becomes the message.
const maxErrorText = 512

// parseErrorBody reads an error body: Anthropic's {"type":"error","error":{"type","message"}},
// the {"error":{"message"}} or {"error":"text"} of OpenAI-style gateways in front of it, a flat
// {"message"}, or plain text.
func parseErrorBody(body []byte) ErrorResponse {
	out := ErrorResponse{Type: errorType}
	var loose struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
	}
	if json.Unmarshal(body, &loose) == nil {
		var inner ErrorBody
		var text string
		switch {
		case json.Unmarshal(loose.Error, &inner) == nil && inner.Message != "":
			out.Error = inner
			return out
		case json.Unmarshal(loose.Error, &text) == nil && text != "":
			out.Error.Message = text
			return out
		case loose.Message != "":
			out.Error.Message = loose.Message
			return out
		}
	}
	out.Error.Message = shorten(string(bytes.TrimSpace(body)), maxErrorText)
	return out
}
