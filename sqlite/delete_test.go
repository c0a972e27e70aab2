package sqlite_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sqlite"
)

// marker is a word that only the deleted session holds.
const marker = "Quokkavelvet7731"

// TestDB_DeleteLeavesNoTrace writes a session that holds marker in its context, its archive,
// its search index and its snapshot, between the commits of a session that stays, deletes it,
// and reads every byte of the database file, its WAL and its shared-memory index: the marker is
// there before the delete and nowhere after.
func TestDB_DeleteLeavesNoTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hippocam.db")
	db := sqlite.New(path)
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	keep := create(t, db, "acme", "keep")
	commitOps(t, db, keep, rawOps("k", 0, 40, "an ordinary message about the weather")...)
	secret := create(t, db, "acme", "secret")
	secret.Stack = hippocam.IntentStack{{Label: "plan " + marker, Done: "done", Start: "s1"}}
	secret.Transcript.Framing = []hippocam.Message{{ID: "f1", Role: hippocam.RoleSystem, Kind: hippocam.KindRaw,
		Content: "You help with " + marker}}
	secret.Transcript.Hash, secret.Transcript.PrevHash = "hash-after", "hash-before"
	secret.Pending = &hippocam.Pending{Closures: []hippocam.ClosedSpan{{Chain: []string{marker}}}}
	text := strings.Repeat("the secret is "+marker+" and more ", 200) // overflow pages too
	commitOps(t, db, secret, rawOps("s", 1, 30, text)...)
	commitOps(t, db, keep, rawOps("k", 40, 80, "more about the weather")...)
	commitOps(t, db, secret, hippocam.ReplaceOp([]string{"s1", "s2", "s3"}, hippocam.Message{ID: "s99", Ref: "r1",
		Role: hippocam.RoleUser, Kind: hippocam.KindIntentMemory, Content: "we spoke of " + marker + " " + hippocam.RefTag("r1")}))

	if hits, err := db.Search(t.Context(), "acme", "secret", strings.ToLower(marker), 5); err != nil || len(hits) == 0 {
		t.Fatalf("search for the marker before the delete: %d hits, %v", len(hits), err)
	}
	if !inIndex(t, path, strings.ToLower(marker)) {
		t.Fatal("the search index does not hold the marker before the delete")
	}
	if files := filesHolding(t, path, marker); len(files) == 0 {
		t.Fatal("no database file holds the marker before the delete: the test cannot see it")
	}

	if err := db.DeleteSession(t.Context(), "acme", "secret"); err != nil {
		t.Fatal(err)
	}
	if files := filesHolding(t, path, marker); len(files) > 0 {
		t.Errorf("after the delete, the marker is still in %v", files)
	}
	if inIndex(t, path, strings.ToLower(marker)) {
		t.Error("after the delete, the search index still lists the marker")
	}
	if got, err := db.Session(t.Context(), "acme", "keep"); err != nil || len(got.Context) != 80 {
		t.Fatalf("the other session: %v", err)
	}
	if hits, err := db.Search(t.Context(), "acme", "keep", "weather", 100); err != nil || len(hits) != 80 {
		t.Errorf("search of the other session after the delete: %d hits, %v", len(hits), err)
	}
}

// TestDB_AutoVacuum checks that a new file has incremental auto-vacuum from the start and that
// opening a file made without it converts it.
func TestDB_AutoVacuum(t *testing.T) {
	t.Run("NewFile", func(t *testing.T) {
		db := MustOpenDB(t)
		wantAutoVacuum(t, db.Path)
	})
	t.Run("OldFile", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "old.db")
		conn, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(`PRAGMA journal_mode = WAL; CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('x')`); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		var mode int
		if err := rawQuery(t, path, `PRAGMA auto_vacuum`, &mode); err != nil || mode != 0 {
			t.Fatalf("the old file's auto_vacuum = %d, %v; want 0", mode, err)
		}
		db := sqlite.New(path)
		if err := db.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		wantAutoVacuum(t, path)
	})
}

func wantAutoVacuum(tb testing.TB, path string) {
	tb.Helper()
	var mode int
	if err := rawQuery(tb, path, `PRAGMA auto_vacuum`, &mode); err != nil || mode != 2 {
		tb.Errorf("auto_vacuum = %d, %v; want 2 (incremental)", mode, err)
	}
}

// filesHolding returns which of the database's files hold s, as it was written or in lower case.
func filesHolding(tb testing.TB, path, s string) []string {
	tb.Helper()
	var out []string
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		b, err := os.ReadFile(name)
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			tb.Fatal(err)
		}
		if bytes.Contains(b, []byte(s)) || bytes.Contains(bytes.ToLower(b), []byte(strings.ToLower(s))) {
			out = append(out, filepath.Base(name))
		}
	}
	return out
}

// inIndex reports whether the search index's vocabulary holds term. Terms are stored
// prefix-compressed, so reading the file's bytes cannot tell.
func inIndex(tb testing.TB, path, term string) bool {
	tb.Helper()
	conn, err := sql.Open("sqlite", path)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	if _, err := conn.Exec(`CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, message_search, 'row')`); err != nil {
		tb.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(`SELECT count(*) FROM temp.vocab WHERE term = ?`, term).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n > 0
}

func create(tb testing.TB, db *sqlite.DB, tenant, id string) *hippocam.Session {
	tb.Helper()
	s := &hippocam.Session{Tenant: tenant, ID: id}
	if err := db.CreateSession(tb.Context(), s); err != nil {
		tb.Fatal(err)
	}
	return s
}

func commitOps(tb testing.TB, db *sqlite.DB, s *hippocam.Session, ops ...hippocam.Op) {
	tb.Helper()
	if err := db.Commit(tb.Context(), s, hippocam.Change{From: s.Version, Ops: ops}); err != nil {
		tb.Fatal(err)
	}
}

// rawOps appends raw messages prefix+from to prefix+(to-1), each holding text.
func rawOps(prefix string, from, to int, text string) []hippocam.Op {
	var ops []hippocam.Op
	for i := from; i < to; i++ {
		ops = append(ops, hippocam.AppendOp(hippocam.Message{ID: fmt.Sprintf("%s%d", prefix, i), Role: hippocam.RoleUser,
			Kind: hippocam.KindRaw, Content: fmt.Sprintf("%s (%d)", text, i)}))
	}
	return ops
}
