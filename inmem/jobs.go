package inmem

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/hippocam/hippocam"
)

// job is one queued job: what ClaimJob hands out, plus its lease and schedule.
type job struct {
	hippocam.Job
	leaseOwner string
	leaseUntil time.Time // zero when not leased
	runAfter   time.Time
	lastError  string
}

// enqueue queues the jobs of a commit to ss's session, or raises the generation of the job of
// the same kind already queued and makes it due now. The caller holds st.mu.
func (st *Store) enqueue(k key, jobs []hippocam.Job, now time.Time) {
	for _, in := range jobs {
		jk := jobKey{k, in.Kind}
		if j, ok := st.jobs[jk]; ok {
			j.Gen++
			j.Payload = slices.Clone(in.Payload)
			j.runAfter = now
			continue
		}
		st.lastJob++
		st.jobs[jk] = &job{
			Job: hippocam.Job{ID: st.lastJob, Tenant: k.tenant, Session: k.id, Kind: in.Kind,
				Payload: slices.Clone(in.Payload), CreatedAt: now, Gen: 1},
			runAfter: now,
		}
	}
}

// deleteJobs removes the jobs of a session. The caller holds st.mu.
func (st *Store) deleteJobs(k key) {
	for jk := range st.jobs {
		if jk.session == k {
			delete(st.jobs, jk)
		}
	}
}

// jobKey names the one job of a kind a session may have queued.
type jobKey struct {
	session key
	kind    string
}

// ClaimJob leases to owner the job that has been due longest (ties by id) among those not
// leased or whose lease has run out, counts the attempt, and returns a copy; nil when none is
// due. EINVALID for a lease that is not positive.
func (st *Store) ClaimJob(ctx context.Context, owner string, lease time.Duration) (*hippocam.Job, error) {
	if lease <= 0 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "claim job: the lease must be positive")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.now()
	var best *job
	for _, j := range st.jobs {
		if j.runAfter.After(now) || (!j.leaseUntil.IsZero() && j.leaseUntil.After(now)) {
			continue
		}
		if best == nil || cmp.Or(j.runAfter.Compare(best.runAfter), cmp.Compare(j.ID, best.ID)) < 0 {
			best = j
		}
	}
	if best == nil {
		return nil, nil
	}
	best.leaseOwner, best.leaseUntil = owner, now.Add(lease)
	best.Attempts++
	out := best.Job
	out.Payload = slices.Clone(best.Payload)
	return &out, nil
}

// held returns the queued job j names if owner still holds the lease of that claim (the claim
// is told apart by its attempt number), else nil. The caller holds st.mu.
func (st *Store) held(j *hippocam.Job, owner string) *job {
	q, ok := st.jobs[jobKey{key{j.Tenant, j.Session}, j.Kind}]
	if !ok || q.ID != j.ID || q.leaseOwner != owner || q.leaseUntil.IsZero() || q.Attempts != j.Attempts {
		return nil
	}
	return q
}

// ExtendJob renews owner's lease of j for lease from now. ECONFLICT when owner no longer holds
// it (another owner claimed it after the lease ran out, or its session was deleted).
func (st *Store) ExtendJob(ctx context.Context, j *hippocam.Job, owner string, lease time.Duration) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	q := st.held(j, owner)
	if q == nil {
		return lostLease(j)
	}
	q.leaseUntil = st.now().Add(lease)
	return nil
}

// FinishJob removes j if it was not enqueued again since owner claimed it; otherwise it
// releases the lease and the job stays due. ECONFLICT when owner no longer holds it.
func (st *Store) FinishJob(ctx context.Context, j *hippocam.Job, owner string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	q := st.held(j, owner)
	if q == nil {
		return lostLease(j)
	}
	if q.Gen == j.Gen {
		delete(st.jobs, jobKey{key{j.Tenant, j.Session}, j.Kind})
		return nil
	}
	q.leaseOwner, q.leaseUntil = "", time.Time{}
	return nil
}

// RetryJob releases owner's lease of j and makes it due after the delay, keeping reason as the
// job's last error. ECONFLICT when owner no longer holds it.
func (st *Store) RetryJob(ctx context.Context, j *hippocam.Job, owner string, after time.Duration, reason string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	q := st.held(j, owner)
	if q == nil {
		return lostLease(j)
	}
	q.leaseOwner, q.leaseUntil = "", time.Time{}
	q.runAfter, q.lastError = st.now().Add(max(after, 0)), reason
	return nil
}

// QueuedJobs counts the queued jobs, running or not.
func (st *Store) QueuedJobs(ctx context.Context) (int, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return len(st.jobs), nil
}

// Jobs lists the tenant's queued jobs, oldest first (ties by id).
func (st *Store) Jobs(ctx context.Context, tenant string) ([]hippocam.JobInfo, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	now := st.now()
	out := []hippocam.JobInfo{}
	for _, j := range st.jobs {
		if j.Tenant != tenant {
			continue
		}
		out = append(out, hippocam.JobInfo{ID: j.ID, Session: j.Session, Kind: j.Kind, Attempts: j.Attempts,
			LastError: j.lastError, DueAt: j.runAfter, Running: j.leaseUntil.After(now), CreatedAt: j.CreatedAt})
	}
	slices.SortFunc(out, func(a, b hippocam.JobInfo) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func lostLease(j *hippocam.Job) error {
	return hippocam.Errorf(hippocam.ECONFLICT, "job %d (%s of session %q): the lease is lost", j.ID, j.Kind, j.Session)
}
