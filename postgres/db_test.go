package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/postgres"
	"github.com/hippocam/hippocam/storetest"
	"github.com/jackc/pgx/v5"
)

// dsnEnv names the environment variable that holds the DSN of a database the tests may use.
const dsnEnv = "HIPPOCAM_TEST_POSTGRES"

func TestDB(t *testing.T) {
	if os.Getenv(dsnEnv) == "" {
		t.Skipf("set %s to a Postgres DSN to run the Postgres tests, e.g. %s='postgres://postgres@127.0.0.1:5432/test?sslmode=disable'", dsnEnv, dsnEnv)
	}
	pool := &schemaPool{base: os.Getenv(dsnEnv)}
	t.Cleanup(func() { pool.drop(t) })
	storetest.Run(t, func(t *testing.T) hippocam.Store { return pool.open(t) })
}

// schemaPool gives each subtest of the store suite a fresh, empty store in a migrated schema
// that an earlier subtest used and emptied: to the server, creating a schema and applying the
// migrations costs many times what deleting a few rows does, and the suite opens a store in
// every one of its hundred subtests.
type schemaPool struct {
	base string
	mu   sync.Mutex
	free []string // DSNs of empty, migrated schemas
	all  []string // every schema the pool created, dropped when the suite ends
}

// open opens a store in an empty schema of the pool, or in a new one, and gives the schema
// back, emptied, when the test ends (a failed test's schema is only dropped at the end).
func (p *schemaPool) open(t *testing.T) *postgres.DB {
	t.Helper()
	p.mu.Lock()
	var dsn string
	if n := len(p.free); n > 0 {
		dsn, p.free = p.free[n-1], p.free[:n-1]
	}
	p.mu.Unlock()
	if dsn == "" {
		schema, err := createSchema(t.Context(), p.base)
		if err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		p.all = append(p.all, schema)
		p.mu.Unlock()
		dsn = withSearchPath(t, p.base, schema)
	}
	db := postgres.New(dsn)
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		if t.Failed() {
			return
		}
		if err := emptySchema(dsn); err != nil {
			t.Logf("the schema is not reused: %v", err)
			return
		}
		p.mu.Lock()
		p.free = append(p.free, dsn)
		p.mu.Unlock()
	})
	return db
}

// drop drops every schema of the pool.
func (p *schemaPool) drop(t *testing.T) {
	for _, schema := range p.all {
		if err := dropSchema(p.base, schema); err != nil {
			t.Error(err)
		}
	}
}

// emptySchema deletes every row of the schema's tables but the migrations' record, tables that
// reference others first (the rest cascade), and restarts its sequences: the schema is then as
// the migrations left it.
func emptySchema(dsn string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DO $$
DECLARE r record;
BEGIN
	FOR r IN SELECT c.relname FROM pg_class c
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND c.relname <> 'schema_migrations'
		ORDER BY EXISTS (SELECT 1 FROM pg_constraint f WHERE f.conrelid = c.oid AND f.contype = 'f') DESC, c.relname
	LOOP
		EXECUTE format('DELETE FROM %I', r.relname);
	END LOOP;
	PERFORM setval(s.seqrelid, s.seqstart, false) FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
		WHERE c.relnamespace = current_schema()::regnamespace;
END $$`)
	return err
}

// MustOpenDB opens a DB in a fresh schema of the test database, and closes it and drops the
// schema when the test ends. It skips the test unless HIPPOCAM_TEST_POSTGRES holds a DSN.
func MustOpenDB(tb testing.TB) *postgres.DB {
	tb.Helper()
	db := postgres.New(MustCreateSchema(tb))
	if err := db.Open(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// MustCreateSchema creates a schema with a random name, drops it when the test ends, and returns a
// DSN whose search_path is that schema. It skips the test unless HIPPOCAM_TEST_POSTGRES holds
// a DSN.
func MustCreateSchema(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(dsnEnv)
	if base == "" {
		tb.Skipf("set %s to a Postgres DSN to run the Postgres tests, e.g. %s='postgres://postgres@127.0.0.1:5432/test?sslmode=disable'", dsnEnv, dsnEnv)
	}
	schema, err := createSchema(tb.Context(), base)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := dropSchema(base, schema); err != nil {
			tb.Error(err)
		}
	})
	return withSearchPath(tb, base, schema)
}

// createSchema creates a schema with a random name in the database at base and returns its name.
func createSchema(ctx context.Context, base string) (string, error) {
	schema := "hippocam_test_" + strings.ToLower(rand.Text()[:12])
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %v", dsnEnv, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", err
	}
	return schema, nil
}

// dropSchema drops the schema and everything in it.
func dropSchema(base, schema string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return fmt.Errorf("drop schema %s: %v", schema, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %v", schema, err)
	}
	return nil
}

// withSearchPath adds search_path=schema to a DSN in either URL or key=value form, and
// synchronous_commit=off: a test's commits need not wait for the disk (a crash of the server
// would lose the last ones, which no test does), only be visible and ordered as ever.
func withSearchPath(tb testing.TB, dsn, schema string) string {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " search_path=" + schema + " synchronous_commit=off"
	}
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatalf("%s: %v", dsnEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("synchronous_commit", "off")
	u.RawQuery = q.Encode()
	return fmt.Sprint(u)
}

func TestDB_Open(t *testing.T) {
	t.Run("ConcurrentOpen", func(t *testing.T) {
		// Replicas starting together apply each migration once, and all of them open.
		dsn := MustCreateSchema(t)
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				db := postgres.New(dsn)
				err := db.Open(t.Context())
				db.Close()
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var n, distinct int
		if err := conn.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &distinct); err != nil {
			t.Fatal(err)
		}
		if n == 0 || n != distinct {
			t.Errorf("schema_migrations holds %d rows for %d versions", n, distinct)
		}
	})
	t.Run("Reopen", func(t *testing.T) {
		dsn := MustCreateSchema(t)
		db := postgres.New(dsn)
		if err := db.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateSession(t.Context(), &hippocam.Session{Tenant: "acme", ID: "s1"}); err != nil {
			t.Fatal(err)
		}
		db.Close()
		db = postgres.New(dsn)
		if err := db.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Session(t.Context(), "acme", "s1"); err != nil {
			t.Errorf("after reopening: %v", err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		err := postgres.New("postgres://%zz").Open(t.Context())
		if hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("err = %v, want %s", err, hippocam.EINVALID)
		}
	})
	t.Run("ErrUnavailable", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		err := postgres.New("postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2").Open(ctx)
		if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE {
			t.Errorf("err = %v, want %s", err, hippocam.EUNAVAILABLE)
		}
	})
}
