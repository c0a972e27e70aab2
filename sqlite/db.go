// Package sqlite is a hippocam.Store in one SQLite file, through the pure-Go modernc.org/sqlite
// driver (no cgo). It is the embedded default (docs/architecture.md §8).
//
// The file runs in WAL mode. Writes go through a single connection whose transactions begin
// IMMEDIATE, so commits serialize in this process and take the file's write lock up front against
// other processes; reads use a pool of read-only connections and never wait for a writer.
//
// Deleted text leaves the files (docs/storage.md): every connection overwrites what it deletes
// (secure_delete), the search index drops deleted entries at once (its secure-delete option),
// the file uses incremental auto-vacuum, and DeleteSession gives the freed pages back and
// empties the WAL before it returns.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

var _ hippocam.Store = (*DB)(nil)

//go:embed migrations/*.sql
var migrations embed.FS

// busyTimeout is how long a connection waits for a lock another process holds.
const busyTimeout = 10 * time.Second

// DB is a Store in one SQLite file. Create it with New, then call Open.
type DB struct {
	// Path is the database file; Open creates it and its directory if needed.
	Path string
	// Now returns the current time; tests may replace it before Open.
	Now func() time.Time
	// Log receives what goes wrong after a change is committed (reclaiming a deleted session's
	// space); nil discards it.
	Log *slog.Logger
	// Synchronous is the file's synchronous setting: "FULL" (the default when empty) makes
	// every commit durable before it returns, power loss included; "NORMAL" syncs the WAL only
	// at checkpoints, so a power loss (not a crash of the process) may lose the last commits.
	Synchronous string

	write *sql.DB // one connection, IMMEDIATE transactions
	read  *sql.DB // read-only connections
	// stmts holds the statements every request runs, prepared by Open (stmt).
	stmts map[string]*sql.Stmt
}

// hotStatements are the statements every request runs: the version check and a commit's. SQLite
// takes longer to parse them than to run them, so Open prepares them once, on the write
// connection or the read pool (versionQuery).
var hotStatements = []string{versionQuery, commitUpdate, contextEndQuery, insertMessage, insertSearch}

// prepare prepares hotStatements.
func (db *DB) prepare(ctx context.Context) error {
	db.stmts = map[string]*sql.Stmt{}
	for _, q := range hotStatements {
		pool := db.write
		if q == versionQuery {
			pool = db.read
		}
		st, err := pool.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
		db.stmts[q] = st
	}
	return nil
}

// inTx runs one of hotStatements in tx, prepared.
func (db *DB) inTx(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	return tx.StmtContext(ctx, db.stmts[query])
}

// New returns a DB for the file at path. It does no I/O; call Open.
func New(path string) *DB {
	return &DB{Path: path, Now: time.Now}
}

// Open opens the file, creating it if needed, and applies the embedded migrations that it does
// not have yet, each in its own transaction. EINVALID for an empty path.
func (db *DB) Open(ctx context.Context) (err error) {
	if db.Path == "" {
		return hippocam.Errorf(hippocam.EINVALID, "sqlite: no database path")
	}
	if err := os.MkdirAll(filepath.Dir(db.Path), 0o700); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	if db.write, err = sql.Open("sqlite", db.dsn("_txlock=immediate")); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	db.write.SetMaxOpenConns(1)
	db.write.SetMaxIdleConns(1)
	db.write.SetConnMaxLifetime(0)
	db.write.SetConnMaxIdleTime(0)
	if err := db.write.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", db.Path, err)
	}
	if err := db.incrementalVacuum(ctx); err != nil {
		return err
	}
	if err := db.migrate(ctx); err != nil {
		return err
	}
	if db.read, err = sql.Open("sqlite", db.dsn("_pragma=query_only(1)")); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	n := max(4, runtime.NumCPU())
	db.read.SetMaxOpenConns(n)
	db.read.SetMaxIdleConns(n)
	if err := db.read.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", db.Path, err)
	}
	return db.prepare(ctx)
}

// dsn returns the driver's connection string for the file, with the pragmas every connection
// needs and the given extra parameters.
func (db *DB) dsn(extra string) string {
	q := []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) + ")",
		// Before anything else, so that a new file has it before its first table.
		"_pragma=auto_vacuum(INCREMENTAL)",
		"_pragma=journal_mode(WAL)",
		"_pragma=secure_delete(1)",                      // deleted content is overwritten, not only unlinked
		"_pragma=synchronous(" + db.synchronous() + ")", // FULL: a commit is durable before it returns (docs/architecture.md §7)
		"_pragma=foreign_keys(1)",
		extra,
	}
	return "file:" + (&url.URL{Path: db.Path}).EscapedPath() + "?" + strings.Join(q, "&")
}

