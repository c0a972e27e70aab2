package storetest

import (
	"testing"

	"github.com/hippocam/hippocam"
)

// testIdentity checks a session's creation identity: a session deleted and created again under
// its id is another session, and no commit loaded from the first ever reaches the second.
func testIdentity(t *testing.T, open func(t *testing.T) hippocam.Store) {
	t.Run("SessionVersion", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		other := mustCreate(t, st, "acme", "s2")
		if s.UID == "" || s.UID == other.UID {
			t.Fatalf("UIDs %q and %q: want two distinct ones", s.UID, other.UID)
		}
		appendRaw(t, st, s, "m1")
		version, uid, err := st.SessionVersion(t.Context(), "acme", "s1")
		if err != nil || version != 1 || uid != s.UID {
			t.Errorf("SessionVersion = %d, %q, %v; want 1, %q", version, uid, err, s.UID)
		}
		if got := mustSession(t, st, "acme", "s1"); got.UID != s.UID {
			t.Errorf("loaded UID %q, want %q", got.UID, s.UID)
		}
		_, _, err = st.SessionVersion(t.Context(), "umbrella", "s1")
		wantCode(t, err, hippocam.ENOTFOUND)
	})
	t.Run("CreateGivesAFreshUID", func(t *testing.T) {
		st := open(t)
		s := &hippocam.Session{Tenant: "acme", ID: "s1", UID: "chosen by the caller"}
		if err := st.CreateSession(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		if s.UID == "chosen by the caller" || s.UID == "" {
			t.Errorf("UID = %q, want a fresh one", s.UID)
		}
	})
	t.Run("Recreated", func(t *testing.T) {
		st := open(t)
		old := mustCreate(t, st, "acme", "s1")
		stale := mustSession(t, st, "acme", "s1") // a replica's copy, at version 0
		if err := st.DeleteSession(t.Context(), "acme", "s1"); err != nil {
			t.Fatal(err)
		}
		wantCode(t, commit(t, st, stale, hippocam.AppendOp(raw("m1", "from the deleted session"))), hippocam.ENOTFOUND)
		fresh := mustCreate(t, st, "acme", "s1")
		if fresh.UID == old.UID {
			t.Fatalf("the re-created session kept the UID %q", old.UID)
		}
		// Same id, same version: only the identity tells the two apart.
		ch := hippocam.Change{From: stale.Version, Ops: []hippocam.Op{hippocam.AppendOp(raw("m1", "from the deleted session"))},
			Jobs: []hippocam.Job{{Kind: hippocam.JobConsolidate}}}
		wantCode(t, st.Commit(t.Context(), stale, ch), hippocam.ECONFLICT)
		got := mustSession(t, st, "acme", "s1")
		if len(got.Context) != 0 || got.Version != 0 {
			t.Errorf("a commit of the deleted session reached the new one: version %d, context %v", got.Version, contextIDs(got))
		}
		wantQueued(t, st, 0)
		appendRaw(t, st, fresh, "m1")
	})
	t.Run("Tombstones", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		s.Transcript = hippocam.Transcript{Count: 2, Hash: "h2", PrevCount: 1, PrevHash: "h1"}
		appendRaw(t, st, s, "m1")
		live := mustCreate(t, st, "acme", "s2")
		live.Transcript = hippocam.Transcript{Count: 4, Hash: "h4", PrevCount: 3, PrevHash: "h3"}
		appendRaw(t, st, live, "m1")
		empty := mustCreate(t, st, "acme", "s3")
		wantTombstoned(t, st, "acme", []string{"h1", "h2", "h3", "h4"}, false)
		if err := st.DeleteSession(t.Context(), "acme", "s1"); err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteSession(t.Context(), "acme", empty.ID); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			tenant string
			hashes []string
			want   bool
		}{
			{"acme", []string{"h2"}, true},
			{"acme", []string{"h9", "h1"}, true},
			{"acme", []string{"h3", "h4", "h9"}, false},
			{"acme", []string{""}, false},
			{"acme", nil, false},
			{"umbrella", []string{"h1", "h2"}, false},
		} {
			wantTombstoned(t, st, c.tenant, c.hashes, c.want)
		}
		// Deleting a session with the same hashes again is no error.
		again := mustCreate(t, st, "acme", "s1")
		again.Transcript = s.Transcript
		appendRaw(t, st, again, "m1")
		if err := st.DeleteSession(t.Context(), "acme", "s1"); err != nil {
			t.Fatal(err)
		}
	})
}

func wantTombstoned(tb testing.TB, st hippocam.Store, tenant string, hashes []string, want bool) {
	tb.Helper()
	got, err := st.Tombstoned(tb.Context(), tenant, hashes)
	if err != nil {
		tb.Fatal(err)
	}
	if got != want {
		tb.Errorf("Tombstoned(%q, %q) = %v, want %v", tenant, hashes, got, want)
	}
}
