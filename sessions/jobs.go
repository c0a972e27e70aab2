package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// Consolidation jobs (docs/architecture.md §7). A step answers and commits; what Alg. 1 does
// after the answer (PRECIP, then the prefix check) is left in the session (Session.Pending) and
// a hippocam.JobConsolidate job enqueued in the same transaction. Workers (RunJobs) claim jobs
// from the store's queue, which every replica of one database shares. A job makes its model
// calls without the session's lock, on the session as it was when it began; then it takes the
// lock, reads the session again and commits its memories with the version check, carried onto
// whatever steps committed meanwhile (engine.Rebase). A request never waits for a job's model
// calls unless its window needs the job's work: then it waits for the job this process is
// running (the engine's PendingDue says so), or, when no job is running, runs the work itself
// first. A job that ran already finds nothing pending and finishes. A server that died mid-job
// leaves the job leased: when the lease runs out another worker (or the restarted server) takes
// it.

// Job defaults.
const (
	defaultWorkers  = 2
	defaultJobPoll  = time.Second
	defaultJobLease = 30 * time.Second
	maxJobBackoff   = time.Minute
	// maxJobAttempts is how often a failing job runs before it is left failed: queued, with its
	// last error, not due again for failedJobWait (counted, logged as an error; an operator's
	// fix and a restart, or the next outcome of the session, make it run again).
	maxJobAttempts = 10
	failedJobWait  = 24 * time.Hour
)

// Stats counts what the service did about latency, since it started.
type Stats struct {
	// WaitsRunning counts steps that waited for their session's consolidation job, which this
	// process was running, because their window needed its work. WaitsWindow, WaitsLag and
	// WaitsInline count steps that ran the pending work themselves before answering: for the
	// window (engine.PendingWindow), for the lag bound (engine.PendingLag), or otherwise (a
	// regeneration, a service that consolidates inline). A step is counted once at most.
	WaitsRunning, WaitsWindow, WaitsLag, WaitsInline int64
	// PendingSteps counts steps that answered with consolidation still pending, LagSteps adds
	// up their lag (engine.Result.Lag: steps since the oldest pending work was left), and MaxLag
	// is the largest.
	PendingSteps, LagSteps, MaxLag int64
	// VerdictWaits counts steps that waited for the JANUS verdict their session's previous step
	// left (engine.JanusBeside): its call was still running when they began.
	VerdictWaits int64
	// JobsDone counts jobs run to the end; JobsFailed runs that failed and were put back.
	JobsDone, JobsFailed int64
	// JobsRebased counts consolidation jobs whose session had moved on while they ran, so their
	// memories were carried onto the newer version; JobPartsDropped the memories that could not
	// be, their span having changed.
	JobsRebased, JobPartsDropped int64
	// Stateless counts task starts the router could not route (they ran without memory);
	// Learned the cluster updates from ended tasks.
	Stateless, Learned int64
	// JobsLeftFailed counts jobs that failed maxJobAttempts times and were left failed.
	JobsLeftFailed int64
	// UpdateEvents counts what cluster updates from ended tasks changed, by system and kind of
	// change, as the systems that observe their updates report it (hippocam.UpdateObserver):
	// every kind each offered system declares, in the order of the systems, from zero.
	UpdateEvents []UpdateEventCount
	// JobLag is the total time jobs waited from being queued to their first run, over
	// JobsStarted of them.
	JobLag      time.Duration
	JobsStarted int64
	// Configured and ConfigFailed count numeric clusters configured on their first reuse, and
	// those whose configuration failed for good (they give no numeric advisory).
	Configured, ConfigFailed int64
}

type stats struct {
	waitsRunning, waitsWindow, waitsLag, waitsInline atomic.Int64
	pendingSteps, lagSteps, maxLag                   atomic.Int64
	verdictWaits, jobsDone, jobsFailed               atomic.Int64
	rebased, dropped                                 atomic.Int64
	stateless, learned, jobsGaveUp                   atomic.Int64
	// events counts the changes UpdateObservers report (newStats builds it; fixed after).
	events []eventCounter
	// lagNanos and lagged add up how long jobs waited from being queued to being run.
	lagNanos, lagged         atomic.Int64
	configured, configFailed atomic.Int64
}

// UpdateEventCount is how many changes of one kind the updates of one system made.
type UpdateEventCount struct {
	System string
	hippocam.UpdateEvent
	Count int64
}

