package sessions

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
)

// Learning in the proxy (docs/learning.md, "In the proxy"). With Config.Learn on, a session's first request is
// a task start: the task is routed to a cluster (or the global one, or the one the client pins),
// the cluster's memory system reads an advisory for it, and the advisory enters the context
// before the task's first message; the decision rides on the session (Transcript.Learning). The
// task ends with its outcome (EndTask): the feedback is appended, the session is marked ended, and
// a hippocam.JobLearn job, queued in the same transaction, updates the cluster from the
// trajectory (learn.Apply: idempotent by trajectory id, version-checked, retried on conflicts).

// Learning modes (Config.Learn).
const (
	LearnOff    = "off"
	LearnGlobal = "global"
	LearnRouted = "routed"
)

// JobLearn is the kind of the job that updates a cluster from an ended task.
const JobLearn = "learn"

// MaxFeedbackBytes bounds an outcome's feedback text.
const MaxFeedbackBytes = 64 << 10

// MaxAttempts bounds the attempts an outcome may say its task key has: a memory system that
// compares attempts waits for that many, so a larger count would keep it waiting for good.
const MaxAttempts = 1000

// globalCluster is the id and scope of the one cluster of LearnGlobal.
const (
	globalCluster = "global"
	globalScope   = "every task"
)

// Outcome is how a task ended, as its client reports it: feedback text (required; the only
// part a learning component ever sees), and optionally success and a reward (kept for
// measurement), and how many attempts of its task key there are.
type Outcome struct {
	Feedback string   `json:"feedback"`
	Success  *bool    `json:"success,omitempty"`
	Reward   *float64 `json:"reward,omitempty"`
	Attempts int      `json:"attempts,omitempty"`
}

// learning reports whether the service learns at all.
func (s *Service) learning() bool {
	return s.cfg.Learn == LearnGlobal || s.cfg.Learn == LearnRouted
}

// system returns the offered memory system with that name, or nil.
func (s *Service) system(name string) hippocam.MemorySystem {
	for _, sys := range s.cfg.Systems {
		if sys.Name() == name {
			return sys
		}
	}
	return nil
}

// clusterID is the id of the cluster of a memory system and scope: the same pair always names
// the same cluster, so that two tasks creating it at once create one.
func clusterID(system, scope string) string {
	h := sha256.Sum256([]byte(system + "\x00" + strings.ToLower(strings.TrimSpace(scope))))
	return "c-" + hex.EncodeToString(h[:6])
}

// startTask routes a new session's task and reads its advisory (route.go: from what is known,
// else by the router, waited for at most RouteWait). It never fails the request: a routing that
// fails leaves the task pending, to be routed again (logged and counted).
func (s *Service) startTask(ctx context.Context, h *history, sess *hippocam.Session) *hippocam.TaskLearning {
	if !s.learning() || h.LearnOff || len(s.cfg.Systems) == 0 {
		return nil
	}
	ctx = hippocam.WithCallSession(ctx, sess.Tenant, sess.ID) // the router's calls are the session's
	key := h.TaskKey
	if key == "" {
		key = sess.ID
	}
	task := &hippocam.Task{ID: sess.ID, Key: key, Tools: h.conv.Tools}
	task.Messages = append(task.Messages, h.conv.Framing...)
	task.Messages = append(task.Messages, h.conv.Messages...)
	tl, _ := s.route(ctx, h, sess.ID, task, &hippocam.TaskLearning{Key: h.TaskKey})
	return tl
}

