package sessions

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
)

// Routing a task without holding up its first answer (docs/learning.md, "In the proxy").
//
// The router is a model call, and a task start used to wait for it before its first answer:
// at a hosted provider's pace that is a second or more on every task. So a task is routed from
// what is known first, with no model call: the cluster its client pins, the global cluster, or
// the one cluster whose scope its text names (learn.MatchScope). Only a task that none of these
// settles goes to the model router, and its first answer waits for the router at most
// Config.RouteWait. A router that has not decided by then goes on in the background; the first
// step runs without an advisory and records the decision as pending (hippocam.DecisionPending).
// The session's next request applies the routing: the decision replaces the pending one on the
// session and the advisory enters the context after that request's messages, once (the engine's
// Input.LateAdvisory). Routings that outlive their request are kept in this process only (a
// bounded map keyed by tenant and session); a request that finds none, because another process
// started the task, this one restarted, or the map was full, routes again.
//
// A routing that fails (a model or store error, or router answers that keep breaking the
// contract) is not a decision: the task stays pending and is routed again at its next request,
// up to maxRouteFailures failures, after which it runs stateless. A task still pending when it
// ends is routed at its outcome, by the learn job (learnFrom), so that what it teaches reaches a
// cluster.

// DefaultRouteWait is how long a task's first answer waits for the model router unless
// Config.RouteWait says otherwise.
const DefaultRouteWait = 300 * time.Millisecond

// maxRouteFailures is how many failed routings of one task are tried again; the task then runs
// stateless for good.
const maxRouteFailures = 3

// routeTimeout bounds a routing that goes on after the request that started it has answered.
const routeTimeout = 2 * time.Minute

// maxRoutings bounds the routings this process keeps for later requests; past it the oldest
// is forgotten (its session's next request routes again).
const maxRoutings = 10_000

// routing is one model routing of a task, running or done.
type routing struct {
	// first is the transcript hash of the conversation's first message: a routing is applied
	// only to the task it was made for, not to a later session that took the same name.
	first string
	done  chan struct{}
	tl    *hippocam.TaskLearning // set before done is closed
	at    *list.Element          // its place in routings.order
}

// finished reports whether the routing is done.
func (r *routing) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// failed reports whether the routing is done and failed: the task's routing is still owed.
func (r *routing) failed() bool { return r.finished() && r.tl.Pending() }

// routings are the routings this process keeps for the sessions' next requests, by routingKey,
// the oldest dropped first when there are maxRoutings.
type routings struct {
	mu    sync.Mutex
	m     map[string]*routing
	order list.List // of keys, newest first
}

func routingKey(tenant, id string) string { return cacheKey(tenant, id) }

// get returns the routing kept for the session's task whose first message hashes to first, or nil.
func (rs *routings) get(key, first string) *routing {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r := rs.m[key]; r != nil && r.first == first {
		return r
	}
	return nil
}

// add keeps r under key, in place of any other; when the map is full, the oldest goes.
func (rs *routings) add(key string, r *routing) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m == nil {
		rs.m = map[string]*routing{}
	}
	if old := rs.m[key]; old != nil {
		rs.order.Remove(old.at)
	} else if len(rs.m) >= maxRoutings {
		oldest := rs.order.Back()
		delete(rs.m, rs.order.Remove(oldest).(string))
	}
	r.at = rs.order.PushFront(key)
	rs.m[key] = r
}

// drop forgets r, if key still holds it (r nil: whatever key holds).
func (rs *routings) drop(key string, r *routing) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if cur := rs.m[key]; cur != nil && (r == nil || cur == r) {
		rs.order.Remove(cur.at)
		delete(rs.m, key)
	}
}

// firstHash is the transcript hash of a conversation's first message ("" when it has none).
func firstHash(msgs []hippocam.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	return hippocam.TranscriptChain("", msgs[:1])[1]
}

// specification is the task a session's messages specify: the framing, then the messages up to
// the first answer.
func specification(id, key string, framing, msgs []hippocam.Message, tools []hippocam.Tool) *hippocam.Task {
	if key == "" {
		key = id
	}
	task := &hippocam.Task{ID: id, Key: key, Tools: tools}
	task.Messages = append(task.Messages, framing...)
	for _, m := range msgs {
		if m.Role == hippocam.RoleAssistant {
			break
		}
		task.Messages = append(task.Messages, m)
	}
	return task
}

