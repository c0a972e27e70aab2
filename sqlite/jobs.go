package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hippocam/hippocam"
)

// The job queue lives in the jobs table (migrations/0005). Every write goes through the single
// write connection, so claims never race in this process, and the file's write lock orders
// them against other processes.

// enqueueJobs queues jobs for the session in a commit's transaction, or raises the generation of
// the job of the same kind already queued and makes it due now.
func enqueueJobs(ctx context.Context, tx *sql.Tx, tenant, session string, jobs []hippocam.Job, now time.Time) error {
	for _, j := range jobs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (tenant, session, kind, payload, run_after, created_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, session, kind) DO UPDATE SET gen = gen + 1, payload = excluded.payload, run_after = excluded.run_after`,
			tenant, session, j.Kind, j.Payload, now.UnixMicro(), now.UnixMicro()); err != nil {
			return fmt.Errorf("enqueue %s: %w", j.Kind, err)
		}
	}
	return nil
}

// ClaimJob leases to owner the job that has been due longest (ties by id) among those not
// leased or whose lease has run out, counts the attempt and returns it; nil when none is due.
// EINVALID for a lease that is not positive.
func (db *DB) ClaimJob(ctx context.Context, owner string, lease time.Duration) (*hippocam.Job, error) {
	if lease <= 0 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "claim job: the lease must be positive")
	}
	now := db.now()
	j := &hippocam.Job{}
	var created int64
	err := db.write.QueryRowContext(ctx, `UPDATE jobs SET lease_owner = ?, lease_until = ?, attempts = attempts + 1
		WHERE id = (SELECT id FROM jobs WHERE run_after <= ?3 AND lease_until <= ?3 ORDER BY run_after, id LIMIT 1)
		RETURNING id, tenant, session, kind, payload, attempts, created_at, gen`,
		owner, now.Add(lease).UnixMicro(), now.UnixMicro()).
		Scan(&j.ID, &j.Tenant, &j.Session, &j.Kind, &j.Payload, &j.Attempts, &created, &j.Gen)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("sqlite: claim job: %w", err)
	}
	j.CreatedAt = time.UnixMicro(created).UTC()
	return j, nil
}

// held is the condition that owner still holds the lease of the claim j came from.
const held = `id = ? AND lease_owner = ? AND attempts = ? AND lease_until > 0`

// ExtendJob renews owner's lease of j for lease from now. ECONFLICT when owner no longer holds
// it (another owner claimed it after the lease ran out, or its session was deleted).
func (db *DB) ExtendJob(ctx context.Context, j *hippocam.Job, owner string, lease time.Duration) error {
	return db.updateHeld(ctx, "extend", j, `UPDATE jobs SET lease_until = ? WHERE `+held,
		db.now().Add(lease).UnixMicro(), j.ID, owner, j.Attempts)
}

// FinishJob removes j if it was not enqueued again since owner claimed it; otherwise it
// releases the lease and the job stays due. ECONFLICT when owner no longer holds it.
func (db *DB) FinishJob(ctx context.Context, j *hippocam.Job, owner string) error {
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE `+held+` AND gen = ?`, j.ID, owner, j.Attempts, j.Gen)
		if err != nil {
			return fmt.Errorf("sqlite: finish job: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("sqlite: finish job: %w", err)
		} else if n == 1 {
			return nil
		}
		res, err = tx.ExecContext(ctx, `UPDATE jobs SET lease_owner = '', lease_until = 0 WHERE `+held, j.ID, owner, j.Attempts)
		return heldResult(res, err, "finish", j)
	})
}

// RetryJob releases owner's lease of j and makes it due after the delay, keeping reason as the
// job's last error. ECONFLICT when owner no longer holds it.
func (db *DB) RetryJob(ctx context.Context, j *hippocam.Job, owner string, after time.Duration, reason string) error {
	return db.updateHeld(ctx, "retry", j, `UPDATE jobs SET lease_owner = '', lease_until = 0, run_after = ?, last_error = ?
		WHERE `+held, db.now().Add(max(after, 0)).UnixMicro(), reason, j.ID, owner, j.Attempts)
}

// QueuedJobs counts the queued jobs, running or not.
func (db *DB) QueuedJobs(ctx context.Context) (int, error) {
	var n int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM jobs`).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: queued jobs: %w", err)
	}
	return n, nil
}

// Jobs lists the tenant's queued jobs, oldest first (ties by id).
func (db *DB) Jobs(ctx context.Context, tenant string) ([]hippocam.JobInfo, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT id, session, kind, attempts, last_error, run_after, lease_until > ?, created_at
		FROM jobs WHERE tenant = ? ORDER BY created_at, id`, db.now().UnixMicro(), tenant)
	if err != nil {
		return nil, fmt.Errorf("sqlite: jobs: %w", err)
	}
	defer rows.Close()
	out := []hippocam.JobInfo{}
	for rows.Next() {
		var j hippocam.JobInfo
		var due, created int64
		if err := rows.Scan(&j.ID, &j.Session, &j.Kind, &j.Attempts, &j.LastError, &due, &j.Running, &created); err != nil {
			return nil, fmt.Errorf("sqlite: jobs: %w", err)
		}
		j.DueAt, j.CreatedAt = time.UnixMicro(due).UTC(), time.UnixMicro(created).UTC()
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: jobs: %w", err)
	}
	return out, nil
}

func (db *DB) updateHeld(ctx context.Context, op string, j *hippocam.Job, query string, args ...any) error {
	res, err := db.write.ExecContext(ctx, query, args...)
	return heldResult(res, err, op, j)
}

// heldResult turns the result of a statement conditioned on held into ECONFLICT when it
// changed no row.
func heldResult(res sql.Result, err error, op string, j *hippocam.Job) error {
	if err != nil {
		return fmt.Errorf("sqlite: %s job: %w", op, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: %s job: %w", op, err)
	} else if n == 0 {
		return hippocam.Errorf(hippocam.ECONFLICT, "job %d (%s of session %q): the lease is lost", j.ID, j.Kind, j.Session)
	}
	return nil
}
