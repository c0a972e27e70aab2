// Package storetest is the conformance suite every hippocam.Store runs: the in-memory store, SQLite
// always, and Postgres whenever HIPPOCAM_TEST_POSTGRES holds a DSN. A backend's test file calls
// Run with a function that opens a fresh, empty store.
package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
)

// Run runs the whole suite against the stores open returns. Every subtest calls open for a
// fresh, empty store of its own; open must fail t if it cannot, and close the store in
// t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) hippocam.Store) {
	t.Run("CreateSession", func(t *testing.T) { testCreateSession(t, open) })
	t.Run("Session", func(t *testing.T) { testSession(t, open) })
	t.Run("Commit", func(t *testing.T) { testCommit(t, open) })
	t.Run("Replace", func(t *testing.T) { testReplace(t, open) })
	t.Run("InvalidOps", func(t *testing.T) { testInvalidOps(t, open) })
	t.Run("Children", func(t *testing.T) { testChildren(t, open) })
	t.Run("Message", func(t *testing.T) { testMessage(t, open) })
	t.Run("Sessions", func(t *testing.T) { testSessions(t, open) })
	t.Run("FindSessions", func(t *testing.T) { testFindSessions(t, open) })
	t.Run("DeleteSession", func(t *testing.T) { testDeleteSession(t, open) })
	t.Run("TenantIsolation", func(t *testing.T) { testTenantIsolation(t, open) })
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, open) })
	t.Run("Copies", func(t *testing.T) { testCopies(t, open) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, open) })
	t.Run("Lossless", func(t *testing.T) { testLossless(t, open) })
	t.Run("Search", func(t *testing.T) { testSearch(t, open) })
	t.Run("Jobs", func(t *testing.T) { testJobs(t, open) })
	t.Run("Identity", func(t *testing.T) { testIdentity(t, open) })
	t.Run("Clusters", func(t *testing.T) { testClusters(t, open) })
}

