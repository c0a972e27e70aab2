// Package httpapi serves Hippocam over HTTP: the transparent proxy in the formats agents speak
// (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages), each a thin translation onto
// the session service (package sessions), which decides which session a request continues; a
// JSON REST API over sessions and their message trees; MCP over Streamable HTTP at /mcp (package
// mcp, per tenant); the web viewer; Prometheus metrics and a health check. This package holds only routing, authentication, translation and the mapping of
// errors to each format's error JSON.
//
// Tenants. With keys (Config.Keys), every endpoint but /healthz needs Authorization: Bearer KEY
// (or, for the Anthropic format, x-api-key: KEY), and sessions live per tenant: the same session
// name in two tenants names two sessions.
package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sessions"
)

// Upstream is what the proxy passes through to the agent's model besides chat completions.
type Upstream interface {
	ListModels(ctx context.Context) ([]byte, error)
}

// Config configures a Server.
type Config struct {
	// Version is the server's version, as /mcp reports it to MCP clients ("dev" when empty).
	Version  string
	Engine   *engine.Engine
	Store    hippocam.Store
	Sessions *sessions.Service
	Upstream Upstream
	// UpstreamFormat is the format of the upstream the engine's model speaks (FormatChat when
	// empty): it decides which tools and history items are named as left out of its requests.
	UpstreamFormat hippocam.Format
	// PassThrough sends the /v1 routes Hippocam does not serve itself to the upstream (optional:
	// without it they are 404s; see PassThrough). With it, GET /v1/models passes through too.
	PassThrough *PassThrough
	// Keys maps API keys to tenants. Empty: no authentication, one tenant ("").
	Keys map[string]string
	// Viewer serves the web viewer at "/" (optional).
	Viewer http.Handler
	// MaxBodyBytes bounds request bodies (default 32 MiB).
	MaxBodyBytes int64
	// WriteTimeout bounds every write of a response, each event of a stream included (default
	// DefaultWriteTimeout): a client that stops reading is cut off after it, while the session
	// goes on without it.
	WriteTimeout time.Duration
	// DetachedStepTimeout is how long a step may still run once its client has gone away
	// (default DefaultDetachedStepTimeout). Steps run detached from the client's connection, so
	// that an answer already paid for is committed and the client's retry finds it.
	DetachedStepTimeout time.Duration
	Logger              *slog.Logger
	// Metrics receives the server's measurements (optional).
	Metrics *Metrics
	// Recordings finds the sessions' recorded exchanges with the upstream (optional: without
	// it GET /api/sessions/{id}/recording is a 404).
	Recordings Recordings
}

// Defaults for the zero fields of Config.
const (
	DefaultMaxBodyBytes        = 32 << 20
	DefaultWriteTimeout        = 60 * time.Second
	DefaultDetachedStepTimeout = 5 * time.Minute
)

// Server is the HTTP front of Hippocam. It is safe for concurrent use: requests of one session
// are serialized, different sessions run in parallel.
type Server struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
	// chats reads chat requests, comparing a resent history with the last ones it read instead
	// of decoding it again (about 100k messages kept, at most ~40 MB).
	chats *wire.ChatReader
	// proxy passes the other /v1 routes through to the upstream (nil without Config.PassThrough).
	proxy *httputil.ReverseProxy
}

