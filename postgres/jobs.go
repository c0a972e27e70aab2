package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The job queue lives in the jobs table (migrations/0005), shared by every replica: a claim
// locks the row it takes and skips the rows other claims hold (FOR UPDATE SKIP LOCKED), so
// workers of several replicas never wait for each other nor take the same job. Leases are
// timed by the server's clock.

// enqueueJobs queues jobs for the session in a commit's transaction, or raises the generation of
// the job of the same kind already queued and makes it due now.
func enqueueJobs(ctx context.Context, tx pgx.Tx, tenant, session string, jobs []hippocam.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	var b pgx.Batch
	for _, j := range jobs {
		b.Queue(`INSERT INTO jobs (tenant, session, kind, payload) VALUES ($1, $2, $3, $4)
			ON CONFLICT (tenant, session, kind) DO UPDATE
			SET gen = jobs.gen + 1, payload = excluded.payload, run_after = now()`,
			tenant, session, j.Kind, j.Payload)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	return nil
}

// ClaimJob leases to owner the job that has been due longest (ties by id) among those not
// leased or whose lease has run out, counts the attempt and returns it; nil when none is due.
// Claims of several replicas at once each take a different job. EINVALID for a lease that is
// not positive.
func (db *DB) ClaimJob(ctx context.Context, owner string, lease time.Duration) (*hippocam.Job, error) {
	if lease <= 0 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "claim job: the lease must be positive")
	}
	j := &hippocam.Job{}
	err := db.pool.QueryRow(ctx, `UPDATE jobs SET lease_owner = $1, lease_until = now() + $2 * interval '1 microsecond',
			attempts = attempts + 1
		WHERE id = (SELECT id FROM jobs WHERE run_after <= now() AND (lease_until IS NULL OR lease_until <= now())
			ORDER BY run_after, id LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING id, tenant, session, kind, payload, attempts, created_at, gen`,
		owner, lease.Microseconds()).
		Scan(&j.ID, &j.Tenant, &j.Session, &j.Kind, &j.Payload, &j.Attempts, &j.CreatedAt, &j.Gen)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("postgres: claim job: %w", err)
	}
	j.CreatedAt = j.CreatedAt.UTC()
	return j, nil
}

// held is the condition that owner still holds the lease of the claim j came from; its
// parameters are $1 to $3: the job's id, owner and the claim's attempt number.
const held = `id = $1 AND lease_owner = $2 AND attempts = $3 AND lease_until IS NOT NULL`

// ExtendJob renews owner's lease of j for lease from now. ECONFLICT when owner no longer holds
// it (another owner claimed it after the lease ran out, or its session was deleted).
func (db *DB) ExtendJob(ctx context.Context, j *hippocam.Job, owner string, lease time.Duration) error {
	tag, err := db.pool.Exec(ctx, `UPDATE jobs SET lease_until = now() + $4 * interval '1 microsecond' WHERE `+held,
		j.ID, owner, j.Attempts, lease.Microseconds())
	return heldResult(tag, err, "extend", j)
}

// FinishJob removes j if it was not enqueued again since owner claimed it; otherwise it
// releases the lease and the job stays due. ECONFLICT when owner no longer holds it.
func (db *DB) FinishJob(ctx context.Context, j *hippocam.Job, owner string) error {
	// The row is locked first, so that an enqueue cannot commit between reading gen and acting
	// on it: it waits, and raises gen on whatever this leaves.
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var gen int64
		err := tx.QueryRow(ctx, `SELECT gen FROM jobs WHERE `+held+` FOR UPDATE`, j.ID, owner, j.Attempts).Scan(&gen)
		if errors.Is(err, pgx.ErrNoRows) {
			return lostLease(j)
		} else if err != nil {
			return err
		}
		if gen == j.Gen {
			_, err = tx.Exec(ctx, `DELETE FROM jobs WHERE id = $1`, j.ID)
		} else {
			_, err = tx.Exec(ctx, `UPDATE jobs SET lease_owner = '', lease_until = NULL WHERE id = $1`, j.ID)
		}
		return err
	})
	if err != nil && hippocam.ErrorCode(err) == hippocam.EINTERNAL {
		return fmt.Errorf("postgres: finish job: %w", err)
	}
	return err
}

// RetryJob releases owner's lease of j and makes it due after the delay, keeping reason as the
// job's last error. ECONFLICT when owner no longer holds it.
func (db *DB) RetryJob(ctx context.Context, j *hippocam.Job, owner string, after time.Duration, reason string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE jobs SET lease_owner = '', lease_until = NULL,
		run_after = now() + $4 * interval '1 microsecond', last_error = $5 WHERE `+held,
		j.ID, owner, j.Attempts, max(after, 0).Microseconds(), reason)
	return heldResult(tag, err, "retry", j)
}

// QueuedJobs counts the queued jobs, running or not.
func (db *DB) QueuedJobs(ctx context.Context) (int, error) {
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: queued jobs: %w", err)
	}
	return n, nil
}

// Jobs lists the tenant's queued jobs, oldest first (ties by id). Whether a lease is live is
// judged by the server's clock, as claims judge it.
func (db *DB) Jobs(ctx context.Context, tenant string) ([]hippocam.JobInfo, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, session, kind, attempts, last_error, run_after,
			coalesce(lease_until > now(), false), created_at
		FROM jobs WHERE tenant = $1 ORDER BY created_at, id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("postgres: jobs: %w", err)
	}
	out := []hippocam.JobInfo{}
	for rows.Next() {
		var j hippocam.JobInfo
		if err := rows.Scan(&j.ID, &j.Session, &j.Kind, &j.Attempts, &j.LastError, &j.DueAt, &j.Running, &j.CreatedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("postgres: jobs: %w", err)
		}
		j.DueAt, j.CreatedAt = j.DueAt.UTC(), j.CreatedAt.UTC()
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: jobs: %w", err)
	}
	return out, nil
}

// heldResult turns the result of a statement conditioned on held into ECONFLICT when it
// changed no row.
func heldResult(tag pgconn.CommandTag, err error, op string, j *hippocam.Job) error {
	if err != nil {
		return fmt.Errorf("postgres: %s job: %w", op, err)
	}
	if tag.RowsAffected() == 0 {
		return lostLease(j)
	}
	return nil
}

func lostLease(j *hippocam.Job) error {
	return hippocam.Errorf(hippocam.ECONFLICT, "job %d (%s of session %q): the lease is lost", j.ID, j.Kind, j.Session)
}
