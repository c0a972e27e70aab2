package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"strings"
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
	storetest.Run(t, func(t *testing.T) hippocam.Store { return MustOpenDB(t) })
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
	schema := "hippocam_test_" + strings.ToLower(rand.Text()[:12])
	conn, err := pgx.Connect(tb.Context(), base)
	if err != nil {
		tb.Fatalf("connect to %s: %v", dsnEnv, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(tb.Context(), "CREATE SCHEMA "+schema); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(tb, base, schema)
}

// withSearchPath adds search_path=schema to a DSN in either URL or key=value form.
func withSearchPath(tb testing.TB, dsn, schema string) string {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatalf("%s: %v", dsnEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
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