// New returns a server. EINVALID when the engine or the store is missing. Without a session
// service, it makes one over the engine and the store.
func New(cfg Config) (*Server, error) {
	if cfg.Engine == nil || cfg.Store == nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "httpapi: an engine and a store are required")
	}
	if cfg.Sessions == nil {
		// Nothing runs consolidation jobs for a service made here: it consolidates before it
		// answers. hippocam serve passes a service whose workers run them after the answer.
		svc, err := sessions.New(sessions.Config{Engine: cfg.Engine, Store: cfg.Store, Logger: cfg.Logger, Inline: true})
		if err != nil {
			return nil, err
		}
		cfg.Sessions = svc
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.DetachedStepTimeout <= 0 {
		cfg.DetachedStepTimeout = DefaultDetachedStepTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics != nil {
		cfg.Sessions.ObserveJobs(cfg.Metrics.observeJob) // jobs' model calls and consolidations
		cfg.Metrics.WatchService(cfg.Sessions)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), chats: wire.NewChatReader(100_000)}
	if cfg.PassThrough != nil {
		rp, err := newPassThrough(cfg.PassThrough, len(cfg.Keys) > 0)
		if err != nil {
			return nil, err
		}
		rp.ErrorHandler = s.proxyError
		rp.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
		s.proxy = rp
	}
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	for _, in := range inboundFormats { // format.go
		for _, rt := range in.routes() {
			s.handle(rt.pattern, rt.name, func(w http.ResponseWriter, r *http.Request, tenant string) {
				rt.handler(s, w, r, tenant)
			})
		}
	}
	other := "unknown" // what the metrics and logs call the /v1 routes Hippocam does not serve
	if s.proxy != nil {
		other = "passthrough"
	}
	for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		s.handle(method+" /v1/", other, s.passThrough) // passthrough.go: to the upstream, else a 404
		s.handle(method+" /api/", "unknown", s.missing)
	}
	s.handle("GET /v1/models", "models", s.models)
	s.handle("GET /api/sessions", "sessions", s.listSessions)
	s.handle("GET /api/sessions/{id}", "session", s.getSession)
	s.handle("DELETE /api/sessions/{id}", "delete", s.deleteSession)
	s.handle("POST /api/sessions/{id}/outcome", "outcome", s.outcome)
	s.handle("POST /api/tasks/{key}/learn", "learn", s.learnTask)
	s.handle("GET /api/sessions/{id}/nodes/{ref}", "node", s.getNode)
	s.handle("GET /api/sessions/{id}/expand", "expand", s.expand)
	s.handle("GET /api/sessions/{id}/recording", "recording", s.getRecording) // recording.go
	s.handle("GET /api/clusters", "clusters", s.listClusters)
	s.handle("GET /api/clusters/{id}", "cluster", s.getCluster)
	s.handle("DELETE /api/clusters/{id}", "cluster_delete", s.deleteCluster)
	s.handle("GET /api/lessons", "lessons", s.listLessons)
	s.handle("GET /api/lessons/export", "lessons_export", s.exportLessons)
	s.handle("POST /api/lessons/import", "lessons_import", s.importLessons)
	s.handle("DELETE /api/lessons/{id}", "lesson_delete", s.deleteLesson)
	s.handle("GET /api/jobs", "jobs", s.listJobs)
	mcpRoute := s.mcpRoute() // MCP over Streamable HTTP (mcp.go)
	for _, method := range []string{"GET", "POST", "DELETE"} {
		s.handle(method+" /mcp", "mcp", mcpRoute)
	}
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
		r = withRequestInfo(r, route, tenant)
		if !ok {
			rec.Header().Set("WWW-Authenticate", `Bearer realm="hippocam"`)
			s.fail(rec, r, formatOf(r.URL.Path), hippocam.Errorf(hippocam.EUNAUTHORIZED, "a valid API key is required: %s", keyHint()))
			return
		}
		h(rec, r, tenant)
	})
}

// ServeHTTP implements http.Handler. Every write of the response gets Config.WriteTimeout to
// complete.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: s.cfg.WriteTimeout, ok: true}
	defer dw.extend() // the server's own last flush, after the handler, is bounded too
	s.mux.ServeHTTP(dw, r)
}

// deadlineWriter sets the connection's write deadline before every write and flush, so that a
// client that stops reading fails the write after timeout instead of blocking it forever. Each
// write moves the deadline, so a long stream that keeps being read is never cut.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	ok      bool // the connection takes deadlines (a test recorder does not)
}

func (d *deadlineWriter) extend() {
	if d.ok && d.rc.SetWriteDeadline(time.Now().Add(d.timeout)) != nil {
		d.ok = false
	}
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	d.extend()
	return d.ResponseWriter.Write(b)
}

func (d *deadlineWriter) Flush() {
	d.extend()
	_ = d.rc.Flush() // a failed flush fails the next write
}

// Unwrap gives http.ResponseController the writer beneath.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// authenticate returns the request's tenant. Without configured keys every request is the one
// tenant "".
func (s *Server) authenticate(r *http.Request) (string, bool) {
	if len(s.cfg.Keys) == 0 {
		return "", true
	}
	key, ok := clientKey(r) // Authorization: Bearer, or a format's own header (format.go)
	if !ok {
		return "", false
	}
	given := []byte(key)
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

// Unwrap gives http.ResponseController the writer beneath.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// writeJSON writes v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
