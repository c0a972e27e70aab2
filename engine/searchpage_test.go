package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/tokenizer"
)

// archived stores a session whose context holds one memory per group of messages, each group
// archived beneath its memory, oldest group first. It returns the store, the memories' refs and
// the ids of the messages of each group.
func archived(t *testing.T, groups [][]string) (*inmem.Store, []string, [][]string) {
	t.Helper()
	ctx := context.Background()
	tok := tokenizer.MustDefault()
	st := inmem.New()
	s := engine.NewSession("", "s1", time.Now().UTC())
	if err := st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	var refs []string
	var ids [][]string
	for g, texts := range groups {
		var ops []hippocam.Op
		var span []string
		for i, text := range texts {
			m := hippocam.Message{ID: s.NextID("m"), Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: text}
			if i%2 == 1 {
				m.Role = hippocam.RoleAssistant
			}
			m.Tokens = hippocam.MessageTokens(tok, &m)
			ops = append(ops, hippocam.AppendOp(m))
			span = append(span, m.ID)
		}
		if err := st.Commit(ctx, s, hippocam.Change{From: s.Version, Ops: ops}); err != nil {
			t.Fatal(err)
		}
		ref := s.NextID("r")
		mem := hippocam.Message{ID: s.NextID("m"), Role: hippocam.RoleUser, Kind: hippocam.KindIntentMemory, Ref: ref,
			Content: fmt.Sprintf("%s Memory of my finished work on \"Batch %d\".\nI went through batch %d.", hippocam.RefTag(ref), g, g)}
		mem.Tokens = hippocam.MessageTokens(tok, &mem)
		if err := st.Commit(ctx, s, hippocam.Change{From: s.Version, Ops: []hippocam.Op{hippocam.ReplaceOp(span, mem)}}); err != nil {
			t.Fatal(err)
		}
		refs, ids = append(refs, ref), append(ids, span)
	}
	return st, refs, ids
}

// mainScript answers the main model's requests with next (given every message of the request) and
// passes the other roles to the simulated model. It records the size of every main request.
type mainScript struct {
	inner hippocam.Model
	next  func(msgs []hippocam.Message) hippocam.Message
	mu    sync.Mutex
	calls int
}

func (s *mainScript) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role != hippocam.CallAgent {
		return s.inner.Complete(ctx, req)
	}
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	out := s.next(req.Messages)
	for i := range out.ToolCalls {
		out.ToolCalls[i].ID = fmt.Sprintf("c%d_%d", n, i)
	}
	reason := "stop"
	if len(out.ToolCalls) > 0 {
		reason = "tool_calls"
	}
	return &hippocam.Response{Message: out, FinishReason: reason, Usage: hippocam.CallUsage{Input: 10, Output: 5}}, nil
}

// readOn returns the id a search result gives to read on after, or "".
func readOn(result string) string {
	for _, l := range strings.Split(result, "\n") {
		if strings.HasPrefix(l, engine.SearchMore) {
			_, rest, _ := strings.Cut(l, engine.SearchAfterMarker)
			id, _, _ := strings.Cut(rest, `"`)
			return id
		}
	}
	return ""
}

// hitIDs returns the message ids of the hit lines of a search result.
func hitIDs(result string) []string {
	var ids []string
	for _, l := range strings.Split(result, "\n") {
		if !strings.HasPrefix(l, engine.ChildMarker) || !strings.Contains(l, engine.SearchInMarker) {
			continue
		}
		parts := strings.Split(l, " · ")
		if len(parts) > 2 {
			ids = append(ids, parts[1])
		}
	}
	return ids
}