func (db *DB) synchronous() string {
	if db.Synchronous == "NORMAL" {
		return "NORMAL"
	}
	return "FULL"
}

// Close closes the database. It is safe to call on a DB that did not open.
func (db *DB) Close() error {
	var errs []error
	for _, st := range db.stmts {
		errs = append(errs, st.Close())
	}
	db.stmts = nil
	for _, c := range []*sql.DB{db.read, db.write} {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	db.read, db.write = nil, nil
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("sqlite: close: %w", err)
		}
	}
	return nil
}

// incrementalVacuum makes sure the file uses incremental auto-vacuum, which DeleteSession needs
// to give freed pages back. A file created by this version has it from the start (dsn); an older
// one is rebuilt once, here, by a VACUUM that also drops the deleted content its free pages
// still held.
func (db *DB) incrementalVacuum(ctx context.Context) error {
	const incremental = 2
	var mode int
	if err := db.write.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil {
		return fmt.Errorf("sqlite: auto vacuum: %w", err)
	}
	if mode == incremental {
		return nil
	}
	if _, err := db.write.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
		return fmt.Errorf("sqlite: auto vacuum: %w", err)
	}
	if _, err := db.write.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("sqlite: vacuum %s: %w", db.Path, err)
	}
	return nil
}

// reclaim removes what a delete left of the deleted text and gives the space back. The search
// index, even with its secure-delete option, keeps a term whose every entry was deleted in the
// segment that held it, so its segments are merged into one ('optimize'), which drops such
// terms; then the file's free pages go back to the file system, and the WAL is checkpointed into
// the main file and truncated, so that the overwritten pages reach the main file and their
// former images leave the WAL. It runs after the delete committed: a failure (a reader of
// another process holding an old snapshot keeps the WAL from being emptied) is logged, and the
// next reclaim catches up.
func (db *DB) reclaim(ctx context.Context, op string) {
	ctx = context.WithoutCancel(ctx)
	if _, err := db.write.ExecContext(ctx, `INSERT INTO message_search (message_search) VALUES ('optimize')`); err != nil {
		db.logger().Warn("sqlite: search index merge failed", logOp, op, logErr, err)
	}
	if err := drain(db.write.QueryContext(ctx, `PRAGMA incremental_vacuum`)); err != nil {
		db.logger().Warn("sqlite: incremental vacuum failed", logOp, op, logErr, err)
		return
	}
	var busy, frames, done int
	if err := db.write.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil {
		db.logger().Warn("sqlite: checkpoint failed", logOp, op, logErr, err)
	} else if busy != 0 {
		db.logger().Warn("sqlite: checkpoint could not empty the WAL: a reader holds an old snapshot", logOp, op,
			"wal_frames", frames, "checkpointed", done)
	}
}

// Log keys.
const (
	logOp  = "op"
	logErr = "err"
)

func (db *DB) logger() *slog.Logger {
	if db.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return db.Log
}

// drain reads a statement's rows to the end: a pragma that does its work a row at a time stops
// when its rows are no longer read.
func drain(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

func (db *DB) now() time.Time { return db.Now().UTC().Truncate(time.Microsecond) }

// migrate applies, in order, the embedded migrations the database does not have yet. Files are
// named NNNN_what.sql; NNNN is the version recorded in schema_migrations.
func (db *DB) migrate(ctx context.Context) error {
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`
	if _, err := db.write.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	for _, name := range names { // fs.Glob returns names sorted
		if err := db.migrateFile(ctx, name); err != nil {
			return fmt.Errorf("sqlite: migrate %s: %w", name, err)
		}
	}
	return nil
}

func (db *DB) migrateFile(ctx context.Context, name string) error {
	base := filepath.Base(name)
	prefix, _, _ := strings.Cut(base, "_")
	version, err := strconv.Atoi(prefix)
	if err != nil {
		return fmt.Errorf("the name does not start with a version number")
	}
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		var done bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?)`, version).Scan(&done); err != nil || done {
			return err
		}
		text, err := fs.ReadFile(migrations, name)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(text)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			version, base, db.now().UnixMicro())
		return err
	})
}

// writeTx runs fn in a write transaction and commits it if fn returns nil.
func (db *DB) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
