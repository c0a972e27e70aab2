// Package mcp serves Hippocam over the Model Context Protocol, for agents that cannot send their
// model calls through the proxy but can call MCP tools: desktop assistants, IDE agents, hosted
// agents. It is a thin transport (docs/architecture.md §9): every tool and resource is one call
// of the services the REST API uses (the store, and the session service with its learning
// methods and its views of messages), translated to MCP; nothing here decides anything about
// sessions, memory or learning. It needs no HTTP server: hippocam mcp serves it over stdio with
// a store and a session service alone. docs/mcp.md tells users what it offers.
//
// Tools (JSON-schema inputs; each answers with a structured result and the same in text):
//
//   - list_sessions: the tenant's sessions, latest first.
//   - search_memory {session, query}: the full-text archive search the engine offers its model
//     (hippocam.Store.Search), each hit with the ref that opens it.
//   - recall_memory {session, ref}: one layer of a session's message tree (the messages beneath
//     a ref), or one message, in parts of bounded size with a handle to the rest (recall.go).
//   - get_advisory {task}: the cluster and advisory a task with that text would get at its
//     start (sessions.Service.Advise), with no model call for the agent.
//   - report_outcome {session, feedback, success?, reward?}: a task's end
//     (sessions.Service.ReportOutcome), whose cluster update is queued or, with
//     Config.WaitForUpdates, run before the answer.
//   - search_lessons {query}: the lessons in force in the tenant's lessons clusters
//     (sessions.Service.Lessons), with their conditions, evidence and provenance.
//
// Resources: hippocam://lessons.md (the lessons file, sessions.Service.LessonsFile, as GET
// /api/lessons/export serves it) and hippocam://sessions/{id}/expand (a session's expansion,
// sessions.Service.Expansion, the same bytes as GET /api/sessions/{id}/expand serves), a template whose instances, one per session of the tenant, are listed too. The
// template's id completes to the tenant's session ids (completion/complete: complete.go).
//
// Subscriptions (notify.go). A client may subscribe to any resource (resources/subscribe, or a
// subscriptions/listen stream in the stateless protocol) and is told when it changes; every
// client of a tenant is told when the list of resources changes (a session created or deleted).
// What changed is told by the session service (sessions.Service.ObserveChanges), so a server
// hears of the changes its own process commits; Watch reads the store for other processes'.
// Over stateless HTTP, a GET stream carries every notification of its tenant (stream.go).
//
// Tenants. An MCP server belongs to one tenant (Server.For): every call reads and writes that
// tenant's sessions and clusters only. A session of another tenant and one that does not exist
// give the same error, word for word. Over stdio the tenant is the command's; over Streamable
// HTTP the transport runs stateless, so that every HTTP request is authenticated by the caller
// (package httpapi: the API key names the tenant) and served by that tenant's server, whatever
// MCP session id it carries.
//
// Errors. A failed service call is an MCP tool error (isError, with "CODE: message" as its text,
// CODE one of the project's error codes) or, for a resource, a JSON-RPC error; the mapping is in
// one place (errors.go). Unknown tools (a protocol error) and arguments that break a tool's
// schema (a tool error, "invalid: …") are refused by the SDK before any service is called. A
// failed call changes nothing.
package mcp

import (
	"context"
	"log/slog"
	"sync"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sessions"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Lesson is one lesson with the cluster that keeps it, as GET /api/lessons lists it.
type Lesson = sessions.Lesson

// Config configures a Server.
type Config struct {
	Store    hippocam.Store
	Sessions *sessions.Service
	Logger   *slog.Logger
	// Version is the server's version, as MCP clients are told it.
	Version string
	// WaitForUpdates makes report_outcome run the cluster update before it answers. Without
	// it the update is left to the job the outcome queues, which the workers of hippocam
	// serve run; hippocam mcp, which runs none, sets it.
	WaitForUpdates bool
	// RecallMessages and RecallBytes bound one recall_memory result: the messages it lists and
	// the bytes of text it shows (DefaultRecallMessages, DefaultRecallBytes when 0).
	RecallMessages int
	RecallBytes    int
}

// Server makes the MCP servers of the tenants. It is safe for concurrent use.
type Server struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	tenants map[string]*tenantServer
	notes   notifier
	streams streams // the GET streams of /mcp
	ending  ending  // ends them, and listens, at the HTTP server's shutdown
	stop    func()  // stops observing the session service
}

// New returns a server. EINVALID when the store or the session service is missing.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Sessions == nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "mcp: a store and a session service are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RecallMessages <= 0 {
		cfg.RecallMessages = DefaultRecallMessages
	}
	if cfg.RecallBytes <= 0 {
		cfg.RecallBytes = DefaultRecallBytes
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, log: cfg.Logger, tenants: map[string]*tenantServer{}}
	s.stop = cfg.Sessions.ObserveChanges(s.changed)
	return s, nil
}

// Close stops the server's change notifications: it no longer observes the session service.
// Connections already served go on; it does not end them.
func (s *Server) Close() { s.stop() }

// For returns the MCP server of one tenant: its tools and resources read and write only that
// tenant's sessions and clusters. The same tenant always gets the same server.
func (s *Server) For(tenant string) *sdk.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tenants[tenant]; ok {
		return t.srv
	}
	t := &tenantServer{Server: s, tenant: tenant}
	t.srv = sdk.NewServer(&sdk.Implementation{Name: "hippocam", Title: "Hippocam", Version: s.cfg.Version}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       s.log,
		// No logging capability: the server sends no log messages to the client. The SDK adds
		// resources (listChanged, subscribe) and completions from what is set here.
		Capabilities: &sdk.ServerCapabilities{},
		// Lists and resources are the tenant's own: no shared cache may keep them.
		SetCacheable:       func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) { c.CacheScope = "private" },
		CompletionHandler:  t.complete,
		SubscribeHandler:   t.subscribe,
		UnsubscribeHandler: t.unsubscribe,
	})
	t.srv.AddReceivingMiddleware(argumentErrors)
	t.addTools(t.srv)
	t.addResources(t.srv)
	s.tenants[tenant] = t
	return t.srv
}

// server returns the tenant's server if For made it, nil otherwise.
func (s *Server) server(tenant string) *tenantServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tenants[tenant]
}

// instructions tell an MCP client's model what the server is for.
const instructions = "Hippocam keeps the full archive of agent sessions that ran through its proxy, and what " +
	"learning across tasks has gathered. Search a session's archive with search_memory and open what it finds " +
	"with recall_memory; ask get_advisory before starting a task for the advice earlier tasks left; end a " +
	"task with report_outcome; find lessons with search_lessons or read the whole lessons file " +
	"(hippocam://lessons.md)."

// Log keys.
const (
	logCall    = "call"
	logTenant  = "tenant"
	logSession = "session"
	logError   = "error"
)

// tenantServer is the tools' and resources' view of the server: one tenant's.
type tenantServer struct {
	*Server
	tenant string
	srv    *sdk.Server
}

// tenantKey carries the tenant of an HTTP request to HTTPHandler.
type tenantKey struct{}

// WithTenant returns ctx carrying the tenant an authenticated HTTP request belongs to, for
// HTTPHandler.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// tenantOf returns the tenant WithTenant put in ctx.
func tenantOf(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey{}).(string)
	return t, ok
}
