package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/tokenizer"
)

// forgotten stores a session whose archive holds a detail that nothing in its context names any
// more: the shop export, with shop_owner in it, lies beneath a memory that keeps no impression
// of it (as when PALIM has dropped even the impressions to fit).
func forgotten(t *testing.T) (*inmem.Store, string) {
	t.Helper()
	ctx := context.Background()
	tok := tokenizer.MustDefault()
	st := inmem.New()
	s := engine.NewSession("", "s1", time.Now().UTC())
	if err := st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	msgs := []hippocam.Message{
		{Role: hippocam.RoleUser, Content: "!call read_file {\"path\":\"exports/shop.csv\"}"},
		{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"exports/shop.csv"}`}}},
		{Role: hippocam.RoleTool, ToolCallID: "c1", Content: "revenue_shop := 1200\ndetail shop_owner := Dana\n" + filler("shop", 20)},
		{Role: hippocam.RoleAssistant, Content: "ok"},
	}
	var ops []hippocam.Op
	var span []string
	for _, m := range msgs {
		m.ID, m.Kind = s.NextID("m"), hippocam.KindRaw
		m.Tokens = hippocam.MessageTokens(tok, &m)
		ops = append(ops, hippocam.AppendOp(m))
		span = append(span, m.ID)
	}
	if err := st.Commit(ctx, s, hippocam.Change{From: s.Version, Ops: ops}); err != nil {
		t.Fatal(err)
	}
	ref := s.NextID("r")
	mem := hippocam.Message{ID: s.NextID("m"), Role: hippocam.RoleUser, Kind: hippocam.KindIntentMemory, Ref: ref,
		Content: hippocam.RefTag(ref) + " Memory of my finished work on \"Read the exports\".\nI read the shop export."}
	mem.Tokens = hippocam.MessageTokens(tok, &mem)
	if err := st.Commit(ctx, s, hippocam.Change{From: s.Version, Ops: []hippocam.Op{hippocam.ReplaceOp(span, mem)}}); err != nil {
		t.Fatal(err)
	}
	return st, ref
}

// A detail no impression names is found by searching the archive, then recalling the layer of
// the hit; the exchanges stay inside (the answer's trace), and they count as recall calls.
func TestSearchFindsWhatNothingNames(t *testing.T) {
	st, ref := forgotten(t)
	e := mustEngine(t, engine.ForWindow(8000), mustSim(t))
	ask := engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!ask shop_owner"}}}
	res, err := e.Advance(context.Background(), st, "", "s1", ask)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer.Content != "shop_owner := Dana" {
		t.Fatalf("answer %q, want shop_owner := Dana", res.Answer.Content)
	}
	if res.SearchCalls != 1 || res.RecallCalls != 2 {
		t.Errorf("%d search calls of %d recall calls, want 1 of 2", res.SearchCalls, res.RecallCalls)
	}
	if len(res.Answer.ToolCalls) != 0 {
		t.Errorf("the answer calls %v", res.Answer.ToolCalls)
	}
	tr := res.Answer.Trace
	if len(tr) != 4 || tr[0].ToolCalls[0].Name != engine.SearchTool || tr[2].ToolCalls[0].Name != engine.RecallTool {
		t.Fatalf("trace = %d messages, want a search exchange then a recall exchange", len(tr))
	}
	if got := tr[1].Content; !strings.Contains(got, "in "+hippocam.RefTag(ref)) || !strings.Contains(got, "shop_owner := Dana") {
		t.Errorf("search result %q: want the hit in %s with its excerpt", got, ref)
	}
	if !strings.Contains(tr[2].ToolCalls[0].Arguments, ref) {
		t.Errorf("recalled %s, want %s", tr[2].ToolCalls[0].Arguments, ref)
	}
	// What was found and used is reinforced: the same question needs no search the next time.
	res, err = e.Advance(context.Background(), st, "", "s1", ask)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer.Content != "shop_owner := Dana" || res.RecallCalls != 0 {
		t.Errorf("asked again: %q after %d recall calls, want the answer with none", res.Answer.Content, res.RecallCalls)
	}
}

// The recall limit bounds searches and recalls together: at the limit the model answers without
// either tool.
func TestSearchCountsTowardRecallLimit(t *testing.T) {
	st, _ := forgotten(t)
	cfg := engine.ForWindow(8000)
	cfg.RecallLimit = 1
	e := mustEngine(t, cfg, mustSim(t))
	res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!ask shop_owner"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.SearchCalls != 1 || res.RecallCalls != 1 || res.Answer.Content != "shop_owner := unknown" {
		t.Errorf("answer %q after %d search and %d recall calls; want unknown after the one search", res.Answer.Content, res.SearchCalls, res.RecallCalls)
	}
}

// A query with nothing to search for is a tool error the model can read, not a failed step.
func TestSearchBadQuery(t *testing.T) {
	st, _ := forgotten(t)
	f := &faulty{inner: mustSim(t), role: hippocam.CallAgent, outputs: []hippocam.Message{
		toolAnswer(engine.SearchTool, `{"query":"*"}`),
		{Role: hippocam.RoleAssistant, Content: "nothing found"},
	}}
	e := mustEngine(t, engine.ForWindow(8000), f)
	res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "what was it?"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Answer.Trace) != 2 || !strings.HasPrefix(res.Answer.Trace[1].Content, "Search error: ") {
		t.Fatalf("trace %+v, want the search call and an error for the model", res.Answer.Trace)
	}
}

// A long history arriving at once is folded before the step commits it, so the store cannot
// see it yet: search still finds a detail of it that no memory names any more.
func TestSearchFindsImportedHistory(t *testing.T) {
	var history []hippocam.Message
	history = append(history, hippocam.Message{Role: hippocam.RoleUser, Content: "Note: the shop owner is shop_owner := Dana, said in passing. " + filler("shop", 20)})
	for i := 0; i < 40; i++ {
		history = append(history,
			hippocam.Message{Role: hippocam.RoleUser, Content: fmt.Sprintf("Note %d. %s", i, filler(fmt.Sprintf("topic%d", i), 12))},
			hippocam.Message{Role: hippocam.RoleAssistant, Content: "ok"})
	}
	ask := []hippocam.Message{{Role: hippocam.RoleUser, Content: "!ask shop_owner"}}
	st := inmem.New()
	e := mustEngine(t, engine.ForWindow(4000), mustSim(t))
	res, err := e.Advance(context.Background(), st, "", "fresh", engine.Input{History: history, Messages: ask})
	if err != nil {
		t.Fatal(err)
	}
	if res.PrefixConsolidations == 0 {
		t.Fatal("the import folded nothing: the test needs a longer history")
	}
	tr := res.Answer.Trace
	if res.SearchCalls == 0 || len(tr) < 2 {
		t.Fatalf("%d searches, a trace of %d messages: want a search", res.SearchCalls, len(tr))
	}
	if got := tr[1].Content; !strings.Contains(got, "shop_owner := Dana") || !strings.Contains(got, engine.SearchInMarker+"[ref:") {
		t.Fatalf("search result %q: want the imported message, filed beneath a memory", got)
	}
}
