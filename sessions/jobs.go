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
// from the store's queue, which every replica of one database shares, run them under the
// session's lock and commit with the session's version check; a job whose commit lost the race
// runs again on the newer state. A job that ran already finds nothing pending and finishes. A
// server that died mid-job leaves the job leased: when the lease runs out another worker (or
// the restarted server) takes it. A request that arrives while its session's job runs waits for
// it (the lock); one that arrives before a worker took the job runs it itself, first (the
// engine does that for any step that finds consolidation pending).

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
	// WaitsRunning counts requests that had to wait for a consolidation job of their session
	// that was running; WaitsInline those that found consolidation pending and ran it first.
	WaitsRunning, WaitsInline int64
	// VerdictWaits counts steps that waited for the JANUS verdict their session's previous step
	// left (engine.JanusBeside): its call was still running when they began.
	VerdictWaits int64
	// JobsDone counts jobs run to the end; JobsFailed runs that failed and were put back.
	JobsDone, JobsFailed int64
	// Stateless counts task starts the router could not route (they ran without memory);
	// Learned the cluster updates from ended tasks.
	Stateless, Learned int64
	// JobsLeftFailed counts jobs that failed maxJobAttempts times and were left failed.
	JobsLeftFailed int64
	// LessonsAdded, LessonsMerged and LessonsSuperseded count what lessons updates did.
	LessonsAdded, LessonsMerged, LessonsSuperseded int64
	// JobLag is the total time jobs waited from being queued to their first run, over
	// JobsStarted of them.
	JobLag      time.Duration
	JobsStarted int64
	// Configured and ConfigFailed count numeric clusters configured on their first reuse, and
	// those whose configuration failed for good (they give no numeric advisory).
	Configured, ConfigFailed int64
}

type stats struct {
	waitsRunning, waitsInline, verdictWaits, jobsDone, jobsFailed atomic.Int64
	stateless, learned, jobsGaveUp                                atomic.Int64
	lessonsAdded, lessonsMerged, lessonsSuperseded                atomic.Int64
	// lagNanos and lagged add up how long jobs waited from being queued to being run.
	lagNanos, lagged         atomic.Int64
	configured, configFailed atomic.Int64
}

// lessonEvents counts what a lessons update did.
func (st *stats) lessonEvents(ev map[string]int) {
	st.lessonsAdded.Add(int64(ev["added"]))
	st.lessonsMerged.Add(int64(ev["merged"]))
	st.lessonsSuperseded.Add(int64(ev["superseded"]))
}

// Stats returns the service's counters.
func (s *Service) Stats() Stats {
	return Stats{
		WaitsRunning: s.stats.waitsRunning.Load(), WaitsInline: s.stats.waitsInline.Load(),
		VerdictWaits: s.stats.verdictWaits.Load(),
		JobsDone:     s.stats.jobsDone.Load(), JobsFailed: s.stats.jobsFailed.Load(),
		Stateless: s.stats.stateless.Load(), Learned: s.stats.learned.Load(), JobsLeftFailed: s.stats.jobsGaveUp.Load(),
		LessonsAdded: s.stats.lessonsAdded.Load(), LessonsMerged: s.stats.lessonsMerged.Load(), LessonsSuperseded: s.stats.lessonsSuperseded.Load(),
		JobLag: time.Duration(s.stats.lagNanos.Load()), JobsStarted: s.stats.lagged.Load(),
		Configured: s.stats.configured.Load(), ConfigFailed: s.stats.configFailed.Load(),
	}
}

// QueuedJobs counts the store's queued jobs (running, due, or left failed).
func (s *Service) QueuedJobs(ctx context.Context) (int, error) { return s.cfg.Store.QueuedJobs(ctx) }

// running tracks the lock keys held by running jobs, so that a request can tell it waits for one.
type running struct {
	mu sync.Mutex
	m  map[string]int
}

func (r *running) add(keys []string, d int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		if r.m[k] += d; r.m[k] <= 0 {
			delete(r.m, k)
		}
	}
}

func (r *running) holds(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[key] > 0
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

// consolidate runs a session's pending consolidation under its locks and commits it. It returns
// the committed result, or nil when nothing was left to do.
func (s *Service) consolidate(ctx context.Context, j *hippocam.Job) (*engine.Result, error) {
	sess, err := s.cfg.Store.Session(ctx, j.Tenant, j.Session)
	if err != nil {
		return nil, err
	}
	if sess.Pending.Empty() {
		return nil, nil
	}
	// The locks of every request that may continue the session: its name's, and, for a
	// session found by content, its transcript's.
	keys := []string{j.Tenant + "\x00n\x00" + baseName(j.Session), j.Tenant + "\x00h\x00" + sess.Transcript.Hash}
	s.running.add(keys, 1)
	defer s.running.add(keys, -1)
	for _, k := range keys {
		defer s.locks.lock(k)()
	}
	if sess, err = s.load(ctx, j.Tenant, j.Session); err != nil {
		return nil, err
	} else if sess == nil {
		return nil, hippocam.Errorf(hippocam.ENOTFOUND, "session %q was deleted", j.Session)
	}
	if sess.Pending.Empty() {
		return nil, nil // a step ran it first, or an earlier run of this job did
	}
	res, err := s.cfg.Engine.Consolidate(ctx, sess, hippocam.SessionArchive(s.cfg.Store, j.Tenant, j.Session))
	if err != nil {
		return nil, err
	}
	next := res.Session
	next.UpdatedAt = time.Now().UTC()
	if err := s.cfg.Store.Commit(ctx, next, res.Change); err != nil {
		s.cache.drop(j.Tenant, j.Session)
		return nil, err
	}
	s.cache.put(next)
	s.changed(SessionUpdated, j.Tenant, j.Session, "")
	s.log.Debug("consolidated after the answer", logTenant, j.Tenant, logSession, j.Session,
		"intent", res.IntentConsolidations, "prefix", res.PrefixConsolidations, "reinforced", res.Reinforced)
	return res, nil
}
