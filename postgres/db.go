// Package postgres is a hippocam.Store in PostgreSQL through pgx, for deployments with several
// server replicas sharing one database (docs/architecture.md §8).
//
// Commits run at READ COMMITTED and claim the session row first (UPDATE … WHERE version = From),
// so commits to one session serialize on its row lock and a stale one finds the version moved
// and fails with ECONFLICT; commits to different sessions never wait for each other. Session
// reads its row and context in one REPEATABLE READ snapshot.
package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ hippocam.Store = (*DB)(nil)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the key of the advisory lock that serializes migrations, so that replicas
// starting together apply each one once.
const migrationLock = 0x6869_7070_6f63_616d // "hippocam"

// DB is a Store in a PostgreSQL database. Create it with New, then call Open.
type DB struct {
	// DSN is the connection string, as a URL or key=value pairs. Unknown parameters become
	// session settings, so "search_path=myschema" puts the tables in that schema.
	DSN string
	// Now returns the current time; tests may replace it before Open.
	Now func() time.Time
	// SkipVacuum leaves the space of deleted sessions to autovacuum instead of vacuuming the
	// tables after each DeleteSession (docs/storage.md says what either leaves behind).
	SkipVacuum bool
	// Log receives what goes wrong after a change is committed (vacuuming after a delete); nil
	// discards it.
	Log *slog.Logger

	pool *pgxpool.Pool
}

// New returns a DB for the database at dsn. It does no I/O; call Open.
func New(dsn string) *DB {
	return &DB{DSN: dsn, Now: time.Now}
}

// Open connects and applies the embedded migrations the database does not have yet, each in
// its own transaction. EINVALID for a DSN that does not parse; EUNAVAILABLE if the server
// cannot be reached.
func (db *DB) Open(ctx context.Context) error {
	cfg, err := pgxpool.ParseConfig(db.DSN)
	if err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "postgres: the DSN does not parse")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres: open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return hippocam.Errorf(hippocam.EUNAVAILABLE, "postgres: cannot reach the database: %v", err)
	}
	db.pool = pool
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return err
	}
	return nil
}

// Close closes the connection pool. It is safe to call on a DB that did not open.
func (db *DB) Close() error {
	if db.pool != nil {
		db.pool.Close()
		db.pool = nil
	}
	return nil
}

// vacuumTables are the tables a deleted session had rows in; their TOAST tables are vacuumed
// with them.
var vacuumTables = []string{"messages", "sessions", "jobs"}

// vacuum vacuums the tables a deleted session had rows in, so that the space of its dead rows
// is free to reuse at once and empty pages at a table's end go back to the file system. The
// rows' bytes stay in the pages until new rows overwrite them, and in the WAL, backups and
// replicas until those roll over (docs/storage.md). VACUUM cannot run in a transaction; it runs
// after the delete committed, and a failure is logged, not returned: autovacuum gets there later.
func (db *DB) vacuum(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for _, table := range vacuumTables {
		if _, err := db.pool.Exec(ctx, `VACUUM `+pgx.Identifier{table}.Sanitize()); err != nil {
			db.logger().Warn("postgres: vacuum after delete failed", logTable, table, logErr, err)
		}
	}
}

// Purge rewrites the tables deleted sessions had rows in (VACUUM FULL), so that their bytes
// leave the tables' files and indexes, GIN keys included, and the space goes back to the file
// system. It takes each table's exclusive lock while it rewrites it: every replica's reads and
// commits wait, so it is for a maintenance window (docs/storage.md). The server's WAL, its
// backups and its standbys keep their copies until they roll over.
func (db *DB) Purge(ctx context.Context) error {
	for _, table := range vacuumTables {
		if _, err := db.pool.Exec(ctx, `VACUUM FULL `+pgx.Identifier{table}.Sanitize()); err != nil {
			return fmt.Errorf("postgres: purge %s: %w", table, err)
		}
	}
	return nil
}

// Log keys.
const (
	logTable = "table"
	logErr   = "err"
)

func (db *DB) logger() *slog.Logger {
	if db.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return db.Log
}

func (db *DB) now() time.Time { return db.Now().UTC().Truncate(time.Microsecond) }

// migrate applies, in order, the embedded migrations the database does not have yet. Files are
// named NNNN_what.sql; NNNN is the version recorded in schema_migrations.
func (db *DB) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	for _, name := range names { // fs.Glob returns names sorted
		if err := db.migrateFile(ctx, name); err != nil {
			return fmt.Errorf("postgres: migrate %s: %w", name, err)
		}
	}
	return nil
}

func (db *DB) migrateFile(ctx context.Context, name string) error {
	base := path.Base(name)
	prefix, _, _ := strings.Cut(base, "_")
	version, err := strconv.Atoi(prefix)
	if err != nil {
		return fmt.Errorf("the name does not start with a version number")
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`); err != nil {
			return err
		}
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&done); err != nil || done {
			return err
		}
		text, err := fs.ReadFile(migrations, name)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, string(text)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
			version, base, db.now())
		return err
	})
}