// A search with more hits than the room left holds comes back in pages: each page shows the hits
// that fit and says how to read on, and together the pages show every hit exactly once, latest
// first, however little room each page had.
func TestSearchPagesHoldEveryHitOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int
	}{{"roomy", 16000}, {"tight", 2400}} {
		t.Run(tc.name, func(t *testing.T) {
			var groups [][]string
			for g := 0; g < 4; g++ {
				var texts []string
				for i := 0; i < 9; i++ {
					texts = append(texts, fmt.Sprintf("Checked the ledger for the warehouse owner, batch %d entry %d: %s", g, i, strings.Repeat("nothing unusual in the rows of this entry; ", 6)))
				}
				groups = append(groups, texts)
			}
			st, _, ids := archived(t, groups)
			want := map[string]bool{}
			for _, g := range ids {
				for _, id := range g {
					want[id] = true
				}
			}
			m := &mainScript{inner: mustSim(t), next: func(msgs []hippocam.Message) hippocam.Message {
				last := msgs[len(msgs)-1]
				switch {
				case last.Role == hippocam.RoleUser:
					return toolAnswer(engine.SearchTool, `{"query":"warehouse owner"}`)
				case last.Role == hippocam.RoleTool && readOn(last.Content) != "":
					args, _ := json.Marshal(engine.SearchArgs{Query: "warehouse owner", After: readOn(last.Content)})
					return toolAnswer(engine.SearchTool, string(args))
				}
				return hippocam.Message{Role: hippocam.RoleAssistant, Content: "done"}
			}}
			cfg := engine.ForWindow(tc.window)
			e := mustEngine(t, cfg, m)
			res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "who owns the warehouse?"}}})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			var order []string
			pages, short := 0, 0
			for _, r := range res.Answer.Trace {
				if r.Role != hippocam.RoleTool {
					continue
				}
				if strings.HasPrefix(r.Content, "Search error") {
					t.Fatalf("page %d: %s", pages+1, r.Content)
				}
				pages++
				t.Logf("page %d: %d tokens, %d hits", pages, r.Tokens, len(hitIDs(r.Content)))
				got := hitIDs(r.Content)
				if len(got) < engine.SearchHits && readOn(r.Content) != "" {
					short++
				}
				for _, id := range got {
					seen[id]++
					order = append(order, id)
				}
			}
			for id := range want {
				if seen[id] != 1 {
					t.Errorf("hit %s shown %d times, want once", id, seen[id])
				}
			}
			if len(seen) != len(want) {
				t.Errorf("%d distinct hits shown, want %d", len(seen), len(want))
			}
			for i := 1; i < len(order); i++ { // latest first: ids grow with entry
				if num(order[i]) > num(order[i-1]) {
					t.Fatalf("hits out of order: %v", order)
				}
			}
			t.Logf("%d hits in %d pages, %d of them cut short by the room; max request %d of %d", len(order), pages, short, res.MaxRequestTokens, tc.window)
			if res.Answer.Content != "done" || res.MaxRequestTokens > tc.window {
				t.Errorf("answer %q, max request %d", res.Answer.Content, res.MaxRequestTokens)
			}
			if tc.name == "tight" && short == 0 {
				t.Errorf("no page was cut short by the room: the window does not test paging by room")
			}
		})
	}
}

func num(id string) int {
	n := 0
	fmt.Sscanf(strings.TrimPrefix(id, "m"), "%d", &n)
	return n
}

