package mcp_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// state is what a call could change: every tenant's sessions (with their versions), clusters
// (with theirs) and queued jobs.
type state struct {
	Sessions map[string][]string
	Clusters map[string][]string
	Jobs     map[string][]string
	Queued   int
}

func (w *world) state() state {
	w.t.Helper()
	ctx := context.Background()
	s := state{Sessions: map[string][]string{}, Clusters: map[string][]string{}, Jobs: map[string][]string{}}
	for _, tenant := range []string{"acme", "other"} {
		infos, err := w.store.Sessions(ctx, tenant)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, info := range infos {
			v, uid, err := w.store.SessionVersion(ctx, tenant, info.ID)
			if err != nil {
				w.t.Fatal(err)
			}
			s.Sessions[tenant] = append(s.Sessions[tenant], fmt.Sprintf("%s v%d %s %d %s", info.ID, v, uid, info.Messages, info.UpdatedAt))
		}
		clusters, err := w.store.Clusters(ctx, tenant)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, c := range clusters {
			s.Clusters[tenant] = append(s.Clusters[tenant], fmt.Sprintf("%s v%d %d", c.ID, c.Version, c.Trajectories))
		}
		jobs, err := w.store.Jobs(ctx, tenant)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, j := range jobs {
			s.Jobs[tenant] = append(s.Jobs[tenant], fmt.Sprintf("%d %s %s", j.ID, j.Session, j.Kind))
		}
	}
	n, err := w.store.QueuedJobs(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	s.Queued = n
	return s
}

// Unknown tools are protocol errors; arguments that break a tool's schema, bad values, unknown
// sessions, other tenants' sessions, refs a session does not have and a second outcome are tool
// errors (resources: JSON-RPC errors) that say what is wrong, the same for a session that is
// another tenant's as for one that does not exist; and none of them changes anything.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.agent("acme", "small").say("!say hi")
	w.shopSession("acme", "shop")
	w.shopSession("other", "theirs")
	cs := w.client("acme")
	ok(t, cs, mcp.ToolReportOutcome, map[string]any{"session": "small", "feedback": "done"}, &struct{}{})
	// A ref and a message id that session shop has and session small does not.
	hits, err := w.store.Search(ctx, "acme", "shop", "Dana", 1)
	if err != nil || len(hits) != 1 || hits[0].Ref == "" {
		t.Fatalf("search: %+v (%v)", hits, err)
	}
	if _, err := w.store.Children(ctx, "acme", "small", hits[0].Ref); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Fatalf("session small has ref %s too (%v): the test needs one it does not have", hits[0].Ref, err)
	}
	if _, err := w.store.Message(ctx, "acme", "small", hits[0].Message.ID); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Fatalf("session small has message %s too (%v)", hits[0].Message.ID, err)
	}
	before := w.state()

	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "forget_everything", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), `unknown tool "forget_everything"`) {
		t.Errorf("unknown tool: %v", err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string // in the error text
	}{
		{mcp.ToolSearchMemory, map[string]any{"session": 5, "query": "Dana"}, `invalid: validating "arguments"`},
		{mcp.ToolSearchMemory, map[string]any{"session": "shop"}, "invalid: validating"},
		{mcp.ToolSearchMemory, map[string]any{"session": "shop", "query": "Dana", "limit": 3}, "invalid: validating"},
		{mcp.ToolSearchMemory, map[string]any{"session": "shop", "query": "!!!"}, "invalid: "},
		{mcp.ToolSearchMemory, map[string]any{"session": "", "query": "Dana"}, "invalid: session"},
		{mcp.ToolRecallMemory, map[string]any{"session": "shop", "ref": []string{"r1"}}, "invalid: validating"},
		{mcp.ToolRecallMemory, map[string]any{"session": "shop", "ref": " "}, "invalid: ref"},
		{mcp.ToolRecallMemory, map[string]any{"session": "small", "ref": hits[0].Ref}, `not_found: nothing in session "small" has the ref "` + hits[0].Ref + `"`},
		{mcp.ToolRecallMemory, map[string]any{"session": "small", "ref": hits[0].Message.ID}, "not_found: nothing in session"},
		{mcp.ToolRecallMemory, map[string]any{"session": "shop", "ref": hits[0].Ref + "#x"}, "not_found: nothing in session"},
		{mcp.ToolRecallMemory, map[string]any{"session": "shop", "ref": hits[0].Ref + "#999"}, "not_found: nothing in session"},
		{mcp.ToolRecallMemory, map[string]any{"session": "shop", "ref": hits[0].Message.ID + "@999999"}, "not_found: nothing in session"},
		{mcp.ToolReportOutcome, map[string]any{"session": "shop", "feedback": "x", "success": "yes"}, "invalid: validating"},
		{mcp.ToolReportOutcome, map[string]any{"session": "shop", "feedback": " "}, "invalid: feedback"},
		{mcp.ToolReportOutcome, map[string]any{"session": "small", "feedback": "again"}, "conflict: "},
		{mcp.ToolGetAdvisory, map[string]any{"task": ""}, "invalid: task"},
		{mcp.ToolGetAdvisory, map[string]any{"task": 7}, "invalid: validating"},
		{mcp.ToolSearchLessons, map[string]any{"query": "???"}, "invalid: "},
		{mcp.ToolListSessions, map[string]any{"tenant": "other"}, "invalid: validating"},
	} {
		if got := toolError(t, cs, c.tool, c.args); !strings.Contains(got, c.want) {
			t.Errorf("%s %v: %q, want it to say %q", c.tool, c.args, got, c.want)
		}
	}

	// Not yours and not there: one answer, word for word (but for the name).
	for _, c := range []struct {
		tool string
		args func(session string) map[string]any
	}{
		{mcp.ToolSearchMemory, func(s string) map[string]any { return map[string]any{"session": s, "query": "Dana"} }},
		{mcp.ToolRecallMemory, func(s string) map[string]any { return map[string]any{"session": s, "ref": "r1"} }},
		{mcp.ToolReportOutcome, func(s string) map[string]any { return map[string]any{"session": s, "feedback": "x"} }},
	} {
		theirs := toolError(t, cs, c.tool, c.args("theirs"))
		ghost := toolError(t, cs, c.tool, c.args("ghost"))
		if theirs != strings.ReplaceAll(ghost, "ghost", "theirs") || theirs != `not_found: session "theirs" not found` {
			t.Errorf("%s: another tenant's session gives %q, a session that does not exist %q", c.tool, theirs, ghost)
		}
	}
	_, errTheirs := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "hippocam://sessions/theirs/expand"})
	_, errGhost := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "hippocam://sessions/ghost/expand"})
	if errTheirs == nil || errGhost == nil || errTheirs.Error() != strings.ReplaceAll(errGhost.Error(), "ghost", "theirs") {
		t.Errorf("reading another tenant's expansion: %v; one that does not exist: %v", errTheirs, errGhost)
	}
	for _, uri := range []string{"hippocam://sessions//expand", "hippocam://sessions/a%zz/expand", "hippocam://nothing", "file:///etc/passwd"} {
		if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("read %s: %v, want not found", uri, err)
		}
	}
	if after := w.state(); !reflect.DeepEqual(before, after) {
		t.Fatalf("failed calls changed the store:\nbefore %+v\nafter  %+v", before, after)
	}
}
