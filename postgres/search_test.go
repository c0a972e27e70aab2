package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/postgres"
	"github.com/jackc/pgx/v5"
)

// TestDB_SearchMigration opens a schema made before the search migration: its messages are
// indexed, including contents that are not valid UTF-8, and commits after it come first.
func TestDB_SearchMigration(t *testing.T) {
	dsn := MustCreateSchema(t)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(t.Context(), q, args...); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`)
	for v, name := range []string{"0001_init.sql", "0002_transcript.sql", "0003_formats.sql"} {
		text, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		exec(string(text))
		exec(`INSERT INTO schema_migrations VALUES ($1, $2, now())`, v+1, name)
	}
	exec(`INSERT INTO sessions (tenant, id, version, seq, stack, stack_log, rounds, usage, consolidations, depth, messages, created_at, updated_at)
		VALUES ('acme', 's1', 2, 4, '[]', '[]', '[]', '{}', '{}', 0, 2, now(), now())`)
	for _, r := range []struct {
		id, parent, kind, ref string
		content               []byte
		pos                   int32
	}{
		{"m1", "r1", "raw", "", []byte("the owner was Dana"), 0},
		{"m2", "r1", "raw", "", []byte("owner\x00with a NUL and \xff invalid bytes"), 1},
		{"m3", "", "intent_memory", "r1", []byte("I met the owner [ref:r1]"), 0},
		{"m4", "", "raw", "", []byte("now the owner is Eve"), 1},
	} {
		exec(`INSERT INTO messages (tenant, session_id, id, parent, pos, role, kind, content, tool_call_id, ref, tokens)
			VALUES ('acme', 's1', $1, $2, $3, 'user', $4, $5, '', $6, 1)`, r.id, r.parent, r.pos, r.kind, r.content, r.ref)
	}

	db := postgres.New(dsn)
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hits, err := db.Search(t.Context(), "acme", "s1", "owner", 10)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.Message.ID
	}
	if len(hits) != 3 || ids[0] != "m4" || ids[2] != "m1" || hits[2].Ref != "r1" {
		t.Errorf("hits after the migration = %v, want m4, m2, m1 (m1 in r1)", ids)
	}
	s, err := db.Session(t.Context(), "acme", "s1")
	if err != nil {
		t.Fatal(err)
	}
	m := hippocam.Message{ID: "m5", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "the owner left"}
	if err := db.Commit(t.Context(), s, hippocam.Change{From: s.Version, Ops: []hippocam.Op{hippocam.AppendOp(m)}}); err != nil {
		t.Fatal(err)
	}
	if hits, err := db.Search(t.Context(), "acme", "s1", "owner", 1); err != nil || len(hits) != 1 || hits[0].Message.ID != "m5" {
		t.Errorf("a message committed after the migration comes first: %+v, %v", hits, err)
	}
}
