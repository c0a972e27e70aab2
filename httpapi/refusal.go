package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/openai/wire"
)

// Refusals. Every failure of a request is classified once into a cause (what went wrong, the
// label metrics count it under), and each inbound format tells that cause with its provider's
// status, error type, code and wording, so that the fallbacks clients build on the provider's
// errors work through Hippocam too: a context that cannot fit is OpenAI's
// context_length_exceeded ("This model's maximum context length is …") in the chat format, the
// same code with the Responses wording there, and Anthropic's "prompt is too long: N tokens > M
// maximum" (on which Claude Code compacts) in the Messages format; an overloaded upstream is
// Anthropic's 529 overloaded_error, or OpenAI's 503 server_is_overloaded.
//
// This file words every refusal as OpenAI does; each format's inboundFormat (format.go) words
// a context too long itself (tooLong), maps the rest to its provider's terms (tell) and writes
// its error JSON (writeRefusal).

// The causes of a failed request, as metrics count them (hippocam_failures_total{kind}).
const (
	causeInvalid     = "invalid"      // the request breaks a rule (400)
	causeTooLarge    = "too_large"    // the request's body is over the bound (413)
	causeMethod      = "method"       // a known path with another method (405)
	causeNotFound    = "not_found"    // no such route, session or response (404)
	causeCapacity    = "capacity"     // the context cannot fit, even after consolidating (400)
	causeConflict    = "conflict"     // the session changed underneath (409)
	causeAuth        = "unauthorized" // no valid key for Hippocam (401)
	causeForbidden   = "forbidden"    // (403)
	causeTimeout     = "timeout"      // an attempt at the upstream ran out of time (504)
	causeStreamCut   = "stream_cut"   // the upstream's stream ended before its end (502)
	causeUnreachable = "unreachable"  // the upstream could not be reached (502)
	causeInternal    = "internal"     // Hippocam's own failure (500)
	// An upstream's refusal by status counts as "upstream_" + its status: upstream_429,
	// upstream_529, upstream_500, upstream_400…; an error event within its stream as
	// upstream_overloaded, upstream_rate_limited or upstream_error_event.
	causeUpstream = "upstream_"
)

// refusal is a failure as one inbound format tells it.
type refusal struct {
	status  int
	typ     string // the format's error type
	code    string // OpenAI's error code; "" is null (Anthropic has none)
	param   string // OpenAI's param; "" is null
	message string
	cause   string // what metrics count it as
	// retryAfter is the wait the upstream asked for, passed on as Retry-After.
	retryAfter time.Duration
	// overloadStatus says the upstream told it was overloaded by its status (529 or 503), not
	// by an event in its stream (Anthropic's API then says just "Overloaded").
	overloadStatus bool
}

// upstreamStatus is implemented by model-client errors that carry the provider's HTTP status.
type upstreamStatus interface {
	UpstreamStatus() (int, time.Duration)
}

// upstreamError is implemented by model-client errors that carry the provider's own error.
type upstreamError interface {
	UpstreamError() (typ, code, message string)
}

// refuse tells err in format f. Internal details never reach the client; the upstream's own
// message does when the upstream refused the request for what it holds (a 4xx but 401 and 403,
// which concern the operator's key).
func refuse(f hippocam.Format, err error) refusal {
	in := inboundOf(f)
	return in.tell(classify(in, err))
}

