package mcp

import (
	"context"
	"sync"
	"time"

	"github.com/hippocam/hippocam/sessions"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Subscriptions and change notifications. A client subscribes to a resource's URI
// (resources/subscribe, or subscriptions/listen in the stateless protocol) and is sent
// notifications/resources/updated when it changes: a session's expansion after each step,
// consolidation, outcome or deletion of the session; the lessons file after any change of the
// tenant's clusters. notifications/resources/list_changed goes to every client of the tenant when
// a session is created or deleted (the list holds one resource per session). What changes is
// told by the session service (sessions.Service.ObserveChanges): this process's changes only.

// subscribe accepts a subscription to any URI: one that names no resource of the tenant yet
// (the expansion of a session that does not exist yet) is notified once it comes to.
func (t *tenantServer) subscribe(context.Context, *sdk.SubscribeRequest) error { return nil }

// unsubscribe ends a subscription; the SDK keeps the subscribers.
func (t *tenantServer) unsubscribe(context.Context, *sdk.UnsubscribeRequest) error { return nil }

// notice is one notification to send to one tenant's clients: the resource that changed, and
// whether the list of resources changed.
type notice struct {
	tenant string
	uri    string
	list   bool
}

// notifier queues notices and sends them from one goroutine, which runs while there are notices
// to send: the service's observer never waits for a client. Notices queued while others are
// being sent are sent once each, however often they were queued.
type notifier struct {
	mu      sync.Mutex
	pending map[notice]struct{}
	running bool
}

// changed is the session service's observer: it queues what c means to the tenant's clients.
func (s *Server) changed(c sessions.Change) {
	n := notice{tenant: c.Tenant}
	switch c.Kind {
	case sessions.SessionCreated, sessions.SessionDeleted:
		n.uri, n.list = expandURI(c.Session), true
	case sessions.SessionUpdated:
		n.uri = expandURI(c.Session)
	case sessions.ClusterChanged:
		n.uri = LessonsURI
	default:
		return
	}
	if s.server(c.Tenant) == nil {
		return // no client of the tenant ever connected to this process
	}
	s.notes.mu.Lock()
	defer s.notes.mu.Unlock()
	if s.notes.pending == nil {
		s.notes.pending = map[notice]struct{}{}
	}
	s.notes.pending[n] = struct{}{}
	if !s.notes.running {
		s.notes.running = true
		go s.sendNotices()
	}
}

// sendNotices sends the queued notices until none is left.
func (s *Server) sendNotices() {
	for {
		s.notes.mu.Lock()
		batch := s.notes.pending
		s.notes.pending = nil
		if len(batch) == 0 {
			s.notes.running = false
			s.notes.mu.Unlock()
			return
		}
		s.notes.mu.Unlock()
		for n := range batch {
			s.send(n)
		}
	}
}

// noticeTimeout bounds the sending of one notice to a tenant's clients.
const noticeTimeout = 10 * time.Second

// send sends one notice to the tenant's connected clients.
func (s *Server) send(n notice) {
	if n.list {
		s.streams.send(n.tenant, "notifications/resources/list_changed", struct{}{})
	}
	s.streams.send(n.tenant, "notifications/resources/updated", map[string]string{"uri": n.uri})
	t := s.server(n.tenant)
	if t == nil || !connected(t.srv) {
		return
	}
	if n.list {
		// The SDK tells clients the list changed when a resource is added: the lessons file,
		// added again as it is, says it for the sessions (which the list holds but the SDK
		// does not know).
		t.addLessons(t.srv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), noticeTimeout)
	defer cancel()
	if err := t.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: n.uri}); err != nil {
		s.log.Warn("mcp: a change notification failed", logTenant, n.tenant, "uri", n.uri, logError, err)
	}
}

// connected reports whether a client is connected to srv.
func connected(srv *sdk.Server) bool {
	for range srv.Sessions() {
		return true
	}
	return false
}
