package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sessions"
)

// What every inbound format shares: reading the body, the session a request names, what marks
// a transport retry, and errors in the format's own JSON.

// SessionHeader names a request's session; the response carries the session actually used.
const SessionHeader = "Hippocam-Session"

// EventHeader tells the client how its request related to the session (created, continued,
// retried, regenerated, forked).
const EventHeader = "Hippocam-Event"

// The headers the official SDKs send that mark a transport retry: the Stainless-generated
// clients (openai, @anthropic-ai/sdk, in every language) number their attempts in
// X-Stainless-Retry-Count (0 for the first); some clients send an Idempotency-Key that a retry
// repeats.
const (
	retryCountHeader     = "X-Stainless-Retry-Count"
	idempotencyKeyHeader = "Idempotency-Key"
)

// errTooLarge marks the EINVALID error of a request body over the bound (a 413).
var errTooLarge = errors.New("request body too large")

// bodyBuffers holds the buffers of chat request bodies for reuse (readChatBody): an agent of a
// long session resends a megabyte or more with every request, and reading each into fresh
// memory made a good part of the proxy's garbage. Buffers larger than maxPooledBody are left
// to the collector.
var bodyBuffers sync.Pool // of *[]byte

const maxPooledBody = 32 << 20

// poisonBodies, set by tests, overwrites a pooled body when it is released, so that anything
// that kept a piece of it shows.
var poisonBodies atomic.Bool

// readChatBody is readBody into a pooled buffer. release gives the buffer back: call it once
// the handler is done with the body and with everything read from it that shares its memory
// (a ChatReader's conversation does not; its ChatRequest's raw values do).
func (s *Server) readChatBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), err error) {
	var buf *[]byte
	if b, ok := bodyBuffers.Get().(*[]byte); ok {
		buf = b
	} else {
		buf = new([]byte)
	}
	release = func() {
		if cap(*buf) > maxPooledBody {
			return
		}
		if poisonBodies.Load() {
			full := (*buf)[:cap(*buf)]
			for i := range full {
				full[i] = 'X'
			}
		}
		*buf = (*buf)[:0]
		bodyBuffers.Put(buf)
	}
	b := bytes.NewBuffer((*buf)[:0])
	body, err = s.readInto(b, w, r)
	*buf = b.Bytes()[:0]
	if err != nil {
		release()
		return nil, func() {}, err
	}
	return body, release, nil
}

// readBody reads a request body within the configured bound. EINVALID when it is too large (with
// errTooLarge as its cause) or cannot be read.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return s.readInto(new(bytes.Buffer), w, r)
}

// readInto is readBody into buf.
func (s *Server) readInto(buf *bytes.Buffer, w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n > 0 {
		buf.Grow(int(min(n, s.cfg.MaxBodyBytes) + 1)) // one allocation for a body of known size
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	body := buf.Bytes()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &hippocam.Error{Code: hippocam.EINVALID, Message: fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit), Cause: errTooLarge}
		}
		return nil, hippocam.Errorf(hippocam.EINVALID, "reading the request body: %v", err)
	}
	return body, nil
}

// headerName returns the session named by the Hippocam-Session header, and whether the header
// was sent (a header of spaces names the empty session, which the service refuses).
func headerName(r *http.Request) (string, bool) {
	v, ok := r.Header[http.CanonicalHeaderKey(SessionHeader)]
	if !ok || len(v) == 0 {
		return "", false
	}
	return strings.TrimSpace(v[0]), true
}

// continueSession hands a read request to the session service and sets the response headers
// that say which session answered and how. With st, the answer's text streams to the client
// while the step runs (st is closed, its queue written out, before continueSession returns).
//
// The step runs detached from the client's connection: a client that goes away mid-step does
// not cancel it, so that the answer already paid for is committed and the client's transport
// retry gets it stored; it then has at most Config.DetachedStepTimeout more to finish.
func (s *Server) continueSession(w http.ResponseWriter, r *http.Request, tenant, name string, conv *hippocam.Conversation, st *answerStream) (*sessions.Result, error) {
	s.noteOmitted(w, r, tenant, name, conv)
	n, _ := strconv.Atoi(r.Header.Get(retryCountHeader))
	req := &sessions.Request{Tenant: tenant, Name: name, Conversation: conv, Retry: n > 0,
		Key: r.Header.Get(idempotencyKeyHeader), Received: time.Now()}
	learnHeaders(r, req)
	req.Client = clientOf(r, conv)
	if st != nil {
		st.position = len(conv.Messages)
		req.OnStart, req.OnText, req.OnRoute, req.OnCall = st.start, st.text, st.route, st.call
	}
	ctx, cancel := detach(r.Context(), s.cfg.DetachedStepTimeout)
	res, err := s.cfg.Sessions.Continue(ctx, req)
	cancel()
	if st != nil {
		st.close()
	}
	if err != nil {
		return nil, err
	}
	if st == nil || !st.begun() {
		w.Header().Set(SessionHeader, res.Session.ID)
		w.Header().Set(EventHeader, string(res.Event))
		if res.Learning != nil {
			w.Header().Set(ClusterHeader, res.Learning.Cluster)
		}
	}
	if m := s.cfg.Metrics; m != nil {
		m.observeResult(res)
	}
	return res, nil
}