// classify words err as OpenAI does; only a context that cannot fit is worded by in already.
func classify(in inboundFormat, err error) refusal {
	var up upstreamStatus
	var ue upstreamError
	var ce *hippocam.CapacityError
	switch {
	case errors.As(err, &up):
		return refuseUpstream(in, err, up)
	case errors.As(err, &ue):
		return refuseStreamEvent(err, ue)
	case errors.As(err, &ce):
		return refuseCapacity(in, ce.Needed, ce.Window, "")
	case errors.Is(err, hippocam.ErrTimeout):
		return unavailable(http.StatusGatewayTimeout, causeTimeout, "timeout", hippocam.ErrorMessage(err))
	case errors.Is(err, hippocam.ErrStreamCut):
		return unavailable(http.StatusBadGateway, causeStreamCut, "upstream_unavailable", hippocam.ErrorMessage(err))
	}
	msg := hippocam.ErrorMessage(err)
	r := refusal{status: http.StatusInternalServerError, typ: "server_error", message: msg, cause: causeInternal}
	switch ec := hippocam.ErrorCode(err); {
	case ec == hippocam.EINVALID && errors.Is(err, errTooLarge):
		r = refusal{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", message: msg, cause: causeTooLarge}
	case ec == hippocam.EINVALID && errors.As(err, new(methodError)):
		r = refusal{status: http.StatusMethodNotAllowed, typ: "invalid_request_error", message: msg, cause: causeMethod}
	case ec == hippocam.EINVALID:
		r = refusal{status: http.StatusBadRequest, typ: "invalid_request_error", message: msg, cause: causeInvalid}
	case ec == hippocam.ECAPACITY:
		return refuseCapacity(in, 0, 0, msg)
	case ec == hippocam.ENOTFOUND:
		r = refusal{status: http.StatusNotFound, typ: "invalid_request_error", code: "not_found", message: msg, cause: causeNotFound}
	case ec == hippocam.ECONFLICT:
		r = refusal{status: http.StatusConflict, typ: "invalid_request_error", code: "conflict", message: msg, cause: causeConflict}
	case ec == hippocam.EUNAUTHORIZED:
		r = refusal{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key", message: msg, cause: causeAuth}
	case ec == hippocam.EFORBIDDEN:
		r = refusal{status: http.StatusForbidden, typ: "permission_error", code: "forbidden", message: msg, cause: causeForbidden}
	case ec == hippocam.EUNAVAILABLE:
		return unavailable(http.StatusBadGateway, causeUnreachable, "upstream_unavailable", msg)
	}
	return r
}

// unavailable is a failure to get an answer from the upstream: a 502 or 504, OpenAI's
// server_error.
func unavailable(status int, cause, code, msg string) refusal {
	return refusal{status: status, typ: "server_error", code: code, message: msg, cause: cause}
}

// refuseUpstream tells an upstream's refusal by status.
func refuseUpstream(in inboundFormat, err error, up upstreamStatus) refusal {
	st, wait := up.UpstreamStatus()
	var upCode, upMsg string
	if ue, ok := up.(upstreamError); ok {
		_, upCode, upMsg = ue.UpstreamError()
	}
	r := refusal{status: st, cause: causeUpstream + strconv.Itoa(st), message: hippocam.ErrorMessage(err), retryAfter: wait}
	switch {
	case st == http.StatusTooManyRequests:
		r.typ, r.code = "rate_limit_error", "rate_limit_exceeded"
		if upMsg != "" {
			r.message = upMsg // Codex reads its "try again in Ns"
		}
	case st == 529 || st == http.StatusServiceUnavailable:
		// Overloaded: Anthropic's own status, OpenAI's 503 with the code Codex looks for.
		r.status, r.typ, r.code = http.StatusServiceUnavailable, "server_error", "server_is_overloaded"
		r.overloadStatus = true
	case st >= 500:
		r.status, r.typ, r.code = http.StatusBadGateway, "server_error", "upstream_unavailable"
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		// The operator's upstream credentials were refused: say so without the provider's
		// text, which may quote the key.
		r.status, r.typ, r.code = http.StatusBadGateway, "server_error", "upstream_auth_failed"
		r.message = "the upstream model refused Hippocam's credentials; the operator must check the upstream API key"
	case isContextOverflow(upCode, upMsg):
		needed, window := overflowTokens(upMsg)
		c := refuseCapacity(in, needed, window, upMsg)
		c.cause = r.cause
		return c
	default:
		r.typ = "invalid_request_error"
		if upMsg != "" {
			r.message = upMsg
		}
		r.code = upCode // an OpenAI upstream's own code; Anthropic gives none
	}
	return r
}

// refuseStreamEvent tells an error event that the upstream sent within its stream: overloaded
// and rate limits keep their meaning, anything else is an upstream failure.
func refuseStreamEvent(err error, ue upstreamError) refusal {
	typ, code, msg := ue.UpstreamError()
	switch {
	case typ == anthropic.ErrorOverloaded || code == "server_is_overloaded":
		return refusal{status: http.StatusServiceUnavailable, typ: "server_error", code: "server_is_overloaded", message: msg, cause: causeUpstream + "overloaded"}
	case typ == anthropic.ErrorRateLimit || code == "rate_limit_exceeded":
		return refusal{status: http.StatusTooManyRequests, typ: "rate_limit_error", code: "rate_limit_exceeded", message: msg, cause: causeUpstream + "rate_limited"}
	}
	return unavailable(http.StatusBadGateway, causeUpstream+"error_event", "upstream_unavailable", hippocam.ErrorMessage(err))
}

// refuseCapacity tells a request too long for the context window, in the words of in's
// provider. needed and window are the request's tokens and the window; zero when unknown, and
// detail is then said instead.
func refuseCapacity(in inboundFormat, needed, window int, detail string) refusal {
	r := refusal{status: http.StatusBadRequest, typ: "invalid_request_error", code: "context_length_exceeded", cause: causeCapacity}
	r.message, r.param = in.tooLong(needed, window, detail)
	return r
}

// isContextOverflow reports whether an upstream's refusal says the context is too long, in the
// words of OpenAI, Anthropic and the servers that imitate them.
func isContextOverflow(code, msg string) bool {
	if code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(msg)
	for _, s := range []string{"prompt is too long", "maximum context length", "context_length_exceeded", "exceeds the context window"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// The token counts in an upstream's context overflow message: Anthropic's, then OpenAI's.
var (
	anthropicOverflow = regexp.MustCompile(`prompt is too long: (\d+) tokens > (\d+) maximum`)
	openaiOverflow    = regexp.MustCompile(`maximum context length is (\d+) tokens\. However, (?:your messages resulted in|you requested) (\d+) tokens`)
)

// overflowTokens reads the request's tokens and the window from an upstream's overflow
// message; zeros when it does not say.
func overflowTokens(msg string) (needed, window int) {
	if m := anthropicOverflow.FindStringSubmatch(msg); m != nil {
		needed, _ = strconv.Atoi(m[1])
		window, _ = strconv.Atoi(m[2])
		return needed, window
	}
	if m := openaiOverflow.FindStringSubmatch(msg); m != nil {
		window, _ = strconv.Atoi(m[1])
		needed, _ = strconv.Atoi(m[2])
	}
	return needed, window
}

// write writes r as format f's error JSON, with Retry-After when the upstream asked for a wait.
func (r refusal) write(w http.ResponseWriter, f hippocam.Format) {
	if r.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((r.retryAfter+time.Second-1)/time.Second)))
	}
	inboundOf(f).writeRefusal(w, r)
}

// body is r as OpenAI's error JSON: {"error":{"message","type","param","code"}}.
func (r refusal) body() wire.ErrorResponse {
	b := wire.ErrorResponse{Error: wire.ErrorBody{Message: r.message, Type: r.typ}}
	if r.code != "" {
		b.Error.Code = &r.code
	}
	if r.param != "" {
		b.Error.Param = &r.param
	}
	return b
}

// chunk is r as the error chunk that ends a chat stream.
func (r refusal) chunk() []byte {
	b, _ := json.Marshal(r.body())
	return b
}

// writeError writes err as the default format's error JSON (the REST API's errors too).
func writeError(w http.ResponseWriter, err error) {
	refuse(defaultFormat, err).write(w, defaultFormat)
}