// The simulated model follows a search's pages: the only message that states the fact is the
// oldest hit, on the second page, behind more hits that merely mention the key.
func TestSimFollowsSearchPages(t *testing.T) {
	noise := make([]string, 0, engine.SearchHits+3)
	for i := 0; i < engine.SearchHits+3; i++ {
		noise = append(noise, fmt.Sprintf("Row %d has no dock_master filled in yet.", i))
	}
	st, refs, _ := archived(t, [][]string{
		{"Read the roster.", "detail dock_master := Priya Nair\nThe roster lists the crews."},
		noise,
	})
	e := mustEngine(t, engine.ForWindow(8000), mustSim(t))
	res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!ask dock_master"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Answer.Trace {
		t.Logf("trace %s %v %s", m.Role, m.ToolCalls, clip(m.Content))
	}
	if res.Answer.Content != "dock_master := Priya Nair" {
		t.Fatalf("answer %q, want the fact from the second page", res.Answer.Content)
	}
	var afters []string
	for _, m := range res.Answer.Trace {
		for _, c := range m.ToolCalls {
			var a engine.SearchArgs
			if c.Name == engine.SearchTool && json.Unmarshal([]byte(c.Arguments), &a) == nil && a.After != "" {
				afters = append(afters, a.After)
			}
		}
	}
	if res.SearchCalls != 2 || len(afters) != 1 {
		t.Errorf("%d searches, read on after %v: want the first page, then the second", res.SearchCalls, afters)
	}
	recalledOld := false
	for _, m := range res.Answer.Trace {
		for _, c := range m.ToolCalls {
			recalledOld = recalledOld || (c.Name == engine.RecallTool && strings.Contains(c.Arguments, `"`+refs[0]+`"`))
		}
	}
	if !recalledOld {
		t.Errorf("the layer %s of the second page's hit was never recalled", refs[0])
	}
}

// "after" must name a hit of the same query: anything else is an error the model can read.
func TestSearchAfterUnknownHit(t *testing.T) {
	st, _, _ := archived(t, [][]string{{"the pump was serviced", "the pump runs"}})
	f := &faulty{inner: mustSim(t), role: hippocam.CallAgent, outputs: []hippocam.Message{
		toolAnswer(engine.SearchTool, `{"query":"pump","after":"m999"}`),
		{Role: hippocam.RoleAssistant, Content: "nothing"},
	}}
	e := mustEngine(t, engine.ForWindow(8000), f)
	res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "pump?"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Answer.Trace) != 2 || !strings.HasPrefix(res.Answer.Trace[1].Content, "Search error: ") || !strings.Contains(res.Answer.Trace[1].Content, "m999") {
		t.Fatalf("trace %+v, want an error naming m999", res.Answer.Trace)
	}
}

// Recall and search results that fill the window again and again, several in one answer, never
// get an error for want of room while earlier results can give theirs (first by shrinking to
// their listings, then by being withdrawn), and never eat the room reserved for the answer:
// every main request, the final one included, leaves the reserve free.
func TestRecallRoomKeepsAnswerReserve(t *testing.T) {
	// 16 answers with calls, every second one three calls at once (32 calls in all): the results
	// fill the window many times over, and withdrawn ones leave room enough for the last.
	const window, reserve, rounds = 4000, 800, 16
	var groups [][]string
	for g := 0; g < 6; g++ {
		groups = append(groups, []string{fmt.Sprintf("Dump the ledger part %d.", g), fmt.Sprintf("ledger part %d\n", g) + filler(fmt.Sprintf("p%d", g), 60)})
	}
	st, _, ids := archived(t, groups)
	big := func(k int) string { return ids[k%len(ids)][1] }
	var mu sync.Mutex
	withdrawn, answers := false, 0
	m := &mainScript{inner: mustSim(t), next: func(msgs []hippocam.Message) hippocam.Message {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range msgs {
			withdrawn = withdrawn || strings.HasPrefix(r.Content, "Withdrawn to make room")
		}
		answers++
		k := answers
		var calls []hippocam.ToolCall
		switch {
		case k > rounds:
			return hippocam.Message{Role: hippocam.RoleAssistant, Content: "done"}
		case k%2 == 0: // three at once: a recall, a search and another recall
			calls = []hippocam.ToolCall{
				{Name: engine.RecallTool, Arguments: fmt.Sprintf(`{"ref":%q}`, big(k))},
				{Name: engine.SearchTool, Arguments: `{"query":"ledger part"}`},
				{Name: engine.RecallTool, Arguments: fmt.Sprintf(`{"ref":%q}`, big(k+1))},
			}
		default:
			calls = []hippocam.ToolCall{{Name: engine.RecallTool, Arguments: fmt.Sprintf(`{"ref":%q}`, big(k))}}
		}
		return hippocam.Message{Role: hippocam.RoleAssistant, ToolCalls: calls}
	}}
	cfg := engine.ForWindow(window)
	e := mustEngine(t, cfg, m)
	var sizes []int
	in := engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "go through the ledger"}}, MaxTokens: reserve,
		OnCall: func(n int) { sizes = append(sizes, n) }}
	res, err := e.Advance(context.Background(), st, "", "s1", in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer.Content != "done" || res.RecallCalls != 2*rounds {
		t.Fatalf("answer %q after %d calls, want done after %d", res.Answer.Content, res.RecallCalls, 2*rounds)
	}
	for _, r := range res.Answer.Trace {
		if r.Role == hippocam.RoleTool && strings.Contains(r.Content, "error") {
			t.Errorf("a call got no page: %s", clip(r.Content))
		}
	}
	if len(sizes) != rounds+1 {
		t.Fatalf("%d main requests, want %d", len(sizes), rounds+1)
	}
	for i, n := range sizes {
		if n+reserve > window {
			t.Errorf("request %d takes %d tokens: %d are left for the answer, want at least %d", i+1, n, window-n, reserve)
		}
	}
	if !withdrawn {
		t.Errorf("no result was withdrawn: the window never filled with listings")
	}
	t.Logf("request sizes %v", sizes)
}

