package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/hippocam/hippocam/sqlite"
)

func TestZZPlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	MustOpenDBAt(t, path)
	conn, _ := sql.Open("sqlite", path)
	defer conn.Close()
	for _, q := range []string{
		`SELECT EXISTS (SELECT 1 FROM messages WHERE tenant = ?1 AND session_id = ?2 AND id = ?3), EXISTS (SELECT 1 FROM messages WHERE tenant = ?1 AND session_id = ?2 AND ref = ?4)`,
		`SELECT EXISTS (SELECT 1 FROM messages WHERE tenant = ?1 AND session_id = ?2 AND ref = ?4 AND ref <> '')`,
		`SELECT COALESCE(MAX(pos), -1) + 1 FROM messages WHERE tenant = ?1 AND session_id = ?2 AND parent = ''`,
		`SELECT j.value, m.parent, m.pos FROM json_each(?1) AS j LEFT JOIN messages AS m ON m.tenant = ?2 AND m.session_id = ?3 AND m.id = j.value ORDER BY j.key`,
		`SELECT count(*) FROM messages WHERE tenant = ?1 AND session_id = ?2 AND parent = '' AND pos BETWEEN ?3 AND ?4`,
		`UPDATE messages SET parent = ?1, pos = j.key FROM json_each(?4) AS j WHERE messages.tenant = ?2 AND messages.session_id = ?3 AND messages.id = j.value`,
		`SELECT id FROM messages WHERE tenant = ?1 AND session_id = ?2 AND parent = ?3 ORDER BY pos`,
		`SELECT id FROM sessions WHERE tenant = ?1 ORDER BY updated_at DESC, id`,
	} {
		rows, err := conn.Query("EXPLAIN QUERY PLAN "+q, "[]", "a", "b", "c")
		if err != nil {
			t.Fatal(err)
		}
		t.Log(q[:60])
		for rows.Next() {
			var id, parent, notused int
			var detail string
			rows.Scan(&id, &parent, &notused, &detail)
			t.Log("   ", detail)
		}
		rows.Close()
	}
}

func MustOpenDBAt(tb testing.TB, path string) {
	db := sqlite.New(path)
	if err := db.Open(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	db.Close()
}