// advise reads the advisory of the task's cluster c into tl, configuring a numeric cluster on
// its first reuse (not for a read-only history). A nil c (read-only, and the cluster would be
// created) has nothing to read yet.
func (s *Service) advise(ctx context.Context, h *history, id string, task *hippocam.Task, c *hippocam.Cluster, tl *hippocam.TaskLearning) *hippocam.TaskLearning {
	if c == nil {
		return tl
	}
	sys := s.system(c.System)
	if sys == nil {
		tl.Decision, tl.Reason = "stateless", fmt.Sprintf("the cluster's system %q is not offered", c.System)
		return tl
	}
	tl.Cluster, tl.System = c.ID, c.System
	// A numeric cluster is configured on its first reuse, before it is read (the Routed Continual Learning paper B.1).
	result := ""
	var err error
	if !h.readOnly {
		c, result, err = learn.Prepare(ctx, s.cfg.Store, sys, c, task)
	}
	switch {
	case err != nil:
		s.log.Warn("learning: preparing the cluster failed; no advisory", logTenant, h.Tenant, logSession, id, "cluster", tl.Cluster, "error", err)
		return tl
	case result == "configured":
		s.stats.configured.Add(1)
	case result == "failed":
		s.stats.configFailed.Add(1)
		s.log.Warn("learning: the cluster's configuration failed; it gives no numeric advisory", logTenant, h.Tenant, "cluster", c.ID, "system", c.System)
	}
	adv, err := sys.Read(ctx, c.State, task, s.cfg.AdvisoryBudget)
	if err != nil {
		s.log.Warn("learning: reading the cluster failed; no advisory", logTenant, h.Tenant, logSession, id, "cluster", c.ID, "error", err)
		return tl
	}
	tl.Advisory = strings.TrimSpace(adv.Text)
	if tl.Advisory != "" {
		tl.AdvisoryTokens = s.cfg.Engine.Tokens(tl.Advisory)
	}
	return tl
}

// ensureClusterID returns the tenant's cluster id, creating it (of system and scope) when
// absent. A read-only history creates nothing: a cluster that does not exist is nil.
func (s *Service) ensureClusterID(ctx context.Context, h *history, id, system, scope string) (*hippocam.Cluster, error) {
	tenant := h.Tenant
	c, err := s.cfg.Store.Cluster(ctx, tenant, id)
	if err == nil {
		return c, nil
	}
	if hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		return nil, err
	}
	if h.readOnly {
		return nil, nil
	}
	c = &hippocam.Cluster{Tenant: tenant, ID: id, System: system, Description: strings.TrimSpace(scope)}
	if err := s.cfg.Store.CreateCluster(ctx, c); err != nil {
		if hippocam.ErrorCode(err) != hippocam.ECONFLICT {
			return nil, err
		}
		return s.cfg.Store.Cluster(ctx, tenant, id) // created at the same moment by another task
	}
	s.changed(ClusterChanged, tenant, "", id)
	return c, nil
}

// checkOutcome checks an outcome's body.
func checkOutcome(o *Outcome) error {
	switch {
	case strings.TrimSpace(o.Feedback) == "":
		return hippocam.Errorf(hippocam.EINVALID, "feedback: the outcome needs the feedback text")
	case len(o.Feedback) > MaxFeedbackBytes:
		return hippocam.Errorf(hippocam.EINVALID, "feedback: %d bytes, more than the %d an outcome may hold", len(o.Feedback), MaxFeedbackBytes)
	case !utf8.ValidString(o.Feedback):
		return hippocam.Errorf(hippocam.EINVALID, "feedback: not valid UTF-8")
	case o.Attempts < 0:
		return hippocam.Errorf(hippocam.EINVALID, "attempts: must not be negative")
	case o.Attempts > MaxAttempts:
		return hippocam.Errorf(hippocam.EINVALID, "attempts: %d, more than the %d one task key may have", o.Attempts, MaxAttempts)
	case o.Reward != nil && (*o.Reward != *o.Reward):
		return hippocam.Errorf(hippocam.EINVALID, "reward: not a number")
	}
	return nil
}

