// Package sqlite is a hippocam.Store in one SQLite file, through the pure-Go modernc.org/sqlite
// driver (no cgo). It is the embedded default (docs/architecture.md §8).
//
// The file runs in WAL mode. Writes go through a single connection whose transactions begin
// IMMEDIATE, so commits serialize in this process and take the file's write lock up front against
// other processes; reads use a pool of read-only connections and never wait for a writer.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
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

	write *sql.DB // one connection, IMMEDIATE transactions
	read  *sql.DB // read-only connections
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
	return nil
}

// dsn returns the driver's connection string for the file, with the pragmas every connection
// needs and the given extra parameters.
func (db *DB) dsn(extra string) string {
	q := []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) + ")",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(FULL)", // a commit is durable before it returns (docs/architecture.md §7)
		"_pragma=foreign_keys(1)",
		extra,
	}
	return "file:" + (&url.URL{Path: db.Path}).EscapedPath() + "?" + strings.Join(q, "&")
}

// Close closes the database. It is safe to call on a DB that did not open.
func (db *DB) Close() error {
	var errs []error
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
