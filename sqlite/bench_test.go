package sqlite_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/storetest"
)

// BenchmarkRecall runs storetest.BenchRecall: Children of a random ref in a 100,000-message archive.
func BenchmarkRecall(b *testing.B) { storetest.BenchRecall(b, MustOpenDB(b)) }

// BenchmarkCommitAppend runs storetest.BenchCommitAppend: a one-message commit to a 10,000-message context.
func BenchmarkCommitAppend(b *testing.B) { storetest.BenchCommitAppend(b, MustOpenDB(b)) }

// BenchmarkConcurrentCommits has 64 sessions commit at once, each a one-message append to its
// own session, as 64 agents served together would: commits/s and the time a commit takes
// (ns/op is per commit across all of them), with each synchronous setting side by side.
func BenchmarkConcurrentCommits(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		b.Run("synchronous="+sync, func(b *testing.B) {
			db := sqlite.New(filepath.Join(b.TempDir(), "hippocam.db"))
			db.Synchronous = sync
			if err := db.Open(b.Context()); err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			const sessions = 64
			ss := make([]*hippocam.Session, sessions)
			for i := range ss {
				ss[i] = &hippocam.Session{Tenant: "acme", ID: fmt.Sprintf("s%02d", i)}
				if err := db.CreateSession(b.Context(), ss[i]); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			b.SetParallelism((sessions + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				s := ss[next.Add(1)-1]
				n := 0
				for pb.Next() {
					n++
					m := hippocam.Message{ID: fmt.Sprintf("m%d", n), Role: hippocam.RoleUser, Kind: hippocam.KindRaw,
						Content: "one more message from the agent", Tokens: 8}
					if err := db.Commit(b.Context(), s, hippocam.Change{From: s.Version, Ops: []hippocam.Op{hippocam.AppendOp(m)}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}
