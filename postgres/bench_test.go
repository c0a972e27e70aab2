package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/storetest"
)

// BenchmarkRecall measures Children (RECALL) of a random ref in a session whose archive holds
// 100,000 messages beneath three levels of memories.
func BenchmarkRecall(b *testing.B) {
	db := MustOpenDB(b)
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Now()
	refs := storetest.BuildArchive(b, db, rng, "acme", "s1", 100_000)
	b.Logf("built %d archive nodes in %v", len(refs), time.Since(t0).Round(time.Millisecond))
	children := 0
	for b.Loop() {
		kids, err := db.Children(b.Context(), "acme", "s1", refs[rng.IntN(len(refs))])
		if err != nil {
			b.Fatal(err)
		}
		children += len(kids)
	}
	b.ReportMetric(float64(children)/float64(b.N), "children/op")
}

// BenchmarkCommitAppend measures one commit that appends one message to a session with 10,000
// messages in its context.
func BenchmarkCommitAppend(b *testing.B) {
	db := MustOpenDB(b)
	s := storetest.BuildContext(b, db, "acme", "s1", 10_000)
	i := 0
	for b.Loop() {
		i++
		m := hippocam.Message{ID: fmt.Sprintf("x%d", i), Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "one more", Tokens: 3}
		if err := db.Commit(b.Context(), s, hippocam.Change{From: s.Version, Ops: []hippocam.Op{hippocam.AppendOp(m)}}); err != nil {
			b.Fatal(err)
		}
	}
}