func testCreateSession(t *testing.T, open func(t *testing.T) hippocam.Store) {
	t.Run("OK", func(t *testing.T) {
		st := open(t)
		s := &hippocam.Session{
			Tenant: "acme", ID: "s1",
			Stack: hippocam.IntentStack{{Label: "plan the trip", Done: "tickets booked", Start: "m0"}},
			Seq:   7,
		}
		before := time.Now().Add(-time.Second)
		if err := st.CreateSession(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		if s.Version != 0 {
			t.Errorf("Version = %d, want 0", s.Version)
		}
		if s.CreatedAt.Before(before) || s.UpdatedAt.Before(before) {
			t.Errorf("CreatedAt = %v, UpdatedAt = %v: not set to the current time", s.CreatedAt, s.UpdatedAt)
		}
		got := mustSession(t, st, "acme", "s1")
		if d := diffSession(s, got); d != "" {
			t.Error(d)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		st := open(t)
		first := mustCreate(t, st, "acme", "s1")
		mustCommit(t, st, first, hippocam.AppendOp(raw("m1", "hello")))
		again := &hippocam.Session{Tenant: "acme", ID: "s1", Seq: 99}
		wantCode(t, st.CreateSession(t.Context(), again), hippocam.ECONFLICT)
		got := mustSession(t, st, "acme", "s1")
		if got.Seq != first.Seq || len(got.Context) != 1 || got.Version != 1 {
			t.Errorf("the existing session changed: %+v", got)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		st := open(t)
		wantCode(t, st.CreateSession(t.Context(), nil), hippocam.EINVALID)
		wantCode(t, st.CreateSession(t.Context(), &hippocam.Session{Tenant: "acme"}), hippocam.EINVALID)
		withContext := &hippocam.Session{Tenant: "acme", ID: "s1", Context: []hippocam.Message{raw("m1", "x")}}
		wantCode(t, st.CreateSession(t.Context(), withContext), hippocam.EINVALID)
		_, err := st.Session(t.Context(), "acme", "s1")
		wantCode(t, err, hippocam.ENOTFOUND)
	})
}

func testSession(t *testing.T, open func(t *testing.T) hippocam.Store) {
	t.Run("OK", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		appendRaw(t, st, s, "m1", "m2", "m3")
		s.Stack = hippocam.IntentStack{{Label: "fix the bug", Done: "tests pass", Start: "m2"}}
		s.Seq = 3
		mustCommit(t, st, s, hippocam.AppendOp(raw("m4", "four")))
		got := mustSession(t, st, "acme", "s1")
		if ids := contextIDs(got); !slices.Equal(ids, []string{"m1", "m2", "m3", "m4"}) {
			t.Errorf("context = %v", ids)
		}
		if got.Version != 2 || got.Seq != 3 || len(got.Stack) != 1 || got.Stack[0].Label != "fix the bug" {
			t.Errorf("snapshot = version %d, seq %d, stack %+v", got.Version, got.Seq, got.Stack)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		st := open(t)
		mustCreate(t, st, "acme", "s1")
		for _, k := range [][2]string{{"acme", "s2"}, {"other", "s1"}, {"", "s1"}, {"acme", ""}} {
			_, err := st.Session(t.Context(), k[0], k[1])
			wantCode(t, err, hippocam.ENOTFOUND)
		}
	})
}

func testChildren(t *testing.T, open func(t *testing.T) hippocam.Store) {
	st := open(t)
	s := mustCreate(t, st, "acme", "s1")
	appendRaw(t, st, s, "m1", "m2", "m3")
	mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m1", "m2"}, memory("m4", "r1", "did one and two")))
	other := mustCreate(t, st, "acme", "s2")
	appendRaw(t, st, other, "m1", "m2")
	mustCommit(t, st, other, hippocam.ReplaceOp([]string{"m1"}, memory("m3", "r9", "did one")))

	t.Run("OK", func(t *testing.T) {
		kids, err := st.Children(t.Context(), "acme", "s1", "r1")
		if err != nil {
			t.Fatal(err)
		}
		if ids := messageIDs(kids); !slices.Equal(ids, []string{"m1", "m2"}) {
			t.Errorf("children = %v", ids)
		}
		if kids[0].Content != "content of m1" {
			t.Errorf("child content = %q", kids[0].Content)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		for _, c := range []struct{ tenant, session, ref string }{
			{"acme", "s1", "r2"},     // unknown ref
			{"acme", "s1", ""},       // the context is not a ref
			{"acme", "s1", "m1"},     // a message id is not a ref
			{"acme", "s1", "r9"},     // another session's ref
			{"acme", "s3", "r1"},     // unknown session
			{"umbrella", "s1", "r1"}, // another tenant
		} {
			_, err := st.Children(t.Context(), c.tenant, c.session, c.ref)
			if hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
				t.Errorf("Children(%q, %q, %q): err = %v, want %s", c.tenant, c.session, c.ref, err, hippocam.ENOTFOUND)
			}
		}
	})
}

func testMessage(t *testing.T, open func(t *testing.T) hippocam.Store) {
	st := open(t)
	s := mustCreate(t, st, "acme", "s1")
	appendRaw(t, st, s, "m1", "m2", "m3")
	mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m1", "m2"}, memory("m4", "r1", "did one and two")))

	t.Run("OK", func(t *testing.T) {
		for _, id := range []string{"m1", "m2", "m3", "m4"} { // archived, context and memory
			m, err := st.Message(t.Context(), "acme", "s1", id)
			if err != nil {
				t.Fatalf("Message(%s): %v", id, err)
			}
			if m.ID != id {
				t.Errorf("Message(%s).ID = %s", id, m.ID)
			}
		}
		m, _ := st.Message(t.Context(), "acme", "s1", "m4")
		if m.Ref != "r1" || m.Kind != hippocam.KindIntentMemory {
			t.Errorf("memory = %+v", m)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		for _, c := range [][3]string{{"acme", "s1", "m5"}, {"acme", "s1", ""}, {"acme", "s2", "m1"}, {"umbrella", "s1", "m1"}} {
			_, err := st.Message(t.Context(), c[0], c[1], c[2])
			if hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
				t.Errorf("Message(%q, %q, %q): err = %v, want %s", c[0], c[1], c[2], err, hippocam.ENOTFOUND)
			}
		}
	})
}

func testFindSessions(t *testing.T, open func(t *testing.T) hippocam.Store) {
	st := open(t)
	a := mustCreate(t, st, "acme", "a")
	b := mustCreate(t, st, "acme", "b")
	other := mustCreate(t, st, "umbrella", "c")
	a.Transcript = hippocam.Transcript{Count: 2, Hash: "h2", PrevCount: 1, PrevHash: "h1"}
	appendRaw(t, st, a, "m1")
	tick()
	b.Transcript = hippocam.Transcript{Count: 4, Hash: "h4", PrevCount: 3, PrevHash: "h2", Fork: &hippocam.Fork{From: "a", At: 2}}
	appendRaw(t, st, b, "m1")
	other.Transcript = hippocam.Transcript{Count: 2, Hash: "h2"}
	appendRaw(t, st, other, "m1")
	for _, c := range []struct {
		hash string
		want []string
	}{{"h2", []string{"b", "a"}}, {"h1", []string{"a"}}, {"h4", []string{"b"}}, {"h9", nil}, {"", nil}} {
		got, err := st.FindSessions(t.Context(), "acme", c.hash)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("FindSessions(%q) = %v, want %v", c.hash, got, c.want)
		}
	}
	list, err := st.Sessions(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Fork == nil || *list[0].Fork != (hippocam.Fork{From: "a", At: 2}) || list[1].Fork != nil {
		t.Errorf("listing forks: %+v", list)
	}
}

func testSessions(t *testing.T, open func(t *testing.T) hippocam.Store) {
	t.Run("OK", func(t *testing.T) {
		st := open(t)
		s1 := mustCreate(t, st, "acme", "s1")
		tick()
		mustCreate(t, st, "acme", "s2")
		tick()
		mustCreate(t, st, "acme", "s3")
		mustCreate(t, st, "umbrella", "s4")
		tick()
		appendRaw(t, st, s1, "m1", "m2", "m3")
		s1.Stack = hippocam.IntentStack{{Label: "a", Done: "x", Start: "m1"}, {Label: "b", Done: "y", Start: "m2"}}
		s1.Consolidations = hippocam.Consolidations{Intent: 1}
		mustCommit(t, st, s1, hippocam.ReplaceOp([]string{"m2", "m3"}, memory("m4", "r1", "did b")))

		list, err := st.Sessions(t.Context(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		if list[0].Client != nil {
			t.Errorf("Client of a session that has none = %+v", list[0].Client)
		}
		var ids []string
		for _, in := range list {
			ids = append(ids, in.ID)
		}
		if !slices.Equal(ids, []string{"s1", "s3", "s2"}) {
			t.Fatalf("sessions = %v, want most recently updated first [s1 s3 s2]", ids)
		}
		want := hippocam.SessionInfo{Tenant: "acme", ID: "s1", Messages: 2, Depth: 2,
			Consolidations: hippocam.Consolidations{Intent: 1}, UpdatedAt: s1.UpdatedAt}
		got := list[0]
		if !got.UpdatedAt.Equal(want.UpdatedAt) {
			t.Errorf("UpdatedAt = %v, want %v", got.UpdatedAt, want.UpdatedAt)
		}
		got.UpdatedAt = want.UpdatedAt
		if got != want {
			t.Errorf("info = %+v, want %+v", got, want)
		}
		if list[1].Messages != 0 || list[1].Depth != 0 {
			t.Errorf("empty session info = %+v", list[1])
		}
	})
	t.Run("Client", func(t *testing.T) {
		// A listing shows each session's title and client conversation, as last committed.
		st := open(t)
		s1 := mustCreate(t, st, "acme", "s1")
		s1.Transcript.Client = &hippocam.Client{Title: "Rename the flag", Conversation: "c-1"}
		appendRaw(t, st, s1, "m1")
		s2 := mustCreate(t, st, "acme", "s2")
		s2.Transcript.Client = &hippocam.Client{Title: "Rename the flag", Conversation: "c-1", Agent: "ag-7", Parent: "ag-1", Kind: hippocam.ClientSubagent}
		appendRaw(t, st, s2, "m1")
		s1.Transcript.Client.Title = "Rename the --verbose flag"
		mustCommit(t, st, s1)
		list, err := st.Sessions(t.Context(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]hippocam.Client{}
		for _, in := range list {
			if in.Client == nil {
				t.Fatalf("session %s lists no client", in.ID)
			}
			got[in.ID] = *in.Client
		}
		want := map[string]hippocam.Client{"s1": *s1.Transcript.Client, "s2": *s2.Transcript.Client}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("clients = %+v, want %+v", got, want)
		}
	})
	t.Run("OtherTenants", func(t *testing.T) {
		st := open(t)
		mustCreate(t, st, "acme", "s1")
		mustCreate(t, st, "umbrella", "s2")
		list, err := st.Sessions(t.Context(), "umbrella")
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].ID != "s2" || list[0].Tenant != "umbrella" {
			t.Errorf("umbrella sessions = %+v", list)
		}
		if list, err := st.Sessions(t.Context(), "nobody"); err != nil || len(list) != 0 {
			t.Errorf("nobody's sessions = %+v, %v", list, err)
		}
	})
}

func testDeleteSession(t *testing.T, open func(t *testing.T) hippocam.Store) {
	t.Run("OK", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		appendRaw(t, st, s, "m1", "m2", "m3")
		mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m1", "m2"}, memory("m4", "r1", "did")))
		keep := mustCreate(t, st, "acme", "s2")
		appendRaw(t, st, keep, "m1")

		if err := st.DeleteSession(t.Context(), "acme", "s1"); err != nil {
			t.Fatal(err)
		}
		_, err := st.Session(t.Context(), "acme", "s1")
		wantCode(t, err, hippocam.ENOTFOUND)
		_, err = st.Children(t.Context(), "acme", "s1", "r1")
		wantCode(t, err, hippocam.ENOTFOUND)
		_, err = st.Message(t.Context(), "acme", "s1", "m1")
		wantCode(t, err, hippocam.ENOTFOUND)
		list, err := st.Sessions(t.Context(), "acme")
		if err != nil || len(list) != 1 || list[0].ID != "s2" {
			t.Errorf("sessions after delete = %+v, %v", list, err)
		}
		if got := mustSession(t, st, "acme", "s2"); len(got.Context) != 1 {
			t.Errorf("the other session lost its context: %v", contextIDs(got))
		}

		again := mustCreate(t, st, "acme", "s1")
		if got := mustSession(t, st, "acme", "s1"); len(got.Context) != 0 || got.Version != 0 {
			t.Errorf("a re-created session kept old state: %+v", got)
		}
		_, err = st.Message(t.Context(), "acme", "s1", "m2")
		wantCode(t, err, hippocam.ENOTFOUND)
		appendRaw(t, st, again, "m1", "m2") // the old ids are free again
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		st := open(t)
		mustCreate(t, st, "acme", "s1")
		wantCode(t, st.DeleteSession(t.Context(), "acme", "s2"), hippocam.ENOTFOUND)
		wantCode(t, st.DeleteSession(t.Context(), "umbrella", "s1"), hippocam.ENOTFOUND)
		if err := st.DeleteSession(t.Context(), "acme", "s1"); err != nil {
			t.Fatal(err)
		}
		wantCode(t, st.DeleteSession(t.Context(), "acme", "s1"), hippocam.ENOTFOUND)
	})
}

func testTenantIsolation(t *testing.T, open func(t *testing.T) hippocam.Store) {
	st := open(t)
	a := mustCreate(t, st, "acme", "s")
	u := mustCreate(t, st, "umbrella", "s")
	mustCommit(t, st, a, hippocam.AppendOp(raw("m1", "acme one")), hippocam.AppendOp(raw("m2", "acme two")))
	mustCommit(t, st, u, hippocam.AppendOp(raw("m1", "umbrella one")))
	mustCommit(t, st, a, hippocam.ReplaceOp([]string{"m1", "m2"}, memory("m3", "r1", "acme did")))
	mustCreate(t, st, "acme", "only-acme")

	if m, err := st.Message(t.Context(), "umbrella", "s", "m1"); err != nil || m.Content != "umbrella one" {
		t.Errorf("umbrella m1 = %+v, %v", m, err)
	}
	_, err := st.Message(t.Context(), "umbrella", "s", "m2")
	wantCode(t, err, hippocam.ENOTFOUND)
	_, err = st.Children(t.Context(), "umbrella", "s", "r1")
	wantCode(t, err, hippocam.ENOTFOUND)
	_, err = st.Session(t.Context(), "umbrella", "only-acme")
	wantCode(t, err, hippocam.ENOTFOUND)
	if got := mustSession(t, st, "umbrella", "s"); !slices.Equal(contextIDs(got), []string{"m1"}) || got.Version != 1 {
		t.Errorf("umbrella context = %v at version %d", contextIDs(got), got.Version)
	}
	ghost := &hippocam.Session{Tenant: "umbrella", ID: "only-acme"}
	wantCode(t, st.Commit(t.Context(), ghost, hippocam.Change{Ops: []hippocam.Op{hippocam.AppendOp(raw("m1", "x"))}}), hippocam.ENOTFOUND)
	wantCode(t, st.DeleteSession(t.Context(), "umbrella", "only-acme"), hippocam.ENOTFOUND)

	if err := st.DeleteSession(t.Context(), "acme", "s"); err != nil {
		t.Fatal(err)
	}
	if m, err := st.Message(t.Context(), "umbrella", "s", "m1"); err != nil || m.Content != "umbrella one" {
		t.Errorf("umbrella m1 after deleting acme's session = %+v, %v", m, err)
	}
}

// raw returns a raw user message whose content names its id.
func raw(id, content string) hippocam.Message {
	return hippocam.Message{ID: id, Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: content, Tokens: len(content)/4 + 1}
}

// memory returns an intent memory holding the archive node ref.
func memory(id, ref, text string) hippocam.Message {
	return hippocam.Message{ID: id, Role: hippocam.RoleUser, Kind: hippocam.KindIntentMemory,
		Content: text + " " + hippocam.RefTag(ref), Ref: ref, Tokens: 12}
}

// tick waits long enough for the stores' clocks (microseconds) to move on.
func tick() { time.Sleep(2 * time.Millisecond) }

func mustCreate(tb testing.TB, st hippocam.Store, tenant, id string) *hippocam.Session {
	tb.Helper()
	s := &hippocam.Session{Tenant: tenant, ID: id}
	if err := st.CreateSession(tb.Context(), s); err != nil {
		tb.Fatalf("create %s/%s: %v", tenant, id, err)
	}
	return s
}

func mustSession(tb testing.TB, st hippocam.Store, tenant, id string) *hippocam.Session {
	tb.Helper()
	s, err := st.Session(tb.Context(), tenant, id)
	if err != nil {
		tb.Fatalf("session %s/%s: %v", tenant, id, err)
	}
	return s
}

// commit commits ops from the version s was loaded at.
func commit(tb testing.TB, st hippocam.Store, s *hippocam.Session, ops ...hippocam.Op) error {
	return st.Commit(tb.Context(), s, hippocam.Change{From: s.Version, Ops: ops})
}

func mustCommit(tb testing.TB, st hippocam.Store, s *hippocam.Session, ops ...hippocam.Op) {
	tb.Helper()
	from := s.Version
	if err := commit(tb, st, s, ops...); err != nil {
		tb.Fatalf("commit from %d: %v", from, err)
	}
	if s.Version != from+1 {
		tb.Fatalf("commit from %d set Version = %d", from, s.Version)
	}
}

// appendRaw appends one raw message per id, in one commit.
func appendRaw(tb testing.TB, st hippocam.Store, s *hippocam.Session, ids ...string) {
	tb.Helper()
	ops := make([]hippocam.Op, len(ids))
	for i, id := range ids {
		ops[i] = hippocam.AppendOp(raw(id, "content of "+id))
	}
	mustCommit(tb, st, s, ops...)
}

func wantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if got := hippocam.ErrorCode(err); got != code {
		tb.Fatalf("err = %v (code %q), want code %q", err, got, code)
	}
}

func contextIDs(s *hippocam.Session) []string { return messageIDs(s.Context) }

func messageIDs(ms []hippocam.Message) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// diffMessages describes how got differs from want, or returns "".
func diffMessages(want, got []hippocam.Message) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d messages %v, want %d %v", len(got), messageIDs(got), len(want), messageIDs(want))
	}
	for i := range want {
		if !reflect.DeepEqual(want[i], got[i]) {
			return fmt.Sprintf("message %d:\n got  %s\n want %s", i, describe(got[i]), describe(want[i]))
		}
	}
	return ""
}