// route decides where the session's task goes and reads its advisory: from what is known first
// (knownCluster), else by the model router, which it waits for at most RouteWait (as long as it
// takes for a read-only history, or with a negative RouteWait). running is set when the router
// had not decided by then: tl only says so (DecisionPending), and the routing is kept for the
// session's next request. prev is the task's learning so far (its key and failed routings). It
// never fails: a failure leaves the task pending, or stateless after maxRouteFailures
// (routeFailed).
func (s *Service) route(ctx context.Context, h *history, id string, task *hippocam.Task, prev *hippocam.TaskLearning) (tl *hippocam.TaskLearning, running bool) {
	key, first := routingKey(h.Tenant, id), firstHash(h.conv.Messages)
	failures := prev.RouteFailures
	if r := s.routes.get(key, first); r != nil && !h.readOnly {
		if !r.failed() {
			return s.settle(ctx, key, r, prev)
		}
		s.routes.drop(key, r) // it failed after its request answered: route again
		failures = max(failures, r.tl.RouteFailures)
	}
	tl = &hippocam.TaskLearning{Key: prev.Key, RouteFailures: failures}
	clusters, err := s.cfg.Store.Clusters(ctx, h.Tenant)
	if err != nil {
		return s.routeFailed(h, id, tl, err), false
	}
	c, known, err := s.knownCluster(ctx, h, task, clusters, tl)
	switch {
	case err != nil:
		return s.routeFailed(h, id, tl, err), false
	case known:
		return s.advise(ctx, h, id, task, c, tl), false
	case h.readOnly || s.cfg.RouteWait < 0:
		return s.routeByModel(ctx, h, id, task, clusters, tl), false
	}
	// The router runs beside the answer, for this request and, if it is slow, the next one.
	work, pending := tl, *tl // the router's, and what the answer says while the router works
	r := &routing{first: first, done: make(chan struct{})}
	s.routes.add(key, r)
	bh := &history{Request: &Request{Tenant: h.Tenant}} // what routing reads of the request
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), routeTimeout)
	go func() {
		defer cancel()
		r.tl = s.routeByModel(bctx, bh, id, task, clusters, work)
		close(r.done)
	}()
	return s.settle(ctx, key, r, &pending)
}

// settle waits for r at most RouteWait: its learning when it finished (r is forgotten then),
// else a pending one and running.
func (s *Service) settle(ctx context.Context, key string, r *routing, prev *hippocam.TaskLearning) (*hippocam.TaskLearning, bool) {
	if !r.finished() {
		var expired <-chan time.Time
		if s.cfg.RouteWait >= 0 {
			t := time.NewTimer(s.cfg.RouteWait)
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-r.done:
		case <-expired:
		case <-ctx.Done():
		}
	}
	if !r.finished() {
		return &hippocam.TaskLearning{Key: prev.Key, RouteFailures: prev.RouteFailures, Decision: hippocam.DecisionPending,
			Reason: "the router had not decided when the answer went out; its decision applies from the next request"}, true
	}
	s.routes.drop(key, r)
	return r.tl, false
}

// routeByModel asks the model router where the task goes and reads the chosen cluster.
func (s *Service) routeByModel(ctx context.Context, h *history, id string, task *hippocam.Task, clusters []hippocam.Cluster, tl *hippocam.TaskLearning) *hippocam.TaskLearning {
	c, err := s.askRouter(ctx, h, task, clusters, tl)
	if err != nil {
		return s.routeFailed(h, id, tl, err)
	}
	return s.advise(ctx, h, id, task, c, tl)
}

