package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/httpretry"
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
func (e *StatusError) Code() string { return httpretry.Code(e.Status) }

// Error returns the same text as the *hippocam.Error it unwraps to.
func (e *StatusError) Error() string { return e.Unwrap().Error() }

// Unwrap returns the *hippocam.Error that carries Code and a message naming the status and the
// provider's own message.
func (e *StatusError) Unwrap() error {
	text := http.StatusText(e.Status)
	if e.Status == statusOverloaded {
		text = "Overloaded"
	}
	return httpretry.Refused(e.Status, text, e.Attempts, e.Body.Error.Message)
}

// UpstreamStatus returns the provider's HTTP status and the wait it asked for, so that a proxy
// can answer its own client with the same status and Retry-After without importing this package.
func (e *StatusError) UpstreamStatus() (int, time.Duration) { return e.Status, e.RetryAfter }

// newStatusError reads the error answer resp whose body is body, which ended attempt number
// attempts.
func newStatusError(resp *http.Response, body []byte, attempts int, now time.Time) *StatusError {
	return &StatusError{
		Status:     resp.StatusCode,
		RetryAfter: httpretry.RetryAfter(resp.Header, now),
		Body:       parseErrorBody(body),
		Attempts:   attempts,
		RequestID:  resp.Header.Get("Request-Id"),
	}
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

// UpstreamError returns the provider's own error type, code (Anthropic gives none) and
// message, so that a proxy can tell its client the same condition in the client's format.
func (e *StatusError) UpstreamError() (typ, code, message string) {
	return e.Body.Error.Type, "", e.Body.Error.Message
}

// StreamError is an error event that a stream sent after its 200, such as overloaded_error:
// the provider's error type and message, so that a proxy can pass the same condition on
// (UpstreamError). It unwraps to its *hippocam.Error (EUNAVAILABLE).
type StreamError struct {
	Body ErrorBody
	Err  *hippocam.Error
}

// Error returns the text of Err.
func (e *StreamError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *StreamError) Unwrap() error { return e.Err }

// UpstreamError returns the event's error type and message (Anthropic gives no code).
func (e *StreamError) UpstreamError() (typ, code, message string) {
	return e.Body.Type, "", e.Body.Message
}