// describe prints a message with nil and empty slices told apart.
func describe(m hippocam.Message) string {
	s := fmt.Sprintf("%#v", m)
	if len(s) > 600 {
		s = s[:300] + " … " + s[len(s)-300:]
	}
	return s
}

// diffSession describes how got differs from want, or returns "". Times compare as instants.
func diffSession(want, got *hippocam.Session) string {
	var d []string
	if got.Tenant != want.Tenant || got.ID != want.ID {
		d = append(d, fmt.Sprintf("key %s/%s, want %s/%s", got.Tenant, got.ID, want.Tenant, want.ID))
	}
	if got.UID != want.UID {
		d = append(d, fmt.Sprintf("UID %q, want %q", got.UID, want.UID))
	}
	if s := diffMessages(want.Context, got.Context); s != "" {
		d = append(d, "context: "+s)
	}
	fields := []struct {
		name      string
		want, got any
	}{
		{"Stack", want.Stack, got.Stack},
		{"StackLog", want.StackLog, got.StackLog},
		{"Rounds", want.Rounds, got.Rounds},
		{"Usage", want.Usage, got.Usage},
		{"Consolidations", want.Consolidations, got.Consolidations},
		{"Transcript", want.Transcript, got.Transcript},
		{"Pending", want.Pending, got.Pending},
		{"Seq", want.Seq, got.Seq},
		{"Version", want.Version, got.Version},
	}
	for _, f := range fields {
		if !reflect.DeepEqual(f.want, f.got) {
			d = append(d, fmt.Sprintf("%s = %#v, want %#v", f.name, f.got, f.want))
		}
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		d = append(d, fmt.Sprintf("CreatedAt = %v, want %v", got.CreatedAt, want.CreatedAt))
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		d = append(d, fmt.Sprintf("UpdatedAt = %v, want %v", got.UpdatedAt, want.UpdatedAt))
	}
	return strings.Join(d, "\n")
}
