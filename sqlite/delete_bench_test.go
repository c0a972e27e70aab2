package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hippocam/hippocam/sqlite"
)

// BenchmarkDeleteSession measures what deleting a small session costs in a file that holds many
// other messages (secure_delete, the search index merge, incremental vacuum and the WAL
// checkpoint included): the writer is held that long.
func BenchmarkDeleteSession(b *testing.B) {
	for _, others := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			db := sqlite.New(filepath.Join(b.TempDir(), "hippocam.db"))
			if err := db.Open(b.Context()); err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			const per = 1000
			for k := 0; k < others/per; k++ {
				s := create(b, db, "acme", fmt.Sprintf("keep%d", k))
				for j := 0; j < per; j += 250 {
					commitOps(b, db, s, rawOps(fmt.Sprintf("k%d_", k), j, j+250, fmt.Sprintf("message about topic %d and the weather in town %d", k, j))...)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				id := fmt.Sprintf("gone%d", i)
				s := create(b, db, "acme", id)
				commitOps(b, db, s, rawOps("g", 0, 20, "a short session to delete, word"+id)...)
				b.StartTimer()
				if err := db.DeleteSession(b.Context(), "acme", id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
