package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// searchSession builds acme/s1 with originals that mention a shop owner in the context and two
// levels deep in the archive, and memories that mention it too (which search leaves out):
//
//	context: m7 [r2: m4 [r1: m1 m2], m3], m5, m6, m8
//
// m1, m3 and m5 name the shop owner; m6 calls a tool with a path in its arguments.
func searchSession(t *testing.T, st hippocam.Store) *hippocam.Session {
	t.Helper()
	s := mustCreate(t, st, "acme", "s1")
	mustCommit(t, st, s,
		hippocam.AppendOp(raw("m1", "The shop owner is Dana.")),
		hippocam.AppendOp(raw("m2", "nothing to see")),
		hippocam.AppendOp(raw("m3", "update: Shop-Owner is now Eve")))
	mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m1", "m2"}, memory("m4", "r1", "I noted who the shop owner is")))
	call := hippocam.Message{ID: "m6", Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, Tokens: 20,
		ToolCalls: []hippocam.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"exports/shop.csv"}`}}}
	mustCommit(t, st, s, hippocam.AppendOp(raw("m5", "ask the shop owner later, or tomorrow")), hippocam.AppendOp(call))
	mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m4", "m3"}, memory("m7", "r2", "the shop owner changed")),
		hippocam.AppendOp(hippocam.Message{ID: "m8", Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: "c1",
			Content: "Ærøskøbing harbour; 日本語; a\"b; plan a b c; café crème"}))
	return s
}

// hit is what a test expects of one search hit.
type hit struct{ id, ref string }

func hitsOf(hits []hippocam.SearchHit) []hit {
	out := make([]hit, len(hits))
	for i, h := range hits {
		out[i] = hit{h.Message.ID, h.Ref}
	}
	return out
}

func mustSearch(tb testing.TB, st hippocam.Store, tenant, id, query string, limit int) []hippocam.SearchHit {
	tb.Helper()
	hits, err := st.Search(tb.Context(), tenant, id, query, limit)
	if err != nil {
		tb.Fatalf("search %q: %v", query, err)
	}
	return hits
}

func testSearch(t *testing.T, open func(t *testing.T) hippocam.Store) {
	t.Run("OK", func(t *testing.T) {
		st := open(t)
		searchSession(t, st)
		hits := mustSearch(t, st, "acme", "s1", "shop_owner", 10)
		want := []hit{{"m5", ""}, {"m3", "r2"}, {"m1", "r1"}}
		if got := hitsOf(hits); !slices.Equal(got, want) {
			t.Fatalf("hits = %v, want %v (latest first, the memories m4 and m7 left out)", got, want)
		}
		for _, h := range hits {
			stored, err := st.Message(t.Context(), "acme", "s1", h.Message.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*stored, h.Message) {
				t.Errorf("hit %s:\n got  %s\n want %s", h.Message.ID, describe(h.Message), describe(*stored))
			}
			if !strings.Contains(strings.ToLower(h.Snippet), "owner") || strings.Contains(h.Snippet, "\n") {
				t.Errorf("hit %s: snippet %q", h.Message.ID, h.Snippet)
			}
		}
		if got := hitsOf(mustSearch(t, st, "acme", "s1", "OWNER shop", 2)); !slices.Equal(got, []hit{{"m5", ""}, {"m3", "r2"}}) {
			t.Errorf("limit 2: hits = %v", got)
		}
		if got := hitsOf(mustSearch(t, st, "acme", "s1", "shop.csv", 10)); !slices.Equal(got, []hit{{"m6", ""}}) {
			t.Errorf("a tool call's arguments: hits = %v, want m6", got)
		}
		if got := mustSearch(t, st, "acme", "s1", "owner_shop", 10); len(got) != 0 {
			t.Errorf("the words of a phrase in another order: hits = %v, want none", hitsOf(got))
		}
		if got := mustSearch(t, st, "acme", "s1", "Dana zebra", 10); len(got) != 0 {
			t.Errorf("one word found, one not: hits = %v, want none", hitsOf(got))
		}
	})
	t.Run("Snippet", func(t *testing.T) {
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		long := strings.Repeat("filler words\n", 300) + "the needle is here " + strings.Repeat("more filler\t", 300)
		mustCommit(t, st, s, hippocam.AppendOp(raw("m1", long)))
		hits := mustSearch(t, st, "acme", "s1", "NEEDLE", 1)
		if len(hits) != 1 {
			t.Fatalf("hits = %v", hitsOf(hits))
		}
		sn := hits[0].Snippet
		if !strings.Contains(sn, "needle") || len(sn) > 260 || strings.ContainsAny(sn, "\n\t") ||
			!strings.HasPrefix(sn, "…") || !strings.HasSuffix(sn, "…") {
			t.Errorf("snippet %q: want one short line around the match, cut at both ends", sn)
		}
	})
	t.Run("OddQueries", func(t *testing.T) {
		st := open(t)
		searchSession(t, st)
		for _, c := range []struct {
			query string
			want  []hit
		}{
			{`a"b`, []hit{{"m8", ""}}},        // a quote separates words; a, b follow one another
			{`"plan a" b`, []hit{{"m8", ""}}}, // quotes are not syntax
			{"OR", []hit{{"m5", ""}}},         // a word, not an operator
			{"ask OR zebra", nil},             // every word must be there
			{"NOT Dana", nil},
			{"ærøskøbing", []hit{{"m8", ""}}},
			{"ÆRØSKØBING", []hit{{"m8", ""}}},
			{"日本語", []hit{{"m8", ""}}},
			{"CAFÉ", []hit{{"m8", ""}}},
			{"Dana*", []hit{{"m1", "r1"}}},
			{"body:Dana", nil},     // no column syntax: the phrase "body dana" is nowhere
			{"{body} : Dana", nil}, // nor column names: the word body is nowhere
			{"NEAR(shop owner)", nil},
			{"-Dana", []hit{{"m1", "r1"}}},
			{"'; DROP TABLE messages; --", nil},
			{"dana & eve | !x <-> y", nil},
			{"\\ % _ ^ ( ) [ ] ~ $ @ \x00 dana", []hit{{"m1", "r1"}}},
			{"harbour\t\n日本語", []hit{{"m8", ""}}},
		} {
			hits, err := st.Search(t.Context(), "acme", "s1", c.query, 10)
			if err != nil {
				t.Errorf("search %q: %v", c.query, err)
				continue
			}
			if got := hitsOf(hits); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
				t.Errorf("search %q: hits = %v, want %v", c.query, got, c.want)
			}
		}
		// A query with nothing to search for is EINVALID, never a syntax error or every message.
		for _, q := range []string{"", "   ", "*", `"`, `""`, "()", "-", "\x00", strings.Repeat("a ", hippocam.MaxSearchTerms+1)} {
			_, err := st.Search(t.Context(), "acme", "s1", q, 10)
			if hippocam.ErrorCode(err) != hippocam.EINVALID {
				t.Errorf("search %q: err = %v, want %s", q, err, hippocam.EINVALID)
			}
		}
		for _, limit := range []int{0, -1} {
			_, err := st.Search(t.Context(), "acme", "s1", "dana", limit)
			wantCode(t, err, hippocam.EINVALID)
		}
	})
	t.Run("TenantIsolation", func(t *testing.T) {
		st := open(t)
		searchSession(t, st)
		u := mustCreate(t, st, "umbrella", "s1")
		mustCommit(t, st, u, hippocam.AppendOp(raw("m1", "umbrella's shop owner")), hippocam.AppendOp(raw("m9", "Dana again")))
		other := mustCreate(t, st, "acme", "s2")
		mustCommit(t, st, other, hippocam.AppendOp(raw("m1", "the shop owner of s2")))
		if got := hitsOf(mustSearch(t, st, "umbrella", "s1", "shop owner", 10)); !slices.Equal(got, []hit{{"m1", ""}}) {
			t.Errorf("umbrella hits = %v", got)
		}
		if got := hitsOf(mustSearch(t, st, "acme", "s2", "shop owner", 10)); !slices.Equal(got, []hit{{"m1", ""}}) {
			t.Errorf("acme/s2 hits = %v", got)
		}
		if got := hitsOf(mustSearch(t, st, "acme", "s1", "dana", 10)); !slices.Equal(got, []hit{{"m1", "r1"}}) {
			t.Errorf("acme/s1 hits = %v", got)
		}
		for _, k := range [][2]string{{"acme", "s3"}, {"other", "s1"}, {"umbrella", "s2"}, {"", "s1"}} {
			_, err := st.Search(t.Context(), k[0], k[1], "shop", 10)
			if hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
				t.Errorf("search in %s/%s: err = %v, want %s", k[0], k[1], err, hippocam.ENOTFOUND)
			}
		}
	})
	t.Run("DeletedSession", func(t *testing.T) {
		st := open(t)
		searchSession(t, st)
		keep := mustCreate(t, st, "acme", "s2")
		mustCommit(t, st, keep, hippocam.AppendOp(raw("m1", "the shop owner of s2")))
		if err := st.DeleteSession(t.Context(), "acme", "s1"); err != nil {
			t.Fatal(err)
		}
		_, err := st.Search(t.Context(), "acme", "s1", "shop owner", 10)
		wantCode(t, err, hippocam.ENOTFOUND)
		again := mustCreate(t, st, "acme", "s1")
		if got := mustSearch(t, st, "acme", "s1", "shop owner", 10); len(got) != 0 {
			t.Errorf("a re-created session finds the old one's messages: %v", hitsOf(got))
		}
		mustCommit(t, st, again, hippocam.AppendOp(raw("m1", "a new shop owner")))
		if got := hitsOf(mustSearch(t, st, "acme", "s1", "shop owner", 10)); !slices.Equal(got, []hit{{"m1", ""}}) {
			t.Errorf("re-created session: hits = %v", got)
		}
		if got := hitsOf(mustSearch(t, st, "acme", "s2", "shop owner", 10)); !slices.Equal(got, []hit{{"m1", ""}}) {
			t.Errorf("the other session's hits = %v", got)
		}
	})
	t.Run("PhraseAmongMany", func(t *testing.T) {
		// Many newer messages hold the words of a phrase apart; the older ones that hold the
		// phrase are still found, however the store narrows its candidates.
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		mustCommit(t, st, s, hippocam.AppendOp(raw("p1", "the shop owner signed")), hippocam.AppendOp(raw("p2", "a new shop owner")))
		var ops []hippocam.Op
		for i := range 40 {
			ops = append(ops, hippocam.AppendOp(raw(fmt.Sprintf("n%d", i), "the owner of the shop, again")))
		}
		mustCommit(t, st, s, ops...)
		if got := hitsOf(mustSearch(t, st, "acme", "s1", "shop_owner", 3)); !slices.Equal(got, []hit{{"p2", ""}, {"p1", ""}}) {
			t.Errorf("hits = %v, want p2, p1", got)
		}
		if got := mustSearch(t, st, "acme", "s1", "shop-owner", 45); len(got) != 2 {
			t.Errorf("%d hits with a large limit, want 2", len(got))
		}
	})
	t.Run("Order", func(t *testing.T) {
		// Hits follow the order messages entered, not their ids, across many commits and folds.
		st := open(t)
		s := mustCreate(t, st, "acme", "s1")
		var want []hit
		for i := range 30 {
			id := fmt.Sprintf("x%02d", 29-i) // ids that sort the other way
			mustCommit(t, st, s, hippocam.AppendOp(raw(id, fmt.Sprintf("entry %d of the log", i))))
			want = append([]hit{{id, ""}}, want...)
		}
		mustCommit(t, st, s, hippocam.ReplaceOp([]string{"x29", "x28", "x27"}, memory("mem", "r1", "entries of the log")))
		for i := range want[len(want)-3:] {
			want[len(want)-3+i].ref = "r1"
		}
		if got := hitsOf(mustSearch(t, st, "acme", "s1", "log", 100)); !slices.Equal(got, want) {
			t.Errorf("hits = %v\nwant %v", got, want)
		}
	})
}
