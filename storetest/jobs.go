package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
)

// testJobs checks the durable job queue: jobs enter with their commit and only with it, come
// out oldest first, once per lease, and leave only when the run that finishes them saw the
// latest work.
func testJobs(t *testing.T, open func(t *testing.T) hippocam.Store) {
	t.Run("Claim", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate, Payload: []byte("p1")}}, hippocam.AppendOp(raw("m1", "one")))
		wantQueued(t, st, 1)
		j := mustClaim(t, st, "w1", time.Hour)
		if j == nil {
			t.Fatal("no job claimed")
		}
		if j.Tenant != "acme" || j.Session != "s1" || j.Kind != hippocam.JobConsolidate || string(j.Payload) != "p1" ||
			j.Attempts != 1 || j.Gen != 1 || j.ID == 0 || j.CreatedAt.IsZero() {
			t.Errorf("claimed %+v", j)
		}
		if again := mustClaim(t, st, "w2", time.Hour); again != nil {
			t.Errorf("a leased job was claimed again: %+v", again)
		}
		if err := st.FinishJob(t.Context(), j, "w1"); err != nil {
			t.Fatal(err)
		}
		wantQueued(t, st, 0)
		if again := mustClaim(t, st, "w2", time.Hour); again != nil {
			t.Errorf("a finished job was claimed: %+v", again)
		}
		wantCode(t, st.FinishJob(t.Context(), j, "w1"), hippocam.ECONFLICT)
	})
	t.Run("Order", func(t *testing.T) {
		st := open(t)
		var want []string
		for _, id := range []string{"c", "a", "b"} {
			s := mustCreate(t, st, "acme", id)
			mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
			want = append(want, id)
			tick()
		}
		var got []string
		for {
			j := mustClaim(t, st, "w", time.Hour)
			if j == nil {
				break
			}
			got = append(got, j.Session)
		}
		if !slices.Equal(got, want) {
			t.Errorf("claimed %v, want the order they were queued in, %v", got, want)
		}
	})
	t.Run("OnePerKind", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate, Payload: []byte("later")}})
		wantQueued(t, st, 1)
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: "other"}})
		wantQueued(t, st, 2)
		j := mustClaim(t, st, "w", time.Hour)
		if j == nil || j.Kind != hippocam.JobConsolidate || j.Gen != 2 || string(j.Payload) != "later" {
			t.Errorf("claimed %+v, want the consolidation at generation 2 with the latest payload", j)
		}
	})
	t.Run("LeaseExpires", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
		const lease = 50 * time.Millisecond
		first := mustClaim(t, st, "w1", lease)
		if j := mustClaim(t, st, "w2", lease); j != nil {
			t.Fatalf("claimed a job under a live lease: %+v", j)
		}
		time.Sleep(2 * lease)
		second := mustClaim(t, st, "w2", time.Hour)
		if second == nil || second.ID != first.ID || second.Attempts != 2 {
			t.Fatalf("after the lease ran out, claimed %+v; want job %d at attempt 2", second, first.ID)
		}
		// The first owner lost the job: nothing it does counts any more.
		wantCode(t, st.ExtendJob(t.Context(), first, "w1", time.Hour), hippocam.ECONFLICT)
		wantCode(t, st.FinishJob(t.Context(), first, "w1"), hippocam.ECONFLICT)
		wantCode(t, st.RetryJob(t.Context(), first, "w1", 0, "late"), hippocam.ECONFLICT)
		wantQueued(t, st, 1)
		if err := st.FinishJob(t.Context(), second, "w2"); err != nil {
			t.Fatal(err)
		}
		wantQueued(t, st, 0)
	})
	t.Run("SameOwnerReclaims", func(t *testing.T) {
		// A claim is told apart from the next by its attempt, not only by its owner.
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
		const lease = 50 * time.Millisecond
		first := mustClaim(t, st, "w", lease)
		time.Sleep(2 * lease)
		second := mustClaim(t, st, "w", time.Hour)
		if second == nil {
			t.Fatal("the job was not claimed again")
		}
		wantCode(t, st.FinishJob(t.Context(), first, "w"), hippocam.ECONFLICT)
		wantQueued(t, st, 1)
	})
	t.Run("Extend", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
		const lease = 50 * time.Millisecond
		j := mustClaim(t, st, "w1", lease)
		if err := st.ExtendJob(t.Context(), j, "w1", time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * lease)
		if other := mustClaim(t, st, "w2", time.Hour); other != nil {
			t.Errorf("an extended lease ran out: %+v", other)
		}
		wantCode(t, st.ExtendJob(t.Context(), j, "w2", time.Hour), hippocam.ECONFLICT)
	})
	t.Run("EnqueuedDuringRun", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
		j := mustClaim(t, st, "w", time.Hour)
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
		if err := st.FinishJob(t.Context(), j, "w"); err != nil {
			t.Fatal(err)
		}
		wantQueued(t, st, 1)
		again := mustClaim(t, st, "w", time.Hour)
		if again == nil || again.ID != j.ID || again.Gen != j.Gen+1 {
			t.Fatalf("claimed %+v after a run that missed new work; want job %d at generation %d", again, j.ID, j.Gen+1)
		}
		if err := st.FinishJob(t.Context(), again, "w"); err != nil {
			t.Fatal(err)
		}
		wantQueued(t, st, 0)
	})
	t.Run("Retry", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
		j := mustClaim(t, st, "w", time.Hour)
		if err := st.RetryJob(t.Context(), j, "w", time.Hour, "model unavailable"); err != nil {
			t.Fatal(err)
		}
		if later := mustClaim(t, st, "w", time.Hour); later != nil {
			t.Errorf("claimed a job before its retry was due: %+v", later)
		}
		wantQueued(t, st, 1)
		// Enqueuing it again makes it due at once.
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
		again := mustClaim(t, st, "w", time.Hour)
		if again == nil || again.Attempts != 2 {
			t.Fatalf("claimed %+v, want the job again at attempt 2", again)
		}
		if err := st.RetryJob(t.Context(), again, "w", 0, "once more"); err != nil {
			t.Fatal(err)
		}
		if now := mustClaim(t, st, "w", time.Hour); now == nil || now.Attempts != 3 {
			t.Errorf("claimed %+v, want the job due at once at attempt 3", now)
		}
	})
	t.Run("Concurrent", func(t *testing.T) { testJobsConcurrent(t, open) })
	t.Run("List", func(t *testing.T) { testJobsList(t, open) })
	t.Run("DeleteSession", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		keep := mustCreate(t, st, "acme", "s2")
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}, {Kind: "other"}})
		mustCommitJobs(t, st, keep, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
		j := mustClaim(t, st, "w", time.Hour)
		if j == nil || j.Session != "s1" {
			t.Fatalf("claimed %+v, want a job of s1", j)
		}
		if err := st.DeleteSession(t.Context(), "acme", "s1"); err != nil {
			t.Fatal(err)
		}
		wantQueued(t, st, 1)
		wantCode(t, st.FinishJob(t.Context(), j, "w"), hippocam.ECONFLICT)
		if next := mustClaim(t, st, "w", time.Hour); next == nil || next.Session != "s2" {
			t.Errorf("claimed %+v, want s2's job", next)
		}
		// A session re-created under the name starts with no jobs.
		mustCreate(t, st, "acme", "s1")
		wantQueued(t, st, 1)
	})
	t.Run("FailedCommit", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		appendRaw(t, st, s, "m1")
		jobs := []hippocam.Job{{Kind: hippocam.JobConsolidate}}
		stale := hippocam.Change{From: s.Version - 1, Ops: []hippocam.Op{hippocam.AppendOp(raw("m2", "x"))}, Jobs: jobs}
		wantCode(t, st.Commit(t.Context(), s, stale), hippocam.ECONFLICT)
		bad := hippocam.Change{From: s.Version, Ops: []hippocam.Op{hippocam.AppendOp(raw("m2", "x")),
			hippocam.ReplaceOp([]string{"m9"}, memory("m3", "r1", "x"))}, Jobs: jobs}
		wantCode(t, st.Commit(t.Context(), s, bad), hippocam.EINVALID)
		gone := &hippocam.Session{Tenant: "acme", ID: "nobody"}
		wantCode(t, st.Commit(t.Context(), gone, hippocam.Change{Jobs: jobs}), hippocam.ENOTFOUND)
		noKind := hippocam.Change{From: s.Version, Jobs: []hippocam.Job{{}}}
		wantCode(t, st.Commit(t.Context(), s, noKind), hippocam.EINVALID)
		wantQueued(t, st, 0)
		if got := mustSession(t, st, "acme", "s1"); !slices.Equal(contextIDs(got), []string{"m1"}) {
			t.Errorf("a failed commit changed the context: %v", contextIDs(got))
		}
	})
	t.Run("Pending", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		appendRaw(t, st, s, "m1", "m2")
		s.Pending = &hippocam.Pending{
			Closures: []hippocam.ClosedSpan{{
				Intents:  []hippocam.Intent{{Label: "fix the bug", Reason: "it broke", Done: "tests pass", Start: "m1"}},
				Guidance: "m2", Chain: []string{"ship it", "fix the bug"}, Start: "m1", Since: 1,
			}},
			Reinforce: hippocam.Reinforcements{{Answer: "m2", Start: "m1", Since: 2}, {Answer: "m1"}},
			Start:     "m1",
			Steps:     3,
		}
		want := clonePendingJSON(t, s.Pending)
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
		s.Pending.Closures[0].Chain[0] = "changed after the commit"
		got := mustSession(t, st, "acme", "s1")
		if !reflect.DeepEqual(got.Pending, want) {
			t.Errorf("Pending read back %#v, want %#v", got.Pending, want)
		}
		got.Pending = nil
		mustCommit(t, st, got)
		if again := mustSession(t, st, "acme", "s1"); again.Pending != nil {
			t.Errorf("cleared Pending read back %#v", again.Pending)
		}
	})
}

