package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/postgres"
	"github.com/jackc/pgx/v5"
)

// marker is a word that only the deleted session holds.
const marker = "quokkavelvet7731"

// TestDB_DeleteLeavesNoRows deletes a session that holds marker in its context, archive, search
// terms, snapshot and job, next to one that stays: no row of any table holds the marker or the
// session afterwards, and the tombstone keeps its hashes only. When the test's role may read the
// server's files (pg_read_server_files), it also reads the tables' files after the vacuum that
// DeleteSession runs and a checkpoint, reports what is left there, and checks that Purge leaves
// nothing (docs/storage.md).
func TestDB_DeleteLeavesNoRows(t *testing.T) {
	dsn := MustCreateSchema(t)
	db := postgres.New(dsn)
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	keep := create(t, db, "keep")
	commitOps(t, db, keep, nil, rawOps("k", 0, 40, "an ordinary message about the weather")...)
	secret := create(t, db, "secret")
	secret.Stack = hippocam.IntentStack{{Label: "plan " + marker, Done: "done", Start: "s1"}}
	secret.Transcript.Hash, secret.Transcript.PrevHash = "hash-after", "hash-before"
	secret.Pending = &hippocam.Pending{Closures: []hippocam.ClosedSpan{{Chain: []string{marker}}}}
	text := strings.Repeat("the secret is "+marker+" and more ", 200) // TOASTed too
	commitOps(t, db, secret, []hippocam.Job{{Kind: hippocam.JobConsolidate, Payload: []byte(marker)}}, rawOps("s", 1, 30, text)...)
	commitOps(t, db, keep, nil, rawOps("k", 40, 80, "more about the weather")...)
	commitOps(t, db, secret, nil, hippocam.ReplaceOp([]string{"s1", "s2", "s3"}, hippocam.Message{ID: "s99", Ref: "r1",
		Role: hippocam.RoleUser, Kind: hippocam.KindIntentMemory, Content: "we spoke of " + marker + " " + hippocam.RefTag("r1")}))

	tables := []string{"sessions", "messages", "jobs", "tombstones"}
	if n := rowsHolding(t, conn, tables, marker, "secret"); n == 0 {
		t.Fatal("no row holds the marker before the delete: the test cannot see it")
	}
	readable := checkpoint(t, conn)
	if readable && len(filesHolding(t, conn, marker)) == 0 {
		t.Fatal("no table file holds the marker before the delete: the test cannot see it")
	}

	if err := db.DeleteSession(t.Context(), "acme", "secret"); err != nil {
		t.Fatal(err)
	}
	if n := rowsHolding(t, conn, tables, marker, "secret"); n > 0 {
		t.Errorf("after the delete, %d rows still hold the marker or the session", n)
	}
	var hashes []string
	if err := conn.QueryRow(t.Context(), `SELECT array_agg(hash ORDER BY hash) FROM tombstones`).Scan(&hashes); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(hashes) != "[hash-after hash-before]" {
		t.Errorf("tombstones = %v", hashes)
	}
	if got, err := db.Session(t.Context(), "acme", "keep"); err != nil || len(got.Context) != 80 {
		t.Fatalf("the other session: %v", err)
	}
	if !readable {
		t.Log("the test's role cannot read the server's files: only the rows were checked")
		return
	}
	checkpoint(t, conn)
	if files := filesHolding(t, conn, marker); len(files) > 0 {
		// Plain VACUUM frees the dead rows' space without overwriting it, and a GIN index keeps
		// its keys; only a rewrite (VACUUM FULL, REINDEX) removes them (docs/storage.md).
		t.Logf("after the delete and VACUUM, the marker's bytes remain in the files of %v", files)
	}
	if err := db.Purge(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkpoint(t, conn)
	if files := filesHolding(t, conn, marker); len(files) > 0 {
		t.Errorf("after Purge, the marker is still in the files of %v", files)
	}
	if got, err := db.Session(t.Context(), "acme", "keep"); err != nil || len(got.Context) != 80 {
		t.Fatalf("the other session after Purge: %v", err)
	}
}

// rowsHolding counts the rows of tables whose text holds any of words.
func rowsHolding(tb testing.TB, conn *pgx.Conn, tables []string, words ...string) int {
	tb.Helper()
	total := 0
	for _, table := range tables {
		for _, w := range words {
			var n int
			q := `SELECT count(*) FROM ` + pgx.Identifier{table}.Sanitize() + ` AS t WHERE position($1 IN lower(t::text)) > 0`
			if table == "messages" {
				q = `SELECT count(*) FROM messages AS t WHERE position($1 IN lower(t::text)) > 0
					OR position(convert_to($1, 'UTF8') IN content) > 0 OR session_id = $1`
			}
			if err := conn.QueryRow(tb.Context(), q, w).Scan(&n); err != nil {
				tb.Fatalf("%s: %v", table, err)
			}
			total += n
		}
	}
	return total
}

// checkpoint flushes the server's buffers to the table files and reports whether this role
// may read them.
func checkpoint(tb testing.TB, conn *pgx.Conn) bool {
	tb.Helper()
	var may bool
	if err := conn.QueryRow(tb.Context(), `SELECT pg_has_role('pg_read_server_files', 'member')
		AND pg_has_role('pg_checkpoint', 'member')`).Scan(&may); err != nil {
		tb.Fatal(err)
	}
	if !may {
		return false
	}
	if _, err := conn.Exec(tb.Context(), `CHECKPOINT`); err != nil {
		tb.Fatal(err)
	}
	return true
}

// filesHolding returns the relations of the schema (tables, their TOAST tables and indexes)
// whose files hold word.
func filesHolding(tb testing.TB, conn *pgx.Conn, word string) []string {
	tb.Helper()
	rows, err := conn.Query(tb.Context(), `SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class AS c
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'i')
		   OR c.oid IN (SELECT reltoastrelid FROM pg_class WHERE relnamespace = current_schema()::regnamespace)
		   OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN
			(SELECT reltoastrelid FROM pg_class WHERE relnamespace = current_schema()::regnamespace))`)
	if err != nil {
		tb.Fatal(err)
	}
	type rel struct{ name, path string }
	var rels []rel
	for rows.Next() {
		var r rel
		if err := rows.Scan(&r.name, &r.path); err != nil {
			tb.Fatal(err)
		}
		rels = append(rels, r)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, r := range rels {
		var b []byte
		if err := conn.QueryRow(tb.Context(), `SELECT coalesce(pg_read_binary_file($1, 0, (pg_stat_file($1, true)).size, true), '')`,
			r.path).Scan(&b); err != nil {
			tb.Fatalf("read %s: %v", r.name, err)
		}
		if bytes.Contains(asciiLower(b), []byte(word)) {
			out = append(out, r.name)
		}
	}
	return out
}

func create(tb testing.TB, db *postgres.DB, id string) *hippocam.Session {
	tb.Helper()
	s := &hippocam.Session{Tenant: "acme", ID: id}
	if err := db.CreateSession(tb.Context(), s); err != nil {
		tb.Fatal(err)
	}
	return s
}

func commitOps(tb testing.TB, db *postgres.DB, s *hippocam.Session, jobs []hippocam.Job, ops ...hippocam.Op) {
	tb.Helper()
	if err := db.Commit(tb.Context(), s, hippocam.Change{From: s.Version, Ops: ops, Jobs: jobs}); err != nil {
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

// asciiLower lowers the ASCII letters of b and leaves every other byte as it is.
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}
