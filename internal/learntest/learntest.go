// Package learntest holds the fixtures the tests of the learning layer share: a learning
// environment over the simulated model, and the cluster stores the memory systems' conformance
// suite (memory/memorytest) runs on. The suite itself takes both from its caller; this package
// is where this repository's tests choose them.
package learntest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/memorytest"
	"github.com/hippocam/hippocam/postgres"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
	"github.com/jackc/pgx/v5"
)

// PostgresEnv names the environment variable that holds the DSN of a Postgres database the
// tests may use; without it the Postgres store is left out.
const PostgresEnv = "HIPPOCAM_TEST_POSTGRES"

// Env returns a learning environment over a fresh simulated model and the default tokenizer,
// with usage metered by role.
func Env(t testing.TB) *learn.Env {
	t.Helper()
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	return &learn.Env{Model: learn.NewMeter(sim.New(tok).InProcess(), hippocam.DefaultPrices), Tok: tok}
}

// Stores returns the stores every system runs on: the in-memory store, SQLite in a temporary
// file, and Postgres in a fresh schema when PostgresEnv holds a DSN.
func Stores() []memorytest.Store {
	list := []memorytest.Store{
		{Name: "inmem", Open: func(t *testing.T) hippocam.ClusterStore { return inmem.New() }},
		{Name: "sqlite", Open: openSQLite},
	}
	if os.Getenv(PostgresEnv) != "" {
		list = append(list, memorytest.Store{Name: "postgres", Open: openPostgres})
	}
	return list
}

// Suite completes s with this repository's fixtures where it leaves them out: Env and the
// Stores.
func Suite(s memorytest.Suite) memorytest.Suite {
	if s.Env == nil {
		s.Env = Env
	}
	if s.Stores == nil {
		s.Stores = Stores()
	}
	return s
}

func openSQLite(t *testing.T) hippocam.ClusterStore {
	t.Helper()
	db := sqlite.New(filepath.Join(t.TempDir(), "clusters.db"))
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openPostgres opens a store in a schema of its own, dropped when the test ends.
func openPostgres(t *testing.T) hippocam.ClusterStore {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	schema := "hippocam_memorytest_" + strings.ToLower(rand.Text()[:12])
	exec := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	db := postgres.New(withSearchPath(t, base, schema))
	t.Cleanup(func() {
		db.Close()
		if err := exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

// withSearchPath adds search_path=schema to a DSN in either URL or key=value form.
func withSearchPath(t *testing.T, dsn, schema string) string {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return fmt.Sprint(u)
}