// A hit inside one message far larger than the room is read page by page: the search names its
// layer, the layer leaves the message out with a handle, and the handle pages it by bytes until
// the detail, at its very end, comes into view.
func TestSearchHitInHugeMessage(t *testing.T) {
	st, _, ids := archived(t, [][]string{{"Dump the crash log.", filler("crash", 400) + "detail last_error := disk full at 03:12\n"}})
	e := mustEngine(t, engine.ForWindow(8000), mustSim(t))
	res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!ask last_error"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer.Content != "last_error := disk full at 03:12" {
		for _, m := range res.Answer.Trace {
			t.Logf("trace %s %v %s", m.Role, m.ToolCalls, clip(m.Content))
		}
		t.Fatalf("answer %q", res.Answer.Content)
	}
	pages := 0
	for _, m := range res.Answer.Trace {
		for _, c := range m.ToolCalls {
			if c.Name == engine.RecallTool && strings.Contains(c.Arguments, ids[0][1]+"@") {
				pages++
			}
		}
	}
	if res.SearchCalls != 1 || pages == 0 || res.MaxRequestTokens > 8000 {
		t.Errorf("%d searches, %d later pages of %s, max request %d: want one search, then the message page by page", res.SearchCalls, pages, ids[0][1], res.MaxRequestTokens)
	}
	t.Logf("%d recall calls, %d of them later pages", res.RecallCalls, pages)
}