// testJobsList checks Jobs: a tenant's queued jobs, oldest first, with their attempts, last
// error, schedule and lease, and none of another tenant's.
func testJobsList(t *testing.T, open func(t *testing.T) hippocam.Store) {
	st := open(t)
	if got, err := st.Jobs(t.Context(), "acme"); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Jobs of an empty store = %#v, %v; want an empty list", got, err)
	}
	start := time.Now().Add(-time.Second)
	for _, id := range []string{"b", "a"} {
		mustCommitJobs(t, st, mustCreate(t, st, "acme", id), []hippocam.Job{{Kind: hippocam.JobConsolidate}})
		tick()
	}
	mustCommitJobs(t, st, mustCreate(t, st, "globex", "g"), []hippocam.Job{{Kind: "other"}})
	// b's job fails and waits an hour; a's job is then claimed and running.
	failed := mustClaim(t, st, "w", time.Hour)
	if failed == nil || failed.Session != "b" {
		t.Fatalf("claimed %+v, want b's job", failed)
	}
	if err := st.RetryJob(t.Context(), failed, "w", time.Hour, "model unavailable"); err != nil {
		t.Fatal(err)
	}
	running := mustClaim(t, st, "w", time.Hour)
	if running == nil || running.Session != "a" {
		t.Fatalf("claimed %+v, want a's job", running)
	}
	got, err := st.Jobs(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Session != "b" || got[1].Session != "a" {
		t.Fatalf("Jobs(acme) = %+v, want b's job then a's", got)
	}
	b, a := got[0], got[1]
	if b.ID != failed.ID || b.Kind != hippocam.JobConsolidate || b.Attempts != 1 || b.LastError != "model unavailable" ||
		b.Running || b.DueAt.Before(time.Now().Add(50*time.Minute)) || b.CreatedAt.Before(start) {
		t.Errorf("the failed job lists as %+v, want attempt 1, its error, not running, due in about an hour", b)
	}
	if a.ID != running.ID || a.Attempts != 1 || a.LastError != "" || !a.Running || a.DueAt.After(time.Now()) ||
		!a.CreatedAt.After(b.CreatedAt) {
		t.Errorf("the running job lists as %+v, want attempt 1, no error, running, already due, created after b's", a)
	}
	other, err := st.Jobs(t.Context(), "globex")
	if err != nil {
		t.Fatal(err)
	}
	if len(other) != 1 || other[0].Session != "g" || other[0].Kind != "other" || other[0].Running {
		t.Errorf("Jobs(globex) = %+v, want only g's job, not running", other)
	}
	if none, err := st.Jobs(t.Context(), "initech"); err != nil || len(none) != 0 {
		t.Errorf("Jobs of a tenant with no jobs = %+v, %v", none, err)
	}
	// A lease that ran out no longer counts as running.
	if err := st.FinishJob(t.Context(), running, "w"); err != nil {
		t.Fatal(err)
	}
	g := mustClaim(t, st, "w", 50*time.Millisecond)
	if g == nil || g.Tenant != "globex" {
		t.Fatalf("claimed %+v, want globex's job", g)
	}
	time.Sleep(100 * time.Millisecond)
	if other, err := st.Jobs(t.Context(), "globex"); err != nil || len(other) != 1 || other[0].Running || other[0].Attempts != 1 {
		t.Errorf("after its lease ran out, Jobs(globex) = %+v, %v; want it not running, at attempt 1", other, err)
	}
	if got, err := st.Jobs(t.Context(), "acme"); err != nil || len(got) != 1 || got[0].ID != failed.ID {
		t.Errorf("after a's job finished, Jobs(acme) = %+v, %v; want b's job alone", got, err)
	}
}