// EndTask records a task's outcome: the feedback joins the session as a user message, the
// session is marked ended (later requests to it get ECONFLICT), and when the task was routed to
// a cluster, the cluster's update is queued in the same transaction. With wait the update runs
// before EndTask returns (its failure is returned; the queued job still retries it); the job
// then finds the trajectory applied and calls no model, so the update runs once. Errors:
// EINVALID for a bad outcome, ENOTFOUND for a session the tenant does not have, ECONFLICT for a
// task that has ended already. Nothing changes on an error before the commit.
func (s *Service) EndTask(ctx context.Context, tenant, id string, o Outcome, wait bool) (*hippocam.Session, error) {
	if err := checkOutcome(&o); err != nil {
		return nil, err
	}
	unlockLearn := func() {}
	if wait { // the inline update goes first: the job, once committed, waits for it (learnKey)
		unlockLearn = s.locks.lock(learnKey(tenant, id))
	}
	defer func() { unlockLearn() }()
	unlock := s.locks.lock(tenant + "\x00n\x00" + baseName(id))
	// The lock serializes this process's requests; another process on the store (hippocam mcp
	// beside serve, a replica) may commit the session meanwhile: a lost race reads it again.
	var next *hippocam.Session
	var ch hippocam.Change
	for attempt := 0; ; attempt++ {
		sess, err := s.load(ctx, tenant, id)
		if err == nil && sess == nil {
			err = hippocam.Errorf(hippocam.ENOTFOUND, "session %q not found", id)
		}
		if err != nil {
			unlock()
			return nil, err
		}
		if l := sess.Transcript.Learning; l != nil && l.Ended {
			unlock()
			return nil, hippocam.Errorf(hippocam.ECONFLICT, "session %q has ended already: its outcome was reported", id)
		}
		next, ch = s.endedSession(sess, o)
		err = s.cfg.Store.Commit(ctx, next, ch)
		if err == nil {
			break
		}
		s.cache.drop(tenant, id)
		if hippocam.ErrorCode(err) != hippocam.ECONFLICT || attempt >= endTaskAttempts-1 {
			unlock()
			return nil, err
		}
	}
	s.cache.put(next)
	unlock()
	s.changed(SessionUpdated, tenant, id, "")
	var err error
	if len(ch.Jobs) > 0 {
		if wait {
			err = s.learnFrom(ctx, tenant, id)
			unlockLearn()
			unlockLearn = func() {}
			if err == nil && next.Transcript.Learning.Pending() { // routed by the update: its decision
				if sess, lerr := s.load(ctx, tenant, id); lerr == nil && sess != nil {
					next = sess
				}
			}
		}
		s.kick() // after a run with wait, the job finds the update done, or retries a failed one
	}
	return next, err
}

// endTaskAttempts bounds how often EndTask reads a session again after another process
// committed it first.
const endTaskAttempts = 5

// endedSession is sess ended with outcome o: the feedback appended as a user message, the task
// marked ended, and a learn job when the task was routed to a cluster.
func (s *Service) endedSession(sess *hippocam.Session, o Outcome) (*hippocam.Session, hippocam.Change) {
	next := sess.Clone()
	tl := next.Transcript.Learning
	if tl == nil {
		tl = &hippocam.TaskLearning{Decision: LearnOff}
		next.Transcript.Learning = tl
	}
	now := time.Now().UTC()
	tl.Ended, tl.EndedAt, tl.Feedback, tl.Success, tl.Reward, tl.Attempts = true, now, o.Feedback, o.Success, o.Reward, o.Attempts
	fb := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: o.Feedback, ID: next.NextID("m")}
	fb.Tokens = hippocam.MessageTokens(s.cfg.Engine.Tokenizer(), &fb)
	next.Context = append(next.Context, fb)
	ch := hippocam.Change{From: sess.Version, Ops: []hippocam.Op{hippocam.AppendOp(fb)}}
	if tl.Cluster != "" || tl.Pending() { // a pending task is routed by its learn job
		ch.Jobs = []hippocam.Job{{Kind: JobLearn}}
	}
	next.UpdatedAt = now
	return next, ch
}

// learnKey is the lock key of a session's cluster update. The runs of one update take turns:
// an outcome with wait takes the lock before the job is committed and runs the update inline
// while holding it, so that this process's worker, which may claim the job at once, waits and
// then finds the trajectory applied, calling no model. Across processes (a replica's worker
// claiming the job during the inline run) the cluster's version check still keeps the update
// single, but both runs may call the model.
func learnKey(tenant, id string) string { return tenant + "\x00l\x00" + id }

// learnJob is a learn job's run: learnFrom under the update's lock.
func (s *Service) learnJob(ctx context.Context, tenant, id string) error {
	defer s.locks.lock(learnKey(tenant, id))()
	return s.learnFrom(ctx, tenant, id)
}

