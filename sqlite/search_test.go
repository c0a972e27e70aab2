package sqlite_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sqlite"
)

// TestDB_SearchIndex checks the FTS5 table behind Search: its rows go with their session, and a
// file made before the search migration gets its messages indexed.
func TestDB_SearchIndex(t *testing.T) {
	t.Run("DeleteSession", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "h.db")
		db := sqlite.New(path)
		if err := db.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, id := range []string{"s1", "s2"} {
			s := &hippocam.Session{Tenant: "acme", ID: id}
			if err := db.CreateSession(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			m := hippocam.Message{ID: "m1", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "the zebracode of " + id}
			if err := db.Commit(t.Context(), s, hippocam.Change{Ops: []hippocam.Op{hippocam.AppendOp(m)}}); err != nil {
				t.Fatal(err)
			}
		}
		indexed := func() int {
			var n int
			if err := rawQuery(t, path, `SELECT count(*) FROM message_search WHERE message_search MATCH 'zebracode'`, &n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := indexed(); n != 2 {
			t.Fatalf("%d index rows hold the word, want 2", n)
		}
		if err := db.DeleteSession(t.Context(), "acme", "s1"); err != nil {
			t.Fatal(err)
		}
		if n := indexed(); n != 1 {
			t.Errorf("after deleting s1, %d index rows hold the word, want 1 (s2's)", n)
		}
	})
	t.Run("Migration", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "old.db")
		old, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
		if err != nil {
			t.Fatal(err)
		}
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := old.ExecContext(t.Context(), q, args...); err != nil {
				t.Fatalf("%.60s: %v", q, err)
			}
		}
		exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
		for v, name := range []string{"0001_init.sql", "0002_transcript.sql", "0003_formats.sql"} {
			text, err := os.ReadFile(filepath.Join("migrations", name))
			if err != nil {
				t.Fatal(err)
			}
			exec(string(text))
			exec(`INSERT INTO schema_migrations VALUES (?, ?, 0)`, v+1, name)
		}
		exec(`INSERT INTO sessions (tenant, id, version, seq, stack, stack_log, rounds, usage, consolidations, depth, messages, created_at, updated_at)
			VALUES ('acme', 's1', 2, 4, '[]', '[]', '[]', '{}', '{}', 0, 2, 0, 0)`)
		for _, r := range []struct {
			id, parent, kind, content, ref, calls string
			pos                                   int
		}{
			{"m1", "r1", "raw", "the owner was Dana", "", "", 0},
			{"m2", "r1", "raw", "", "", `[{"id":"c","name":"read_file","arguments":"{\"path\":\"shop.csv\"}"}]`, 1},
			{"m3", "", "intent_memory", "I met the owner [ref:r1]", "r1", "", 0},
			{"m4", "", "raw", "now the owner is Eve", "", "", 1},
		} {
			var calls any
			if r.calls != "" {
				calls = r.calls
			}
			exec(`INSERT INTO messages (tenant, session_id, id, parent, pos, role, kind, content, tool_calls, tool_call_id, ref, tokens)
				VALUES ('acme', 's1', ?, ?, ?, 'user', ?, ?, ?, '', ?, 1)`, r.id, r.parent, r.pos, r.kind, r.content, calls, r.ref)
		}
		old.Close()

		db := sqlite.New(path)
		if err := db.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		hits, err := db.Search(t.Context(), "acme", "s1", "owner", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 2 || hits[0].Message.ID != "m4" || hits[1].Message.ID != "m1" || hits[1].Ref != "r1" {
			t.Errorf("hits after the migration = %+v, want m4 then m1 in r1", hits)
		}
		if hits, err := db.Search(t.Context(), "acme", "s1", "shop.csv", 10); err != nil || len(hits) != 1 || hits[0].Message.ID != "m2" {
			t.Errorf("a tool call's arguments after the migration: %+v, %v", hits, err)
		}
		s, err := db.Session(t.Context(), "acme", "s1")
		if err != nil || len(s.Context) != 2 {
			t.Fatalf("session after the migration: %+v, %v", s, err)
		}
		m := hippocam.Message{ID: "m5", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "the owner left"}
		if err := db.Commit(t.Context(), s, hippocam.Change{From: s.Version, Ops: []hippocam.Op{hippocam.AppendOp(m)}}); err != nil {
			t.Fatal(err)
		}
		if hits, err := db.Search(t.Context(), "acme", "s1", "owner", 1); err != nil || len(hits) != 1 || hits[0].Message.ID != "m5" {
			t.Errorf("a message committed after the migration comes first: %+v, %v", hits, err)
		}
	})
}