// testJobsConcurrent has several owners claim at once: each job is claimed exactly once.
func testJobsConcurrent(t *testing.T, open func(t *testing.T) hippocam.Store) {
	st := open(t)
	const sessions, owners = 24, 6
	for i := range sessions {
		s := mustCreate(t, st, "acme", fmt.Sprintf("s%02d", i))
		mustCommitJobs(t, st, s, []hippocam.Job{{Kind: hippocam.JobConsolidate}})
	}
	var mu sync.Mutex
	claims := map[int64][]string{}
	var wg sync.WaitGroup
	for w := range owners {
		owner := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for {
				j, err := st.ClaimJob(t.Context(), owner, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if j == nil {
					return
				}
				mu.Lock()
				claims[j.ID] = append(claims[j.ID], owner)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claims) != sessions {
		t.Errorf("%d jobs claimed, want %d", len(claims), sessions)
	}
	for id, by := range claims {
		if len(by) != 1 {
			t.Errorf("job %d claimed %d times, by %v", id, len(by), by)
		}
	}
}

func mustCommitJobs(tb testing.TB, st hippocam.Store, s *hippocam.Session, jobs []hippocam.Job, ops ...hippocam.Op) {
	tb.Helper()
	from := s.Version
	if err := st.Commit(tb.Context(), s, hippocam.Change{From: from, Ops: ops, Jobs: jobs}); err != nil {
		tb.Fatalf("commit from %d with jobs: %v", from, err)
	}
}

func mustClaim(tb testing.TB, st hippocam.Store, owner string, lease time.Duration) *hippocam.Job {
	tb.Helper()
	j, err := st.ClaimJob(tb.Context(), owner, lease)
	if err != nil {
		tb.Fatalf("claim by %s: %v", owner, err)
	}
	return j
}

func wantQueued(tb testing.TB, st hippocam.Store, want int) {
	tb.Helper()
	n, err := st.QueuedJobs(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	if n != want {
		tb.Fatalf("%d jobs queued, want %d", n, want)
	}
}

// clonePendingJSON returns a copy of p that shares nothing with it.
func clonePendingJSON(tb testing.TB, p *hippocam.Pending) *hippocam.Pending {
	tb.Helper()
	c := &hippocam.Pending{Start: p.Start, Steps: p.Steps, Reinforce: slices.Clone(p.Reinforce)}
	for _, span := range p.Closures {
		c.Closures = append(c.Closures, hippocam.ClosedSpan{Intents: slices.Clone(span.Intents), Guidance: span.Guidance,
			Chain: slices.Clone(span.Chain), Start: span.Start, Since: span.Since})
	}
	return c
}