// learnFrom updates the cluster an ended session was routed to with its trajectory, routing it
// first when its routing was still pending (routeAtOutcome). Applying the same trajectory twice
// changes nothing (learn.Apply skips applied ids, before any model call). Its callers hold the
// update's lock (learnKey).
func (s *Service) learnFrom(ctx context.Context, tenant, id string) error {
	ctx = hippocam.WithCallSession(ctx, tenant, id) // the learning calls are the session's
	sess, err := s.cfg.Store.Session(ctx, tenant, id)
	if err != nil {
		return err
	}
	tl := sess.Transcript.Learning
	if tl == nil || !tl.Ended || (tl.Cluster == "" && !tl.Pending()) {
		return nil
	}
	msgs, err := Transcript(ctx, hippocam.SessionArchive(s.cfg.Store, tenant, id), sess.Context)
	if err != nil {
		return err
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == hippocam.RoleUser && msgs[n-1].Content == tl.Feedback {
		msgs = msgs[:n-1] // the feedback travels apart from the messages
	}
	task := *specification(id, tl.Key, sess.Transcript.Framing, msgs, nil)
	task.Attempts = tl.Attempts
	if tl.Pending() {
		if !s.learning() || len(s.cfg.Systems) == 0 {
			return nil // this server does not learn: nothing to route the task to
		}
		if sess, err = s.routeAtOutcome(ctx, sess, &task, firstHash(msgs)); err != nil {
			return err
		}
		if tl = sess.Transcript.Learning; tl.Cluster == "" {
			return nil // nothing to learn into
		}
	}
	sys := s.system(tl.System)
	if sys == nil {
		return fmt.Errorf("the cluster's system %q is not offered any more", tl.System)
	}
	traj := hippocam.Trajectory{ID: id, Task: task, Messages: msgs, Feedback: tl.Feedback, Success: tl.Success, Reward: tl.Reward, EndedAt: tl.EndedAt}
	observer, _ := sys.(hippocam.UpdateObserver) // what its update changed is counted (metrics)
	var before json.RawMessage
	if observer != nil {
		if c, err := s.cfg.Store.Cluster(ctx, tenant, tl.Cluster); err == nil {
			before = c.State
		}
	}
	if err := learn.Apply(ctx, s.cfg.Store, sys, tenant, tl.Cluster, []hippocam.Trajectory{traj}); err != nil {
		if errors.Is(err, learn.ErrGaveUp) {
			s.log.Warn("learning: the cluster update gave up; the cluster is as it was", logTenant, tenant, logSession, id, "cluster", tl.Cluster, "error", err)
		}
		return err
	}
	s.stats.learned.Add(1)
	s.changed(ClusterChanged, tenant, "", tl.Cluster)
	if observer != nil {
		if c, err := s.cfg.Store.Cluster(ctx, tenant, tl.Cluster); err == nil {
			if ev, err := observer.Observe(before, c.State); err == nil {
				s.stats.updateEvents(sys.Name(), ev)
			}
		}
	}
	return nil
}

// Flusher is a memory system that holds attempts until all of their task key have come
// (lessons): Flush learns from those waiting for key now.
type Flusher interface {
	Flush(ctx context.Context, state json.RawMessage, key string) (json.RawMessage, error)
}

// LearnTask makes every cluster of the tenant that holds attempts of key waiting for the rest
// learn from them now (POST /api/tasks/{key}/learn). It returns how many clusters learned.
func (s *Service) LearnTask(ctx context.Context, tenant, key string) (int, error) {
	ctx = hippocam.WithCallSession(ctx, tenant, "") // the learning calls are the tenant's, of no one session
	if strings.TrimSpace(key) == "" {
		return 0, hippocam.Errorf(hippocam.EINVALID, "the task key is empty")
	}
	clusters, err := s.cfg.Store.Clusters(ctx, tenant)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range clusters {
		f, ok := s.system(c.System).(Flusher)
		if !ok {
			continue
		}
		changed := false
		_, err := learn.Change(ctx, s.cfg.Store, tenant, c.ID, func(cur *hippocam.Cluster) (bool, error) {
			changed = false
			next, err := f.Flush(ctx, cur.State, key)
			if err != nil || bytes.Equal(next, cur.State) {
				return false, err // nothing of key was waiting here
			}
			cur.State, changed = next, true
			return true, nil
		})
		if err != nil {
			return n, err
		}
		if changed {
			n++
			s.changed(ClusterChanged, tenant, "", c.ID)
		}
	}
	return n, nil
}