// routeFailed records a failed routing on tl: the task stays pending, to be routed again, until
// maxRouteFailures, and then runs stateless (logged and counted either way). A read-only
// history (Advise) routes once: it is stateless at once.
func (s *Service) routeFailed(h *history, id string, tl *hippocam.TaskLearning, err error) *hippocam.TaskLearning {
	s.stats.stateless.Add(1)
	tl.RouteFailures++
	tl.Cluster, tl.System, tl.Advisory, tl.AdvisoryTokens = "", "", "", 0
	tl.Reason = statelessReason(err)
	if h.readOnly || tl.RouteFailures >= maxRouteFailures {
		s.log.Warn("learning: the task runs stateless", logTenant, h.Tenant, logSession, id, "failures", tl.RouteFailures, "error", err)
		tl.Decision = "stateless"
		return tl
	}
	s.log.Warn("learning: routing the task failed; it is routed again at its next request or its outcome", logTenant, h.Tenant, logSession, id, "failures", tl.RouteFailures, "error", err)
	tl.Decision = hippocam.DecisionPending
	return tl
}

// knownCluster is the task's cluster when it is known without a model call: the pinned one, the
// global one, or the one whose scope the task's text names (learn.MatchScope, among the
// clusters of offered systems). known is false when only the router can tell; tl records how.
func (s *Service) knownCluster(ctx context.Context, h *history, task *hippocam.Task, clusters []hippocam.Cluster, tl *hippocam.TaskLearning) (c *hippocam.Cluster, known bool, err error) {
	first := s.cfg.Systems[0].Name()
	switch {
	case h.Cluster != "":
		tl.Decision = "pinned"
		pin := strings.TrimSpace(h.Cluster)
		for i := range clusters {
			if clusters[i].ID == pin || strings.EqualFold(strings.TrimSpace(clusters[i].Description), pin) {
				return &clusters[i], true, nil
			}
		}
		c, err := s.ensureClusterID(ctx, h, clusterID(first, pin), first, pin)
		return c, true, err
	case s.cfg.Learn == LearnGlobal:
		tl.Decision = "global"
		c, err := s.ensureClusterID(ctx, h, globalCluster, first, globalScope)
		return c, true, err
	}
	var offered []*hippocam.Cluster
	var scopes []string
	for i := range clusters {
		if s.system(clusters[i].System) != nil {
			offered, scopes = append(offered, &clusters[i]), append(scopes, clusters[i].Description)
		}
	}
	if m, ok := learn.MatchScope(learn.TaskText(task), scopes); ok {
		tl.Decision, tl.Reason = "match", m.Reason()
		return offered[m.Index], true, nil
	}
	return nil, false, nil
}

// askRouter asks the model router where the task goes: an existing cluster, or a new one it
// creates; tl records the decision.
func (s *Service) askRouter(ctx context.Context, h *history, task *hippocam.Task, clusters []hippocam.Cluster, tl *hippocam.TaskLearning) (*hippocam.Cluster, error) {
	d, err := learn.Route(ctx, s.cfg.LearnEnv, task, s.cfg.Systems, clusters)
	if err != nil {
		return nil, fmt.Errorf("routing: %w", err)
	}
	tl.Reason = d.Reason
	if d.Cluster != "" {
		tl.Decision = "reuse"
		for i := range clusters {
			if clusters[i].ID == d.Cluster {
				return &clusters[i], nil
			}
		}
		return nil, fmt.Errorf("routing: cluster %q is gone", d.Cluster)
	}
	tl.Decision, tl.System = "create", d.System
	return s.ensureClusterID(ctx, h, clusterID(d.System, d.Scope), d.System, d.Scope)
}

// routeLate applies to a continued session the routing its task still owes (route, with the
// task its conversation specifies): the task's learning when the routing decided now or failed
// again, nil while the router is still at work (this request goes without; the next looks
// again).
func (s *Service) routeLate(ctx context.Context, h *history, sess *hippocam.Session) *hippocam.TaskLearning {
	if !s.learning() || len(s.cfg.Systems) == 0 {
		return nil // this server does not learn (a restart with --learn off): nothing to route to
	}
	prev := sess.Transcript.Learning
	ctx = hippocam.WithCallSession(ctx, sess.Tenant, sess.ID) // the router's calls are the session's
	task := specification(sess.ID, prev.Key, h.conv.Framing, h.conv.Messages, h.conv.Tools)
	tl, running := s.route(ctx, h, sess.ID, task, prev)
	if running {
		return nil
	}
	return tl
}

