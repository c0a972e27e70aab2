package viewer_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/httpapi"
)

// GET /api/sessions/{id}, the body the viewer's learning card reads: a routed task carries its
// routing decision, then its advisory (a later task of its kind) and, once ended, its outcome;
// a session learning never saw has no "learning" field at all.
func TestSessionLearning(t *testing.T) {
	t.Parallel()
	s := newLearningServer(t, "k", "lessons")
	session := func(id string) (map[string]json.RawMessage, *hippocam.TaskLearning) {
		t.Helper()
		var raw map[string]json.RawMessage
		s.getJSON(t, "/api/sessions/"+id, &raw)
		l, ok := raw["learning"]
		if !ok {
			return raw, nil
		}
		var tl hippocam.TaskLearning
		if err := json.Unmarshal(l, &tl); err != nil {
			t.Fatalf("%s: learning %s: %v", id, l, err)
		}
		return raw, &tl
	}

	cluster := s.startTask(t, "a1", "sales-1", salesTask)
	_, l := session("a1")
	if l == nil || l.Cluster != cluster || l.System != "lessons" || l.Decision != "create" || l.Key != "sales-1" || l.Reason == "" {
		t.Fatalf("a1's learning %+v: want the new cluster %s of lessons, decided by the router", l, cluster)
	}
	if l.Ended || l.Feedback != "" || l.Advisory != "" {
		t.Errorf("a1's learning %+v before its outcome: ended, or advised by an empty cluster", l)
	}

	s.endTask(t, "a1", `{"feedback":"feedback: status_filter = shipped right","success":true,"attempts":2}`)
	s.startTask(t, "a2", "sales-1", salesTask)
	s.endTask(t, "a2", `{"feedback":"feedback: status_filter = all wrong","attempts":2}`)
	_, l = session("a1")
	if l == nil || !l.Ended || l.EndedAt.IsZero() || l.Feedback != "feedback: status_filter = shipped right" || l.Success == nil || !*l.Success || l.Attempts != 2 {
		t.Fatalf("a1's learning after its outcome: %+v", l)
	}

	s.startTask(t, "b1", "sales-2", salesTask)
	_, l = session("b1")
	if l == nil || l.Decision != "match" || l.Cluster != cluster || !strings.Contains(l.Advisory, "status_filter") || l.AdvisoryTokens <= 0 {
		t.Fatalf("b1's learning %+v: want the cluster (its text names the scope: a lexical match) and its lessons as the advisory", l)
	}

	s.startTask(t, "quiet", "", salesTask, httpapi.LearnHeader, "off")
	raw, l := session("quiet")
	if l != nil || raw["id"] == nil {
		t.Fatalf("a session that opted out of learning: learning %+v (body %v)", l, raw)
	}

	// Without the key, no session (nor its learning) is shown.
	s.key = ""
	if status, _ := s.call(t, http.MethodGet, "/api/sessions/a1", nil); status != http.StatusUnauthorized {
		t.Errorf("GET a1 without the key: %d, want 401", status)
	}
}