// eventCounter counts one kind of change of one system.
type eventCounter struct {
	system string
	event  hippocam.UpdateEvent
	n      *atomic.Int64
}

// countEvents makes a counter for every kind of change the systems that observe their updates
// declare.
func countEvents(systems []hippocam.MemorySystem) []eventCounter {
	var out []eventCounter
	for _, sys := range systems {
		if o, ok := sys.(hippocam.UpdateObserver); ok {
			for _, ev := range o.UpdateEvents() {
				out = append(out, eventCounter{system: sys.Name(), event: ev, n: new(atomic.Int64)})
			}
		}
	}
	return out
}

// updateEvents counts what an update of system did, by kind (kinds it did not declare are left).
func (st *stats) updateEvents(system string, ev map[string]int) {
	for _, c := range st.events {
		if c.system == system {
			c.n.Add(int64(ev[c.event.Kind]))
		}
	}
}

// eventCounts reads the counters of updateEvents.
func (st *stats) eventCounts() []UpdateEventCount {
	out := make([]UpdateEventCount, len(st.events))
	for i, c := range st.events {
		out[i] = UpdateEventCount{System: c.system, UpdateEvent: c.event, Count: c.n.Load()}
	}
	return out
}

// UpdateEventCount returns how many changes of the given kind the updates of system made (0 for
// a kind the system does not declare).
func (st Stats) UpdateEventCount(system, kind string) int64 {
	for _, c := range st.UpdateEvents {
		if c.System == system && c.Kind == kind {
			return c.Count
		}
	}
	return 0
}

// Stats returns the service's counters.
func (s *Service) Stats() Stats {
	return Stats{
		WaitsRunning: s.stats.waitsRunning.Load(), WaitsWindow: s.stats.waitsWindow.Load(),
		WaitsLag: s.stats.waitsLag.Load(), WaitsInline: s.stats.waitsInline.Load(),
		PendingSteps: s.stats.pendingSteps.Load(), LagSteps: s.stats.lagSteps.Load(), MaxLag: s.stats.maxLag.Load(),
		VerdictWaits: s.stats.verdictWaits.Load(),
		JobsDone:     s.stats.jobsDone.Load(), JobsFailed: s.stats.jobsFailed.Load(),
		JobsRebased: s.stats.rebased.Load(), JobPartsDropped: s.stats.dropped.Load(),
		Stateless: s.stats.stateless.Load(), Learned: s.stats.learned.Load(), JobsLeftFailed: s.stats.jobsGaveUp.Load(),
		JobLag: time.Duration(s.stats.lagNanos.Load()), JobsStarted: s.stats.lagged.Load(),
		Configured: s.stats.configured.Load(), ConfigFailed: s.stats.configFailed.Load(),
		UpdateEvents: s.stats.eventCounts(),
	}
}

// QueuedJobs counts the store's queued jobs (running, due, or left failed).
func (s *Service) QueuedJobs(ctx context.Context) (int, error) { return s.cfg.Store.QueuedJobs(ctx) }

// running tracks the consolidation jobs this process is running, by session, so that a step
// whose window needs their work can wait for them rather than do it again.
type running struct {
	mu sync.Mutex
	m  map[string]*run
}

type run struct {
	n    int
	done chan struct{} // closed when the last job of the session running here ends
}

// start records a job of the session as running and returns its end.
func (r *running) start(tenant, id string) func() {
	key := cacheKey(tenant, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	j := r.m[key]
	if j == nil {
		j = &run{done: make(chan struct{})}
		r.m[key] = j
	}
	j.n++
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if j.n--; j.n == 0 {
			close(j.done)
			delete(r.m, key)
		}
	}
}

// done returns a channel closed when the session's running jobs end; nil when none runs.
func (r *running) done(tenant, id string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j := r.m[cacheKey(tenant, id)]; j != nil {
		return j.done
	}
	return nil
}

// newOwner names this process's workers in the queue's leases.
func newOwner() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "hippocam-" + hex.EncodeToString(b)
}

// ObserveJobs has fn called after every consolidation job a worker ran: with the job's result
// when it committed (nil when there was nothing left to do), or with the error that put it back
// in the queue. Set it before RunJobs; fn must not block.
func (s *Service) ObserveJobs(fn func(res *engine.Result, err error)) { s.observe = fn }