// routeAtOutcome decides the cluster of an ended task whose routing was still owed, and records
// the decision on the session, which it returns. It takes the routing this process still runs
// for the task, waiting for it to end, and routes anew otherwise (known cluster, then the
// router); no advisory is read, since none can reach the ended task. A routing that fails is
// counted on the session and returned as an error, so that the learn job tries again, up to
// maxRouteFailures failures in all; then the task is recorded stateless.
func (s *Service) routeAtOutcome(ctx context.Context, sess *hippocam.Session, task *hippocam.Task, first string) (*hippocam.Session, error) {
	tenant, id, prev := sess.Tenant, sess.ID, sess.Transcript.Learning
	key := routingKey(tenant, id)
	var tl *hippocam.TaskLearning
	if r := s.routes.get(key, first); r != nil {
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.routes.drop(key, r)
		if !r.tl.Pending() {
			tl = r.tl
		}
	}
	if tl == nil {
		tl = &hippocam.TaskLearning{Key: prev.Key, RouteFailures: prev.RouteFailures}
		h := &history{Request: &Request{Tenant: tenant}}
		clusters, err := s.cfg.Store.Clusters(ctx, tenant)
		if err != nil {
			return nil, err
		}
		c, known, err := s.knownCluster(ctx, h, task, clusters, tl)
		if err == nil && !known {
			c, err = s.askRouter(ctx, h, task, clusters, tl)
		}
		if err != nil {
			// Counted on the session like a failure at a request: the job tries again until
			// maxRouteFailures, and then the task stays stateless and the job ends.
			if tl = s.routeFailed(h, id, tl, err); tl.Decision == "stateless" {
				return s.recordRouting(ctx, tenant, id, tl)
			}
			if _, rerr := s.recordRouting(ctx, tenant, id, tl); rerr != nil {
				s.log.Warn("learning: recording the failed routing", logTenant, tenant, logSession, id, "error", rerr)
			}
			return nil, err
		}
		switch {
		case c == nil:
			tl.Decision = "stateless"
		case s.system(c.System) == nil:
			tl.Decision, tl.Reason = "stateless", fmt.Sprintf("the cluster's system %q is not offered", c.System)
		default:
			tl.Cluster, tl.System = c.ID, c.System
		}
	}
	return s.recordRouting(ctx, tenant, id, tl)
}

// recordRouting writes an ended task's routing decision onto its session, in place of the
// pending one; the advisory it may hold is left out, since it never entered the context. A
// session decided meanwhile (another run of the update) is returned as it is.
func (s *Service) recordRouting(ctx context.Context, tenant, id string, tl *hippocam.TaskLearning) (*hippocam.Session, error) {
	unlock := s.locks.lock(tenant + "\x00n\x00" + baseName(id))
	defer unlock()
	for attempt := 0; ; attempt++ {
		sess, err := s.load(ctx, tenant, id)
		if err == nil && sess == nil {
			err = hippocam.Errorf(hippocam.ENOTFOUND, "session %q not found", id)
		}
		if err != nil {
			return nil, err
		}
		if !sess.Transcript.Learning.Pending() {
			return sess, nil
		}
		next := sess.Clone()
		l := next.Transcript.Learning
		l.Cluster, l.System, l.Decision, l.Reason, l.RouteFailures = tl.Cluster, tl.System, tl.Decision, tl.Reason, tl.RouteFailures
		next.UpdatedAt = time.Now().UTC()
		err = s.cfg.Store.Commit(ctx, next, hippocam.Change{From: sess.Version})
		if err == nil {
			s.cache.put(next)
			s.changed(SessionUpdated, tenant, id, "")
			return next, nil
		}
		s.cache.drop(tenant, id)
		if hippocam.ErrorCode(err) != hippocam.ECONFLICT || attempt >= endTaskAttempts-1 {
			return nil, err
		}
	}
}

// statelessReason is what a task's record says of why its routing failed: the kind of failure,
// never its internal detail (an upstream's address, a store's error), which goes to the log.
func statelessReason(err error) string {
	switch {
	case errors.Is(err, learn.ErrGaveUp):
		return "routing failed: the router's answers kept breaking its contract"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "routing failed: the request ended first"
	}
	if code := hippocam.ErrorCode(err); code != hippocam.EINTERNAL {
		return "routing failed: " + code
	}
	return "routing failed: internal error"
}
