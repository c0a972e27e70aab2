package hippocam

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
)

// Durable jobs (docs/architecture.md §7). A step answers first and consolidates after: the work it
// leaves (Session.Pending) and a job to do it are committed in the step's own transaction
// (Change.Jobs), so that a crash between the answer and the consolidation loses nothing: a worker
// of any replica that shares the store claims the job, runs it and commits the result with the
// session's version check. A job is idempotent by construction: its work is described by the
// session's state, which the job's own commit clears, so running it twice changes nothing the
// second time.

// JobConsolidate is the kind of the job that runs a session's pending consolidation.
const JobConsolidate = "consolidate"

// Job is one unit of durable background work on a session.
type Job struct {
	ID      int64  `json:"id"`
	Tenant  string `json:"tenant"`
	Session string `json:"session"`
	Kind    string `json:"kind"`
	// Payload is kind-specific; consolidation jobs carry none (their work is Session.Pending).
	Payload []byte `json:"payload,omitempty"`
	// Attempts counts the claims of this job so far, this one included.
	Attempts  int       `json:"attempts"`
	CreatedAt time.Time `json:"created_at"`
	// Gen is the job's generation when it was claimed: enqueuing the same kind for the same
	// session again while it runs raises it, and FinishJob then leaves the job queued, so that
	// work enqueued during a run is never dropped.
	Gen int64 `json:"gen"`
}

// JobQueue is the durable queue of a Store. Enqueuing happens only through Commit (Change.Jobs),
// in the same transaction as the state change that calls for the job. At most one job of a kind
// is queued per session: enqueuing it again while it is queued or running raises its generation.
// Deleting a session deletes its jobs.
type JobQueue interface {
	// ClaimJob leases the oldest job that is due and not leased (or whose lease has run out) to
	// owner for lease, and returns it; nil and no error when no job is due.
	ClaimJob(ctx context.Context, owner string, lease time.Duration) (*Job, error)
	// ExtendJob renews owner's lease of a running job. ECONFLICT when owner no longer holds it.
	ExtendJob(ctx context.Context, j *Job, owner string, lease time.Duration) error
	// FinishJob removes a job that owner ran to the end, unless it was enqueued again since it
	// was claimed (its generation moved): then the lease is released and the job stays due.
	FinishJob(ctx context.Context, j *Job, owner string) error
	// RetryJob releases owner's lease and makes the job due again after the given delay,
	// recording why it failed.
	RetryJob(ctx context.Context, j *Job, owner string, after time.Duration, reason string) error
	// QueuedJobs counts the jobs queued (running or not), for metrics and tests.
	QueuedJobs(ctx context.Context) (int, error)
	// Jobs lists the tenant's queued jobs, running or not, oldest first (ties by id), so that an
	// operator sees the work still to do and why it failed; an empty list when it has none.
	Jobs(ctx context.Context, tenant string) ([]JobInfo, error)
}

// JobInfo is one queued job as an operator sees it: whose it is, how often it ran, why its last
// run failed and when it is due next. A job that failed every retry stays queued with its error
// (sessions' worker gives it a long delay), so this is where a failed update shows.
type JobInfo struct {
	ID      int64  `json:"id"`
	Session string `json:"session"`
	Kind    string `json:"kind"`
	// Attempts counts the claims so far; LastError is why the latest failed run failed, empty
	// when none has.
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
	// DueAt is when the job may next be claimed.
	DueAt time.Time `json:"due_at"`
	// Running reports whether a worker holds a lease on it that has not run out.
	Running   bool      `json:"running"`
	CreatedAt time.Time `json:"created_at"`
}

// Pending is the consolidation steps left for after their answers: PRECIP for the spans of the
// intents they closed and for the recall exchanges their answers drew on, then the ordinary
// prefix check. It rides in the session's snapshot, committed with each step, and the
// consolidation job's commit removes the work it did. Several steps' work may wait here at once
// (docs/architecture.md §7): a step answers on the context as it stands unless the window or the
// lag bound needs the work done first. The spans it names stay protected from prefix folds
// until then.
type Pending struct {
	// Closures are JANUS's closures, in the order they happened.
	Closures []ClosedSpan `json:"closures,omitempty"`
	// Reinforce names the answers whose recall exchanges, committed just before each of them,
	// are to be consolidated, oldest first.
	Reinforce Reinforcements `json:"reinforce,omitempty"`
	// Start is the first message of the round the latest step that left work here served. Each
	// piece of work carries its own round (ClosedSpan.Start, Reinforcement.Start); this one stands
	// in for work stored before they did.
	Start string `json:"start,omitempty"`
	// Steps counts the steps that answered while work here was pending; each piece of work
	// records the count it was left at (Since), so that Lag says how far behind the oldest is.
	Steps int `json:"steps,omitempty"`
}

// Empty reports whether nothing is pending.
func (p *Pending) Empty() bool {
	return p == nil || (len(p.Closures) == 0 && len(p.Reinforce) == 0)
}

// Lag is how many steps have answered since the oldest work still pending was left: 0 when
// nothing is pending, or when only the last step left work.
func (p *Pending) Lag() int {
	if p.Empty() {
		return 0
	}
	oldest := p.Steps
	for _, c := range p.Closures {
		oldest = min(oldest, c.Since)
	}
	for _, r := range p.Reinforce {
		oldest = min(oldest, r.Since)
	}
	return p.Steps - oldest
}

// Clone returns a copy of p that shares nothing it may change (nil for nil).
func (p *Pending) Clone() *Pending {
	if p == nil {
		return nil
	}
	c := *p
	c.Closures = append([]ClosedSpan(nil), p.Closures...)
	c.Reinforce = append(Reinforcements(nil), p.Reinforce...)
	return &c
}

// ClosedSpan is one JANUS answer's closed intents, innermost first, with the guidance message that
// closed them and the intent chain (labels, broadest first) as it stood when they closed.
type ClosedSpan struct {
	Intents  []Intent `json:"intents"`
	Guidance string   `json:"guidance"`
	Chain    []string `json:"chain"`
	// Start is the first message of the round of the step that closed them (a new user request
	// there opens the next work and stays out of the span); Since is Pending.Steps when they were
	// left.
	Start string `json:"start,omitempty"`
	Since int    `json:"since,omitempty"`
}

// Key names the closure among the session's pending work: its guidance message is the
// closing step's own.
func (c *ClosedSpan) Key() string {
	k := "closed:" + c.Guidance
	for _, in := range c.Intents {
		k += "/" + in.Start
	}
	return k
}

// Reinforcement names an answer reached through recall: its exchanges, as the model last saw
// them, sit in the context right before it (KindRecall) until they are consolidated. Start and
// Since are as for ClosedSpan.
type Reinforcement struct {
	Answer string `json:"answer"`
	Start  string `json:"start,omitempty"`
	Since  int    `json:"since,omitempty"`
}

// Key names the reinforcement among the session's pending work.
func (r *Reinforcement) Key() string { return "recalled:" + r.Answer }

// Reinforcements are the pending reinforcements, oldest first. In JSON they are a list; a
// single object reads as a list of one (what was stored while one step's work at most could
// be pending).
type Reinforcements []Reinforcement

// UnmarshalJSON reads a list of reinforcements, a single one, or null.
func (r *Reinforcements) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		var one Reinforcement
		if err := json.Unmarshal(t, &one); err != nil {
			return err
		}
		*r = Reinforcements{one}
		return nil
	}
	var list []Reinforcement
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*r = list
	return nil
}
