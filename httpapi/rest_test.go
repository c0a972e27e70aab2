package httpapi_test

import (
	"bytes"
	"testing"

	"github.com/hippocam/hippocam"
)

// TestREST_Deterministic renders the same session 50 times: every body is the same bytes. The
// session's usage spans several roles whose costs sum to different floating-point values in
// different orders, so a total taken in map order shows.
func TestREST_Deterministic(t *testing.T) {
	s := newServer(t, 8000, nil)
	sess := &hippocam.Session{Tenant: "", ID: "fixed"}
	if err := s.store.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	sess.Usage = hippocam.Usage{}
	for i, role := range []hippocam.CallRole{hippocam.CallAgent, hippocam.CallJanus, hippocam.CallPrecip, hippocam.CallPalim} {
		sess.Usage[role] = hippocam.RoleUsage{Calls: i + 1, Input: int64(1000 * (i + 1)), CostUSD: []float64{0.1, 0.2, 0.3, 1e-17}[i]}
	}
	m := hippocam.Message{ID: "m1", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "hello", Tokens: 2}
	if err := s.store.Commit(t.Context(), sess, hippocam.Change{From: 0, Ops: []hippocam.Op{hippocam.AppendOp(m)}}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/sessions/fixed", "/api/sessions", "/api/sessions/fixed/expand"} {
		first := s.do(t, "GET", path, "", "", nil)
		if first.status != 200 {
			t.Fatalf("GET %s: status %d: %s", path, first.status, first.body)
		}
		for i := 1; i < 50; i++ {
			if again := s.do(t, "GET", path, "", "", nil); !bytes.Equal(again.body, first.body) {
				t.Fatalf("GET %s, call %d:\n%s\nfirst call:\n%s", path, i+1, again.body, first.body)
			}
		}
	}
}