// When the room holds less than one whole hit, the first hit is still shown, its excerpt cut to
// the room with a pointer to its message; only a room too small even for that is an error. Over
// a range of windows every search gets either a page or, when nothing can give room, the error.
func TestSearchCutsAHitToTheRoom(t *testing.T) {
	cut, errs, full := 0, 0, 0
	for w := 1200; w <= 2400; w += 8 {
		st, _, _ := archived(t, [][]string{{
			"The turbine owner asked for " + strings.Repeat("a complete record of every inspection ", 8),
			"The turbine owner signed off " + strings.Repeat("on each of the inspection records ", 8),
		}})
		m := &mainScript{inner: mustSim(t), next: func(msgs []hippocam.Message) hippocam.Message {
			if msgs[len(msgs)-1].Role == hippocam.RoleUser {
				return toolAnswer(engine.SearchTool, `{"query":"turbine owner"}`)
			}
			return hippocam.Message{Role: hippocam.RoleAssistant, Content: "done"}
		}}
		cfg := engine.ForWindow(w)
		if cfg.Validate() != nil {
			continue
		}
		e := mustEngine(t, cfg, m)
		res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "who owns the turbine?"}}})
		if err != nil {
			continue // the window is too small for the step itself
		}
		if len(res.Answer.Trace) != 2 {
			t.Fatalf("window %d: trace of %d messages", w, len(res.Answer.Trace))
		}
		got := res.Answer.Trace[1].Content
		switch {
		case strings.HasPrefix(got, "Search error: the window has room for only"):
			errs++
			if full > 0 || cut > 0 {
				t.Errorf("window %d: %s, though a smaller window showed hits", w, got)
			}
		case strings.Contains(got, "excerpt cut for want of room"):
			cut++
			if len(hitIDs(got)) != 1 || readOn(got) == "" {
				t.Errorf("window %d: a cut page should show one hit and how to read on:\n%s", w, got)
			}
		default:
			full++
		}
		if res.MaxRequestTokens > w {
			t.Errorf("window %d: a request of %d tokens", w, res.MaxRequestTokens)
		}
	}
	t.Logf("%d windows with an error, %d with a cut hit, %d with whole hits", errs, cut, full)
	if cut == 0 || full == 0 {
		t.Errorf("the windows tried show %d cut and %d whole pages, want both", cut, full)
	}
}

// A layer whose list of children does not fit the room comes back in pages, each ending with a
// handle to the rest of the list; followed page after page, they list every child exactly once,
// in order. (A page once ended on a handle that began one child too late: the child whose line
// did not fit was in neither page, and a replay with a fuller context lost the only statement
// of a fact that way.)
func TestRecallListPagesHoldEveryChild(t *testing.T) {
	const children = 160
	var texts []string
	for i := 0; i < children; i++ {
		texts = append(texts, fmt.Sprintf("entry %d of the ledger", i))
	}
	st, refs, _ := archived(t, [][]string{texts})
	handle := regexp.MustCompile(`\[ref:([^\]]+#[0-9]+)\] ` + engine.LeftOutMarker + `: the list`)
	child := regexp.MustCompile(`^` + engine.ChildMarker + `([0-9]+)/([0-9]+) · `)
	m := &mainScript{inner: mustSim(t), next: func(msgs []hippocam.Message) hippocam.Message {
		last := msgs[len(msgs)-1]
		switch {
		case last.Role == hippocam.RoleUser:
			return toolAnswer(engine.RecallTool, fmt.Sprintf(`{"ref":%q}`, refs[0]))
		case last.Role == hippocam.RoleTool && handle.MatchString(last.Content):
			return toolAnswer(engine.RecallTool, fmt.Sprintf(`{"ref":%q}`, handle.FindStringSubmatch(last.Content)[1]))
		}
		return hippocam.Message{Role: hippocam.RoleAssistant, Content: "done"}
	}}
	e := mustEngine(t, engine.ForWindow(4000), m)
	res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "list the ledger"}}})
	if err != nil {
		t.Fatal(err)
	}
	var listed []int
	pages := 0
	for _, r := range res.Answer.Trace {
		if r.Role != hippocam.RoleTool {
			continue
		}
		if !strings.HasPrefix(r.Content, "Recall of ") {
			t.Fatalf("page %d: %s", pages+1, clip(r.Content))
		}
		pages++
		for _, l := range strings.Split(r.Content, "\n") {
			if g := child.FindStringSubmatch(l); g != nil {
				n, _ := strconv.Atoi(g[1])
				listed = append(listed, n)
			}
		}
	}
	if pages < 2 {
		t.Fatalf("the list came back in %d page: the room does not test paging", pages)
	}
	for i, n := range listed {
		if n != i+1 {
			t.Fatalf("%d pages list children %v: child %d is missing or repeated", pages, listed, i+1)
		}
	}
	if len(listed) != children {
		t.Fatalf("%d pages list %d of the %d children", pages, len(listed), children)
	}
}