// kick wakes a worker: a job was just enqueued.
func (s *Service) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// RunJobs runs the store's jobs with Config.Workers workers until ctx ends; then it returns
// once the running jobs have stopped (a job cut short is put back in the queue).
func (s *Service) RunJobs(ctx context.Context) {
	var wg sync.WaitGroup
	for range s.cfg.Workers {
		wg.Go(func() { s.work(ctx) })
	}
	wg.Wait()
}

// work is one worker's loop.
func (s *Service) work(ctx context.Context) {
	poll := time.NewTimer(0)
	defer poll.Stop()
	for ctx.Err() == nil {
		j, err := s.cfg.Store.ClaimJob(ctx, s.owner, s.cfg.JobLease)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("claiming a job", "error", err)
		}
		if j != nil {
			s.runJob(ctx, j)
			continue
		}
		poll.Reset(s.cfg.JobPoll)
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-poll.C:
		}
	}
}

// RunPendingJobs runs every job that is due now, one after the other, and returns when none is
// left (tests, and tools that run without workers).
func (s *Service) RunPendingJobs(ctx context.Context) error {
	for {
		j, err := s.cfg.Store.ClaimJob(ctx, s.owner, s.cfg.JobLease)
		if err != nil || j == nil {
			return err
		}
		s.runJob(ctx, j)
	}
}

// runJob runs one claimed job and settles it in the queue.
func (s *Service) runJob(ctx context.Context, j *hippocam.Job) {
	if j.Attempts == 1 && !j.CreatedAt.IsZero() {
		s.stats.lagNanos.Add(int64(max(0, time.Since(j.CreatedAt))))
		s.stats.lagged.Add(1)
	}
	// The lease is renewed while the job runs, so that a long PALIM fold is not taken over.
	jctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		t := time.NewTicker(s.cfg.JobLease / 3)
		defer t.Stop()
		for {
			select {
			case <-jctx.Done():
				return
			case <-t.C:
				if err := s.cfg.Store.ExtendJob(jctx, j, s.owner, s.cfg.JobLease); err != nil && jctx.Err() == nil {
					s.log.Warn("a job's lease was lost", logTenant, j.Tenant, logSession, j.Session, "error", err)
					stop()
				}
			}
		}
	}()
	var err error
	var res *engine.Result
	switch j.Kind {
	case hippocam.JobConsolidate:
		res, err = s.consolidate(jctx, j)
		if s.observe != nil && hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
			s.observe(res, err)
		}
	case JobLearn:
		err = s.learnJob(jctx, j.Tenant, j.Session)
	default:
		s.log.Error("a job of an unknown kind; dropped", "kind", j.Kind, logTenant, j.Tenant, logSession, j.Session)
	}
	settle := context.WithoutCancel(ctx)
	if err == nil || hippocam.ErrorCode(err) == hippocam.ENOTFOUND {
		// ECONFLICT: the lease was lost (it ran out, or the session was deleted); whoever holds
		// the job now settles it.
		if err := s.cfg.Store.FinishJob(settle, j, s.owner); err != nil && hippocam.ErrorCode(err) != hippocam.ECONFLICT {
			s.log.Warn("finishing a job", logTenant, j.Tenant, logSession, j.Session, "error", err)
		}
		s.stats.jobsDone.Add(1)
		return
	}
	s.stats.jobsFailed.Add(1)
	after := min(maxJobBackoff, time.Duration(1<<min(j.Attempts, 10))*s.cfg.JobBackoff)
	if hippocam.ErrorCode(err) == hippocam.ECONFLICT || ctx.Err() != nil {
		after = 0 // another step committed first, or the server stops: run again on the new state
	}
	if j.Attempts >= maxJobAttempts && hippocam.ErrorCode(err) != hippocam.ECONFLICT && ctx.Err() == nil {
		after = failedJobWait
		s.stats.jobsGaveUp.Add(1)
		s.log.Error("a job kept failing; it is left failed in the queue", "kind", j.Kind, logTenant, j.Tenant, logSession, j.Session, "attempts", j.Attempts, "error", err)
	} else {
		s.log.Warn("a job failed; it will run again", "kind", j.Kind, logTenant, j.Tenant, logSession, j.Session, "attempts", j.Attempts, "error", err)
	}
	if err := s.cfg.Store.RetryJob(settle, j, s.owner, after, err.Error()); err != nil {
		s.log.Warn("putting a job back", logTenant, j.Tenant, logSession, j.Session, "error", err)
	}
}