// stream continues the session with the answer streamed to the client in format f. When the
// step fails before anything was written, the error is an ordinary error response; after, the
// stream ends with the format's error event.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, tenant, name string, conv *hippocam.Conversation, format hippocam.Format, f streamFormat) {
	st := newAnswerStream(w, f, s.cfg.Metrics)
	res, err := s.continueSession(w, r, tenant, name, conv, st)
	if err != nil {
		if rf := refuse(format, err); !st.begun() && inboundOf(format).refusesInStream(rf) {
			// The format tells this refusal inside the stream (the Responses API an input too
			// long, with response.failed), so the stream is opened to fail at once.
			s.refused(r, name, rf, err)
			if f.open(streamID{session: name, answer: positionKey(len(conv.Messages)), created: time.Now().Unix()}) == nil {
				f.fail(err)
			}
			return
		}
		if !st.begun() {
			s.fail(w, r, format, err)
			return
		}
		if st.id != nil {
			name = st.id.session
		}
		s.refused(r, name, refuse(format, err), err)
		st.abort(err)
		return
	}
	switch err := st.finish(res); {
	case errors.Is(err, errStreamMismatch):
		s.refused(r, res.Session.ID, refuse(format, err), err)
	case err != nil:
		s.log.Debug("stream cut off", logPath, r.URL.Path, logSession, res.Session.ID, logError, err)
	}
}

// fail counts, logs and writes err in the error JSON of the request's format.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, format hippocam.Format, err error) {
	ref := refuse(format, err)
	name, _ := headerName(r)
	s.refused(r, name, ref, err)
	ref.write(w, format)
}

// The keys of the log line of a refused or failed request.
const (
	logTenant  = "tenant"
	logSession = "session"
	logRoute   = "route"
	logMethod  = "method"
	logPath    = "path"
	logStatus  = "status"
	logCause   = "cause"
	logReason  = "reason"
	logError   = "error"
)

// refused counts a failed request by its cause and logs it: its tenant, session (as named, or
// "" when the service was to find it), route, status, cause and the reason the client was
// given. Hippocam's own failures are errors (with the error itself, which the client never
// sees), the upstream's warnings, the client's refusals information.
func (s *Server) refused(r *http.Request, session string, ref refusal, err error) {
	if m := s.cfg.Metrics; m != nil {
		m.failures.WithLabelValues(ref.cause).Inc()
	}
	info := requestInfoOf(r)
	level := slog.LevelInfo
	switch {
	case ref.cause == causeInternal:
		level = slog.LevelError
	case ref.status >= 500 || strings.HasPrefix(ref.cause, causeUpstream):
		level = slog.LevelWarn
	}
	attrs := []any{logTenant, info.tenant, logSession, session, logRoute, info.route, logMethod, r.Method,
		logPath, r.URL.Path, logStatus, ref.status, logCause, ref.cause, logReason, ref.message}
	if level != slog.LevelInfo {
		attrs = append(attrs, logError, err)
	}
	s.log.Log(r.Context(), level, "request refused", attrs...)
}

// requestInfo is what handle knows of a request before its handler runs.
type requestInfo struct{ route, tenant string }

type requestInfoKey struct{}

// withRequestInfo returns r carrying its route and tenant, for the log line of its failure.
func withRequestInfo(r *http.Request, route, tenant string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, requestInfo{route, tenant}))
}

// requestInfoOf returns what withRequestInfo put in r (zero values outside handle).
func requestInfoOf(r *http.Request) requestInfo {
	info, _ := r.Context().Value(requestInfoKey{}).(requestInfo)
	return info
}

// missing answers a path under /v1/ or /api/ that no route serves, in the error JSON of the
// format the path belongs to: 405 for a known path with another method, else 404; either is
// logged and counted (see fail).
func (s *Server) missing(w http.ResponseWriter, r *http.Request, tenant string) {
	format := formatOf(r.URL.Path)
	if method, ok := knownPaths[strings.TrimSuffix(r.URL.Path, "/")]; ok {
		w.Header().Set("Allow", method)
		s.fail(w, r, format, methodError{hippocam.Errorf(hippocam.EINVALID, "%s %s is not served; use %s", r.Method, r.URL.Path, method)})
		return
	}
	s.fail(w, r, format, hippocam.Errorf(hippocam.ENOTFOUND, "no route for %s %s", r.Method, r.URL.Path))
}

// methodError is an EINVALID error answered with 405.
type methodError struct{ error }

func (e methodError) Unwrap() error { return e.error }
