package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/mcp"
	"github.com/hippocam/hippocam/sessions"
)

type advice struct {
	Decision, Cluster, System, Reason, Advisory string
}

// A proxied task's cluster is the one get_advisory routes the same task text to; the outcome
// reported through MCP lands in it (its trajectory count, its lessons), after which the advisory
// warns against the option that was wrong, search_lessons finds the lesson with its provenance,
// and the lessons file and the session's expansion are the REST API's, byte for byte. The other
// tenant sees none of it.
func TestAdvisoryOutcomeLessons(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	a := w.shopSession("acme", "s1")
	sess, err := w.store.Session(ctx, "acme", "s1")
	if err != nil || sess.Transcript.Learning == nil || sess.Transcript.Learning.Cluster == "" {
		t.Fatalf("the proxied task was not routed: %+v (%v)", sess, err)
	}
	cluster := sess.Transcript.Learning.Cluster
	chosen, found := strings.CutPrefix(a.history[1].Content, "greeting = ")
	if !found {
		t.Fatalf("the agent answered the task %q", a.history[1].Content)
	}
	cs := w.client("acme")

	var before advice
	text := ok(t, cs, mcp.ToolGetAdvisory, map[string]any{"task": taskText}, &before)
	if before.Decision != "match" || before.Cluster != cluster || before.System != "lessons" || before.Advisory != "" {
		t.Fatalf("advice before the outcome: %+v", before)
	}
	if !strings.Contains(text, cluster) {
		t.Errorf("advice text does not name the cluster: %s", text)
	}

	var out struct {
		Session, Cluster, Update string
		Ended                    bool
	}
	ok(t, cs, mcp.ToolReportOutcome, map[string]any{"session": "s1", "feedback": "feedback: greeting = " + chosen + " wrong", "success": false, "reward": 0}, &out)
	if !out.Ended || out.Cluster != cluster || out.Update != "done" {
		t.Fatalf("outcome: %+v", out)
	}
	c, err := w.store.Cluster(ctx, "acme", cluster)
	if err != nil || c.Trajectories != 1 || !c.HasApplied("s1") {
		t.Fatalf("the cluster after the outcome: %+v (%v)", c, err)
	}
	sess, _ = w.store.Session(ctx, "acme", "s1")
	if l := sess.Transcript.Learning; !l.Ended || l.Success == nil || *l.Success || l.Reward == nil || *l.Reward != 0 {
		t.Fatalf("the session's outcome: %+v", l)
	}

	var after advice
	ok(t, cs, mcp.ToolGetAdvisory, map[string]any{"task": taskText}, &after)
	if after.Cluster != cluster || !strings.Contains(after.Advisory, "greeting = "+chosen) {
		t.Fatalf("advice after the outcome: %+v; want the lesson about %q", after, chosen)
	}

	var lessons struct {
		Lessons []struct {
			Cluster, ID, Key, Value, Status string
			Provenance                      struct{ Tasks, Attempts []string }
		}
	}
	text = ok(t, cs, mcp.ToolSearchLessons, map[string]any{"query": "greeting"}, &lessons)
	if len(lessons.Lessons) == 0 {
		t.Fatalf("search_lessons found nothing: %s", text)
	}
	for _, l := range lessons.Lessons {
		if l.Cluster != cluster || l.Key != "greeting" || l.Status != "active" || len(l.Provenance.Attempts) != 1 || l.Provenance.Attempts[0] != "s1" {
			t.Errorf("lesson %+v", l)
		}
	}
	if !strings.Contains(text, "learned from tasks") {
		t.Errorf("search_lessons text lacks the provenance: %s", text)
	}
	var none struct{ Lessons []any }
	ok(t, cs, mcp.ToolSearchLessons, map[string]any{"query": "zeppelin"}, &none)
	var all struct{ Lessons []any }
	ok(t, cs, mcp.ToolSearchLessons, map[string]any{"query": ""}, &all)
	if len(none.Lessons) != 0 || len(all.Lessons) != len(lessons.Lessons) {
		t.Errorf("search for an absent word: %d lessons; empty query: %d, want 0 and %d", len(none.Lessons), len(all.Lessons), len(lessons.Lessons))
	}

	md := read(t, cs, mcp.LessonsURI)
	if status, body := w.rest("k-acme", "/api/lessons/export"); status != 200 || body != md {
		t.Fatalf("lessons.md differs from the REST export (%d):\n%s\n---\n%s", status, md, body)
	}
	if !strings.Contains(md, "greeting") {
		t.Errorf("the lessons file lacks the lesson:\n%s", md)
	}
	expanded := read(t, cs, "hippocam://sessions/s1/expand")
	if status, body := w.rest("k-acme", "/api/sessions/s1/expand"); status != 200 || body != expanded {
		t.Fatalf("the expansion differs from the REST one (%d)", status)
	}
	if !strings.Contains(expanded, "QX-s1") || !strings.Contains(expanded, "feedback: greeting") {
		t.Errorf("the expansion lacks the task's messages")
	}

	// The other tenant: no session, no lesson, an empty lessons file, and the same task text
	// opens a cluster of its own.
	other := w.client("other")
	var listed struct{ Sessions []any }
	ok(t, other, mcp.ToolListSessions, nil, &listed)
	ok(t, other, mcp.ToolSearchLessons, map[string]any{"query": ""}, &none)
	if len(listed.Sessions) != 0 || len(none.Lessons) != 0 {
		t.Fatalf("the other tenant sees %d sessions and %d lessons", len(listed.Sessions), len(none.Lessons))
	}
	if otherMD := read(t, other, mcp.LessonsURI); strings.Contains(otherMD, "greeting") {
		t.Fatalf("the other tenant's lessons file holds acme's lesson:\n%s", otherMD)
	}
	var theirs advice
	ok(t, other, mcp.ToolGetAdvisory, map[string]any{"task": taskText}, &theirs)
	if theirs.Decision != "create" || theirs.Advisory != "" {
		t.Fatalf("the other tenant's advice: %+v", theirs)
	}
	if c, err := w.store.Cluster(ctx, "acme", cluster); err != nil || c.Trajectories != 1 {
		t.Fatalf("acme's cluster after the other tenant's call: %+v (%v)", c, err)
	}
}

// With learning off, get_advisory says so and creates no cluster; report_outcome still ends
// the task, with no cluster to update.
func TestLearningOff(t *testing.T) {
	ctx := context.Background()
	w := newWorldWith(t, mcp.Config{}, sessions.LearnOff)
	w.agent("acme", "plain").say("!say hello")
	cs := w.client("acme")
	var got advice
	text := ok(t, cs, mcp.ToolGetAdvisory, map[string]any{"task": taskText}, &got)
	if got.Decision != "off" || got.Cluster != "" || got.Advisory != "" || !strings.Contains(text, "off") {
		t.Fatalf("advice with learning off: %+v, %q", got, text)
	}
	var out struct{ Update, Cluster string }
	ok(t, cs, mcp.ToolReportOutcome, map[string]any{"session": "plain", "feedback": "fine"}, &out)
	if out.Update != "none" || out.Cluster != "" {
		t.Fatalf("outcome with learning off: %+v", out)
	}
	if clusters, err := w.store.Clusters(ctx, "acme"); err != nil || len(clusters) != 0 {
		t.Fatalf("clusters: %v (%v)", clusters, err)
	}
}