// consolidate runs a session's pending consolidation and commits it. The model calls run on
// the session as it was when the job began, without its lock, so that requests go on meanwhile;
// the commit takes the lock and carries the result onto the session as it is by then
// (commitJob). It returns the committed result, or nil when nothing was left to do.
func (s *Service) consolidate(ctx context.Context, j *hippocam.Job) (*engine.Result, error) {
	sess, err := s.load(ctx, j.Tenant, j.Session)
	if err != nil {
		return nil, err
	} else if sess == nil {
		return nil, hippocam.Errorf(hippocam.ENOTFOUND, "session %q was deleted", j.Session)
	}
	if sess.Pending.Empty() {
		return nil, nil // a step ran it first, or an earlier run of this job did
	}
	defer s.running.start(j.Tenant, j.Session)()
	res, err := s.cfg.Engine.Consolidate(ctx, sess, hippocam.SessionArchive(s.cfg.Store, j.Tenant, j.Session))
	if err != nil {
		return nil, err
	}
	return s.commitJob(ctx, j, res)
}

// maxRebases bounds how often a job's commit is carried onto a newer version when another
// replica commits between the read and the commit; past it the job runs again later.
const maxRebases = 3

// commitJob commits a consolidation job's result under the session's locks, rebased onto the
// session as it is now (engine.Rebase) when steps committed while the job ran.
func (s *Service) commitJob(ctx context.Context, j *hippocam.Job, res *engine.Result) (*engine.Result, error) {
	for attempt := 1; ; attempt++ {
		newer, unlock, err := s.lockSession(ctx, j.Tenant, j.Session)
		if err != nil {
			return nil, err
		}
		out, err := s.cfg.Engine.Rebase(newer, res)
		if err != nil {
			unlock()
			if hippocam.ErrorCode(err) == hippocam.ECONFLICT {
				// Deleted and created again under the same name while the job ran: this work
				// was the old session's.
				return nil, hippocam.Errorf(hippocam.ENOTFOUND, "session %q was replaced while its job ran: %v", j.Session, err)
			}
			return nil, err
		}
		next := out.Session
		next.UpdatedAt = time.Now().UTC()
		err = s.cfg.Store.Commit(ctx, next, out.Change)
		if err != nil {
			s.cache.drop(j.Tenant, j.Session)
			unlock()
			if hippocam.ErrorCode(err) == hippocam.ECONFLICT && attempt < maxRebases {
				continue // another replica committed since the read: carry the result onto that
			}
			return nil, err
		}
		s.cache.put(next)
		unlock()
		if out != res {
			s.stats.rebased.Add(1)
			s.stats.dropped.Add(int64(res.IntentConsolidations + res.PrefixConsolidations + res.Reinforced -
				out.IntentConsolidations - out.PrefixConsolidations - out.Reinforced))
		}
		s.changed(SessionUpdated, j.Tenant, j.Session, "")
		if len(out.Change.Jobs) > 0 {
			s.kick()
		}
		s.log.Debug("consolidated after the answer", logTenant, j.Tenant, logSession, j.Session, "rebased", out != res,
			"intent", out.IntentConsolidations, "prefix", out.PrefixConsolidations, "reinforced", out.Reinforced)
		return out, nil
	}
}

// lockSession takes the locks of every request that may continue the session (its name's, and,
// for a session found by content, its transcript's) and returns the session as it is under them,
// with their release.
func (s *Service) lockSession(ctx context.Context, tenant, id string) (*hippocam.Session, func(), error) {
	unlockName := s.locks.lock(tenant + "\x00n\x00" + baseName(id))
	for {
		sess, err := s.load(ctx, tenant, id)
		if err == nil && sess == nil {
			err = hippocam.Errorf(hippocam.ENOTFOUND, "session %q was deleted", id)
		}
		if err != nil {
			unlockName()
			return nil, nil, err
		}
		unlockHash := s.locks.lock(tenant + "\x00h\x00" + sess.Transcript.Hash)
		// A request found by content may have committed between the read and the lock: then
		// the transcript, and so the lock to take, moved on.
		again, err := s.load(ctx, tenant, id)
		if err == nil && again != nil && again.Transcript.Hash == sess.Transcript.Hash {
			return again, func() { unlockHash(); unlockName() }, nil
		}
		unlockHash()
	}
}
