package sqlite_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/storetest"
)

func TestDB(t *testing.T) {
	storetest.Run(t, func(t *testing.T) hippocam.Store { return MustOpenDB(t) })
}

// MustOpenDB opens a DB in a fresh file of the test's temporary directory and closes it when
// the test ends.
func MustOpenDB(tb testing.TB) *sqlite.DB {
	tb.Helper()
	db := sqlite.New(filepath.Join(tb.TempDir(), "hippocam.db"))
	if err := db.Open(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Error(err)
		}
	})
	return db
}

func TestDB_Open(t *testing.T) {
	t.Run("Reopen", func(t *testing.T) {
		// State survives closing and reopening the file, and migrations are applied once.
		path := filepath.Join(t.TempDir(), "nested", "dir", "hippocam.db")
		db := sqlite.New(path)
		if err := db.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		s := &hippocam.Session{Tenant: "acme", ID: "s1"}
		if err := db.CreateSession(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		m := hippocam.Message{ID: "m1", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "kept"}
		if err := db.Commit(t.Context(), s, hippocam.Change{From: 0, Ops: []hippocam.Op{hippocam.AppendOp(m)}}); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = sqlite.New(path)
		if err := db.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		got, err := db.Session(t.Context(), "acme", "s1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != 1 || len(got.Context) != 1 || got.Context[0].Content != "kept" {
			t.Errorf("reopened session = %+v", got)
		}
		var n, distinct int
		if err := rawQuery(t, path, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`, &n, &distinct); err != nil {
			t.Fatal(err)
		}
		if n == 0 || n != distinct {
			t.Errorf("schema_migrations holds %d rows for %d versions", n, distinct)
		}
		var mode string
		if err := rawQuery(t, path, `PRAGMA journal_mode`, &mode); err != nil || mode != "wal" {
			t.Errorf("journal_mode = %q, %v; want wal", mode, err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		err := sqlite.New("").Open(t.Context())
		if hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("err = %v, want %s", err, hippocam.EINVALID)
		}
	})
	t.Run("PathWithQueryCharacters", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "odd ?name#.db")
		db := sqlite.New(path)
		if err := db.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := os.Stat(path); err != nil {
			t.Errorf("the database is not at %q: %v", path, err)
		}
	})
}

// TestDB_TwoHandles races commits through two DBs on one file, as two processes would: the
// file's write lock serializes them and exactly one commit from a version wins.
func TestDB_TwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	var dbs [2]*sqlite.DB
	for i := range dbs {
		dbs[i] = sqlite.New(path)
		if err := dbs[i].Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer dbs[i].Close()
	}
	s := &hippocam.Session{Tenant: "acme", ID: "s1"}
	if err := dbs[0].CreateSession(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for w := range errs {
			wg.Go(func() {
				mine := *s
				m := hippocam.Message{ID: fmt.Sprintf("m%d.%d", round, w), Role: hippocam.RoleUser, Kind: hippocam.KindRaw}
				errs[w] = dbs[w%2].Commit(t.Context(), &mine, hippocam.Change{From: s.Version, Ops: []hippocam.Op{hippocam.AppendOp(m)}})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch hippocam.ErrorCode(err) {
			case "":
				won++
			case hippocam.ECONFLICT:
			default:
				t.Fatal(err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d commits won", round, won)
		}
		s.Version++
	}
	got, err := dbs[1].Session(t.Context(), "acme", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 20 || len(got.Context) != 20 {
		t.Errorf("version %d with %d messages, want 20", got.Version, len(got.Context))
	}
}

// rawQuery reads one row from the file with a connection of its own.
func rawQuery(tb testing.TB, path, query string, dst ...any) error {
	tb.Helper()
	conn, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.QueryRowContext(tb.Context(), query).Scan(dst...)
}
