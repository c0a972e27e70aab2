package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/httpretry"
	"github.com/hippocam/hippocam/openai/wire"
)

// StatusError is an answer of the endpoint with a status other than 2xx. It is returned after
// the last attempt, so a proxy can pass the status and the Retry-After hint on to its own
// client; find it with errors.As. Its chain also holds a *hippocam.Error whose code follows
// from Status (see Code), so hippocam.ErrorCode works on it directly.
type StatusError struct {
	// Status is the HTTP status code of the last attempt.
	Status int
	// RetryAfter is the wait the server asked for (Retry-After or retry-after-ms), uncapped;
	// zero when it asked for none.
	RetryAfter time.Duration
	// Body is the server's error, read leniently: when the body is not OpenAI's error JSON its
	// text (shortened) becomes Body.Error.Message.
	Body wire.ErrorResponse
	// Attempts is how many attempts were made, the last one included.
	Attempts int
}

// Code maps Status to an error code: EUNAUTHORIZED for 401, EFORBIDDEN for 403, EUNAVAILABLE
// for the statuses worth retrying (408, 409, 429, 5xx) and anything unexpected, and EINVALID
// for every other 4xx.
func (e *StatusError) Code() string { return httpretry.Code(e.Status) }

// Error returns the same text as the *hippocam.Error it unwraps to.
func (e *StatusError) Error() string { return e.Unwrap().Error() }

// Unwrap returns the *hippocam.Error that carries Code and a message naming the status and the
// provider's own message.
func (e *StatusError) Unwrap() error {
	return httpretry.Refused(e.Status, http.StatusText(e.Status), e.Attempts, e.Body.Error.Message)
}

// newStatusError reads the error answer resp whose body is body, which ended attempt number
// attempts.
func newStatusError(resp *http.Response, body []byte, attempts int, now time.Time) *StatusError {
	return &StatusError{
		Status:     resp.StatusCode,
		RetryAfter: retryAfter(resp.Header, now),
		Body:       parseErrorBody(body),
		Attempts:   attempts,
	}
}

// retryAfter reads the wait a server asks for: retry-after-ms, else Retry-After as seconds or
// as an HTTP date (see httpretry.RetryAfter).
func retryAfter(h http.Header, now time.Time) time.Duration { return httpretry.RetryAfter(h, now) }

// maxErrorText bounds how much of a non-JSON error body becomes the message.
const maxErrorText = 512

// parseErrorBody reads an error body in the shapes servers actually send: OpenAI's
// {"error":{"message":…}} (with code a string or, as llama.cpp sends it, a number), a flat
// {"message":…} (older vLLM), {"error":"text"} (Ollama), or plain text.
func parseErrorBody(body []byte) wire.ErrorResponse {
	var out wire.ErrorResponse
	if json.Unmarshal(body, &out) == nil && out.Error.Message != "" {
		return out
	}
	var loose struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &loose) == nil {
		var inner struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Param   *string         `json:"param"`
			Code    json.RawMessage `json:"code"`
		}
		var text string
		switch {
		case json.Unmarshal(loose.Error, &text) == nil && text != "":
			out.Error.Message = text
			return out
		case json.Unmarshal(loose.Error, &inner) == nil && inner.Message != "":
			out.Error = wire.ErrorBody{Message: inner.Message, Type: inner.Type, Param: inner.Param, Code: codeText(inner.Code)}
			return out
		case loose.Message != "":
			out.Error = wire.ErrorBody{Message: loose.Message, Type: loose.Type, Code: codeText(loose.Code)}
			return out
		}
	}
	out.Error = wire.ErrorBody{Message: shorten(string(bytes.TrimSpace(body)), maxErrorText)}
	return out
}

// codeText renders an error code that may be a JSON string or number; nil when absent.
func codeText(raw json.RawMessage) *string {
	var s string
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	return &s
}

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// UpstreamStatus returns the provider's HTTP status and the wait it asked for, so that a proxy
// can answer its own client with the same status and Retry-After without importing this package.
func (e *StatusError) UpstreamStatus() (int, time.Duration) { return e.Status, e.RetryAfter }

// UpstreamError returns the provider's own error type, code ("" when it gave none) and
// message, so that a proxy can tell its client the same condition in the client's format.
func (e *StatusError) UpstreamError() (typ, code, message string) {
	if e.Body.Error.Code != nil {
		code = *e.Body.Error.Code
	}
	return e.Body.Error.Type, code, e.Body.Error.Message
}

// StreamError is an error a stream sent after its 200 ({"error":{…}} as a data event): the
// provider's error, so that a proxy can pass the same condition on (UpstreamError). It unwraps
// to its *hippocam.Error (EUNAVAILABLE).
type StreamError struct {
	Body wire.ErrorBody
	Err  *hippocam.Error
}

// Error returns the text of Err.
func (e *StreamError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *StreamError) Unwrap() error { return e.Err }

// UpstreamError returns the event's error type, code ("" when none) and message.
func (e *StreamError) UpstreamError() (typ, code, message string) {
	if e.Body.Code != nil {
		code = *e.Body.Code
	}
	return e.Body.Type, code, e.Body.Message
}
