// Package httpapi serves Hippocam over HTTP: an OpenAI-compatible chat-completions endpoint that
// gives any agent Hippocam's memory (a transparent proxy in front of the agent's own model), a
// JSON REST API over sessions and their message trees, the web viewer, Prometheus metrics and a
// health check.
//
// Sessions. A request names its session with the Hippocam-Session header; without it, the
// OpenAI `user` field names it; without that, the session is "auto-" followed by a hash of the
// history's opening up to its first user message, so one conversation keeps one session. The agent resends its whole
// history on every call: the proxy checks that the history extends what the session has seen
// (hippocam.Transcript), takes what is new and runs one engine step. A client that retries a
// request whose answer it never received gets the same answer again, with no new step. A
// history that does not extend the session is a fork: the session is left as it is, and the
// conversation continues in the newest fork NAME~2, NAME~3… that it extends, or in a new fork
// that starts from the whole history. A session or fork is stored only with its first committed
// step, so a failed request leaves nothing behind. The session actually used is returned in the
// Hippocam-Session response header.
//
// Tenants. With keys (Config.Keys), every endpoint but /healthz needs Authorization: Bearer KEY,
// and sessions live per tenant: the same session name in two tenants names two sessions.
package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// Upstream is what the proxy passes through to the agent's model besides chat completions.
type Upstream interface {
	ListModels(ctx context.Context) ([]byte, error)
}

// Config configures a Server.
type Config struct {
	Engine   *engine.Engine
	Store    hippocam.Store
	Upstream Upstream
	// Keys maps API keys to tenants. Empty: no authentication, one tenant ("").
	Keys map[string]string
	// Viewer serves the web viewer at "/" (optional).
	Viewer http.Handler
	// MaxBodyBytes bounds request bodies (default 32 MiB).
	MaxBodyBytes int64
	Logger       *slog.Logger
	// Metrics receives the server's measurements (optional).
	Metrics *Metrics
}

// DefaultMaxBodyBytes bounds request bodies when Config.MaxBodyBytes is zero.
const DefaultMaxBodyBytes = 32 << 20

// Server is the HTTP front of Hippocam. It is safe for concurrent use: requests of one session
// are serialized, different sessions run in parallel.
type Server struct {
	cfg   Config
	log   *slog.Logger
	locks sessionLocks
	cache *sessionCache
	mux   *http.ServeMux
}

// New returns a server. EINVALID when the engine or the store is missing.
func New(cfg Config) (*Server, error) {
	if cfg.Engine == nil || cfg.Store == nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "httpapi: an engine and a store are required")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, locks: sessionLocks{m: map[string]*sessionLock{}}, cache: newSessionCache(defaultCacheMessages), mux: http.NewServeMux()}
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	s.handle("POST /v1/chat/completions", "chat", s.chatCompletions)
	s.handle("GET /v1/models", "models", s.models)
	s.handle("GET /api/sessions", "sessions", s.listSessions)
	s.handle("GET /api/sessions/{id}", "session", s.getSession)
	s.handle("DELETE /api/sessions/{id}", "delete", s.deleteSession)
	s.handle("GET /api/sessions/{id}/nodes/{ref}", "node", s.getNode)
	s.handle("GET /api/sessions/{id}/expand", "expand", s.expand)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	})
	if m := s.cfg.Metrics; m != nil {
		s.handle("GET /metrics", "metrics", func(w http.ResponseWriter, r *http.Request, tenant string) {
			m.handler.ServeHTTP(w, r)
		})
	}
	if v := s.cfg.Viewer; v != nil {
		s.mux.Handle("GET /", v)
	}
}

// handle registers an authenticated, measured route.
func (s *Server) handle(pattern, route string, h func(http.ResponseWriter, *http.Request, string)) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if m := s.cfg.Metrics; m != nil {
				m.observeRequest(route, rec.status, time.Since(began))
			}
		}()
		tenant, ok := s.authenticate(r)
		if !ok {
			writeError(rec, hippocam.Errorf(hippocam.EUNAUTHORIZED, "a valid API key is required: send Authorization: Bearer KEY"))
			return
		}
		h(rec, r, tenant)
	})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// authenticate returns the request's tenant. Without configured keys every request is the one
// tenant "".
func (s *Server) authenticate(r *http.Request) (string, bool) {
	if len(s.cfg.Keys) == 0 {
		return "", true
	}
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(prefix) || h[:len(prefix)] != prefix {
		return "", false
	}
	given := []byte(h[len(prefix):])
	tenant, found := "", false
	for key, t := range s.cfg.Keys { // compare with every key, in constant time each
		if subtle.ConstantTimeCompare([]byte(key), given) == 1 {
			tenant, found = t, true
		}
	}
	return tenant, found
}

// statusRecorder remembers the status written, for metrics and logs.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// sessionLocks serializes the requests of one session name (and its forks) within a tenant.
type sessionLocks struct {
	mu sync.Mutex
	m  map[string]*sessionLock
}

type sessionLock struct {
	mu   sync.Mutex
	refs int
}

func (l *sessionLocks) lock(key string) func() {
	l.mu.Lock()
	sl := l.m[key]
	if sl == nil {
		sl = &sessionLock{}
		l.m[key] = sl
	}
	sl.refs++
	l.mu.Unlock()
	sl.mu.Lock()
	return func() {
		sl.mu.Unlock()
		l.mu.Lock()
		if sl.refs--; sl.refs == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}

// writeJSON writes v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// upstreamStatus is implemented by model-client errors that carry the provider's HTTP status.
type upstreamStatus interface {
	UpstreamStatus() (int, time.Duration)
}

// writeError maps err once to an HTTP status and OpenAI's error JSON. Internal details never
// reach the client.
func writeError(w http.ResponseWriter, err error) {
	status, typ, code, msg := http.StatusInternalServerError, "server_error", "", hippocam.ErrorMessage(err)
	var up upstreamStatus
	if errors.As(err, &up) {
		st, wait := up.UpstreamStatus()
		switch {
		case st == http.StatusTooManyRequests:
			status, typ, code = st, "rate_limit_error", "rate_limit_exceeded"
		case st >= 500:
			status, typ, code = http.StatusBadGateway, "upstream_error", "upstream_unavailable"
		case st == http.StatusUnauthorized || st == http.StatusForbidden:
			// The operator's upstream credentials were refused: say so without the provider's
			// text, which may quote the key.
			status, typ, code = http.StatusBadGateway, "upstream_error", "upstream_auth_failed"
			msg = "the upstream model refused Hippocam's credentials; the operator must check the upstream API key"
		default:
			status, typ = st, "invalid_request_error"
		}
		if wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		}
	} else {
		switch hippocam.ErrorCode(err) {
		case hippocam.EINVALID:
			status, typ = http.StatusBadRequest, "invalid_request_error"
		case hippocam.ECAPACITY:
			status, typ, code = http.StatusBadRequest, "invalid_request_error", "context_length_exceeded"
		case hippocam.ENOTFOUND:
			status, typ, code = http.StatusNotFound, "invalid_request_error", "not_found"
		case hippocam.ECONFLICT:
			status, typ, code = http.StatusConflict, "invalid_request_error", "conflict"
		case hippocam.EUNAUTHORIZED:
			status, typ, code = http.StatusUnauthorized, "authentication_error", "invalid_api_key"
		case hippocam.EFORBIDDEN:
			status, typ, code = http.StatusForbidden, "permission_error", "forbidden"
		case hippocam.EUNAVAILABLE:
			status, typ, code = http.StatusBadGateway, "upstream_error", "upstream_unavailable"
		}
	}
	body := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		body["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": body})
}
