package mcp_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam/mcp"
	"github.com/hippocam/hippocam/sessions"
)

// hippocam mcp beside hippocam serve: a second store on the same SQLite file (as another
// process opens it), with its own session service and MCP server, ends tasks and routes advice
// while the first keeps proxying turns; every call of either succeeds (no "database is locked"),
// and each sees what the other committed.
func TestBesideServe(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	const tasks = 4
	for i := range tasks {
		w.shopSession("acme", fmt.Sprintf("t%d", i))
	}
	db2, _, srv2 := newStack(t, w.path, sessions.LearnRouted, -1)
	m2, err := srv2.MCP(mcp.Config{Version: "beside", WaitForUpdates: true})
	if err != nil {
		t.Fatal(err)
	}
	w2 := &world{t: t, path: w.path, store: db2, mcp: m2}
	cs := w2.client("acme")

	var wg sync.WaitGroup
	errs := make(chan error, 100)
	wg.Add(1)
	go func() { // serve's side: a session that keeps going
		defer wg.Done()
		a := w.agent("acme", "busy")
		for i := range 30 {
			a.history = append(a.history, userMessage(fmt.Sprintf("!say turn %d", i)))
			if err := a.turn(); err != nil {
				errs <- fmt.Errorf("serve's turn %d: %w", i, err)
				return
			}
		}
	}()
	for i := range tasks { // hippocam mcp's side
		var out struct{ Update string }
		ok(t, cs, mcp.ToolReportOutcome, map[string]any{"session": fmt.Sprintf("t%d", i), "feedback": "feedback: greeting = formal wrong"}, &out)
		if out.Update != "done" {
			t.Errorf("outcome of t%d: %+v", i, out)
		}
		var adv advice
		ok(t, cs, mcp.ToolGetAdvisory, map[string]any{"task": taskText}, &adv)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// What the MCP side committed, the serve side reads, and the other way round.
	sess, err := w.store.Session(ctx, "acme", "t0")
	if err != nil || !sess.Transcript.Learning.Ended {
		t.Fatalf("serve's store does not see the outcome: %+v (%v)", sess.Transcript.Learning, err)
	}
	c, err := w.store.Cluster(ctx, "acme", sess.Transcript.Learning.Cluster)
	if err != nil || c.Trajectories != tasks {
		t.Fatalf("the cluster holds %+v (%v), want %d trajectories", c, err, tasks)
	}
	var listed struct{ Sessions []struct{ ID string } }
	ok(t, cs, mcp.ToolListSessions, nil, &listed)
	if len(listed.Sessions) != tasks+1 {
		t.Fatalf("the MCP side lists %d sessions, want %d", len(listed.Sessions), tasks+1)
	}
}

// Beside another process: what the other process's service commits to the shared file is not
// told to this process's service, but Watch reads it from the store and notifies it: a new
// session, its steps, a cluster's update.
func TestWatchBeside(t *testing.T) {
	w := newWorld(t)
	db2, _, srv2 := newStack(t, w.path, sessions.LearnRouted, -1)
	m2, err := srv2.MCP(mcp.Config{Version: "beside", WaitForUpdates: true})
	if err != nil {
		t.Fatal(err)
	}
	w2 := &world{t: t, path: w.path, store: db2, mcp: m2}
	wa := w2.watch("acme", "2025-11-25")
	uri := fmt.Sprintf(expandOf, "visit")
	wa.subscribe(uri, false)
	wa.subscribe(mcp.LessonsURI, false)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := w.agent("acme", "visit") // serve's side
	a.say(taskText)
	wa.quiet(uri) // the other process's step: not told without Watch
	go m2.Watch(ctx, "acme", 20*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // the first reading
	a.say("!say more")
	wa.expect(uri)
	w.agent("acme", "visit-2").say("!say hello")
	wa.expectList()
	if _, err := w.svc.EndTask(ctx, "acme", "visit", sessions.Outcome{Feedback: "feedback: greeting = formal wrong"}, true); err != nil {
		t.Fatal(err)
	}
	wa.expect(mcp.LessonsURI)
}
