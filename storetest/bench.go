package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
)

// benchContent is a leaf's content in the benchmark data sets: about the size of a short tool
// result.
var benchContent = strings.Repeat("a line of tool output, with ünïcode; ", 12)

// BuildContext creates session id of tenant with n raw messages in its context, appended in
// commits of up to 1,000, and returns the session at its stored version.
func BuildContext(tb testing.TB, st hippocam.Store, tenant, id string, n int) *hippocam.Session {
	tb.Helper()
	s := mustCreate(tb, st, tenant, id)
	for i := 0; i < n; {
		var ops []hippocam.Op
		for ; i < n && len(ops) < 1000; i++ {
			ops = append(ops, hippocam.AppendOp(benchMessage(s)))
		}
		mustCommit(tb, st, s, ops...)
	}
	return s
}

// BuildArchive creates session id of tenant whose archive holds at least leaves raw messages
// beneath three levels of memories, each node holding 10 to 50 children, and returns the refs
// of every node. The leaves arrive in commits of 1,000 appends, each followed by a commit that
// folds them into first-level memories; then the memories are folded twice more.
func BuildArchive(tb testing.TB, st hippocam.Store, rng *rand.Rand, tenant, id string, leaves int) []string {
	tb.Helper()
	s := mustCreate(tb, st, tenant, id)
	var refs []string
	var level []string // the context ids of the current level's memories
	for n := 0; n < leaves; {
		ops := make([]hippocam.Op, 0, 1000)
		var ids []string
		for ; n < leaves && len(ops) < cap(ops); n++ {
			m := benchMessage(s)
			ops = append(ops, hippocam.AppendOp(m))
			ids = append(ids, m.ID)
		}
		mustCommit(tb, st, s, ops...)
		mems, ops := fold(s, rng, ids, &refs)
		mustCommit(tb, st, s, ops...)
		level = append(level, mems...)
	}
	for range 2 {
		mems, ops := fold(s, rng, level, &refs)
		mustCommit(tb, st, s, ops...)
		level = mems
	}
	return refs
}

// fold returns replace ops that fold ids, a run of the context, into memories of 10 to 50
// messages each, and the memories' ids; it adds their refs to refs.
func fold(s *hippocam.Session, rng *rand.Rand, ids []string, refs *[]string) ([]string, []hippocam.Op) {
	var mems []string
	var ops []hippocam.Op
	for len(ids) > 0 {
		k := min(len(ids), 10+rng.IntN(41))
		ref := s.NextID("r")
		mem := hippocam.Message{ID: s.NextID("m"), Role: hippocam.RoleUser, Kind: hippocam.KindIntentMemory, Ref: ref,
			Content: fmt.Sprintf("I did %d things. %s", k, hippocam.RefTag(ref)), Tokens: 20}
		ops = append(ops, hippocam.ReplaceOp(ids[:k], mem))
		mems = append(mems, mem.ID)
		*refs = append(*refs, ref)
		ids = ids[k:]
	}
	return mems, ops
}

func benchMessage(s *hippocam.Session) hippocam.Message {
	return hippocam.Message{ID: s.NextID("m"), Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: "call",
		Content: benchContent, Tokens: 100}
}

// BenchRecall measures Children (RECALL) of a random ref in a session of st whose archive holds
// 100,000 messages beneath three levels of memories. It reports the children read per op.
func BenchRecall(b *testing.B, st hippocam.Store) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Now()
	refs := BuildArchive(b, st, rng, "acme", "s1", 100_000)
	b.Logf("built %d archive nodes in %v", len(refs), time.Since(t0).Round(time.Millisecond))
	children := 0
	for b.Loop() {
		kids, err := st.Children(b.Context(), "acme", "s1", refs[rng.IntN(len(refs))])
		if err != nil {
			b.Fatal(err)
		}
		children += len(kids)
	}
	b.ReportMetric(float64(children)/float64(b.N), "children/op")
}

// BenchCommitAppend measures one commit that appends one message to a session of st with
// 10,000 messages in its context.
func BenchCommitAppend(b *testing.B, st hippocam.Store) {
	b.Helper()
	s := BuildContext(b, st, "acme", "s1", 10_000)
	i := 0
	for b.Loop() {
		i++
		m := hippocam.Message{ID: fmt.Sprintf("x%d", i), Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "one more", Tokens: 3}
		if err := st.Commit(b.Context(), s, hippocam.Change{From: s.Version, Ops: []hippocam.Op{hippocam.AppendOp(m)}}); err != nil {
			b.Fatal(err)
		}
	}
}
