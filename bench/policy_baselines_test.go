package bench_test

import (
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/bench"
)

func TestPoliciesOrder(t *testing.T) {
	want := []string{"hippocam", "hippocam-gate", "hippocam-no-prefix", "hippocam-no-recall", "flat-summary", "truncate", "full", "retrieve-prepend"}
	ps := bench.Policies()
	if len(ps) != len(want) {
		t.Fatalf("%d policies, want %d", len(ps), len(want))
	}
	for i, p := range ps {
		if p.Name != want[i] {
			t.Errorf("policy %d is %q, want %q", i, p.Name, want[i])
		}
		if _, err := p.New(bench.Env{Window: 4000}); err == nil {
			t.Errorf("%s: an environment without a model was accepted", p.Name)
		}
	}
}

// With a window large enough for everything, every policy answers a short session with a tool
// exchange right, and never overflows.
func TestPoliciesShortSession(t *testing.T) {
	for _, p := range bench.Policies() {
		t.Run(p.Name, func(t *testing.T) {
			env, _ := polEnv(t, 32000)
			s := newPolSession(t, p.Name, env)
			polWant(t, "say", s.user("alpha := 1\n!say noted"), "noted")
			if got := s.user(`!call read_file {"path":"a.csv"}` + "\n" + `!call read_file {"path":"b.csv"}`); got != "" {
				t.Errorf("a tool-calling answer has text %q", got)
			}
			if len(s.pending) != 2 {
				t.Fatalf("%d pending calls, want 2", len(s.pending))
			}
			s.results("beta := 2", "gamma := 3")
			s.user("alpha := 4\n!say updated")
			polWant(t, "ask alpha", s.user("!ask alpha"), "alpha := 4")
			polWant(t, "ask beta", s.user("!ask beta"), "beta := 2")
			polWant(t, "ask nothing", s.user("!ask delta"), "delta := unknown")
			if s.overflowed() {
				t.Error("overflow with a large window")
			}
			u := s.usage()
			if u[hippocam.CallAgent].Calls < len(s.turns) || u[hippocam.CallAgent].Input == 0 { // recall and search calls add to the steps
				t.Errorf("agent usage %+v for %d steps", u[hippocam.CallAgent], len(s.turns))
			}
			if u.Total().CostUSD <= 0 {
				t.Error("no cost recorded")
			}
		})
	}
}

// A step that answers no pending call is refused.
func TestPoliciesRejectStrayToolResult(t *testing.T) {
	for _, p := range bench.Policies() {
		env, _ := polEnv(t, 4000)
		s := newPolSession(t, p.Name, env)
		s.user("!say hello")
		_, err := s.a.Step(t.Context(), []hippocam.Message{{Role: hippocam.RoleTool, ToolCallID: "nope", Content: "x"}})
		if hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("%s: stray tool result gave %v, want EINVALID", p.Name, err)
		}
	}
}

// longSession feeds an early fact, a detail and enough filler to pass a 3000-token window
// several times, then asks about both.
func longSession(s *polSession) (fact, detail string) {
	s.user("alpha := 1\ndetail beta := 2\n!say noted")
	for i := 0; i < 10; i++ {
		s.user(polFiller(400) + "\n!say ok")
	}
	return s.user("!ask alpha"), s.user("!ask beta")
}

func TestTruncateForgets(t *testing.T) {
	env, rec := polEnv(t, 3000)
	s := newPolSession(t, "truncate", env)
	fact, detail := longSession(s)
	polWant(t, "early fact", fact, "alpha := unknown")
	polWant(t, "early detail", detail, "beta := unknown")
	if s.overflowed() {
		t.Error("truncate overflowed")
	}
	if n := s.maxRequest(); n > 2400 {
		t.Errorf("largest request %d, want at most ρW = 2400", n)
	}
	if len(rec.calls) != 1 || rec.count(hippocam.CallAgent) != len(s.turns) {
		t.Errorf("calls %v, want only the %d agent calls", rec.calls, len(s.turns))
	}
	// The oldest exchanges went, the latest stayed.
	req := rec.lastRequest(hippocam.CallAgent)
	if req.Messages[0].Role != hippocam.RoleSystem || strings.Contains(req.Messages[1].Content, "alpha") {
		t.Errorf("unexpected head of the last request: %q, %q", req.Messages[0].Content, req.Messages[1].Content)
	}
}

// Truncation keeps a tool exchange whole: a tool result never loses its call.
func TestTruncateKeepsExchangesWhole(t *testing.T) {
	env, rec := polEnv(t, 3000)
	s := newPolSession(t, "truncate", env)
	for i := 0; i < 8; i++ {
		s.user(`!call read_file {"path":"f.csv"}`)
		s.results(polFiller(300))
		s.user(polFiller(200) + "\n!say ok")
		req := rec.lastRequest(hippocam.CallAgent)
		if first := req.Messages[1]; first.Role == hippocam.RoleTool {
			t.Fatalf("step %d: the request starts with a tool result", i)
		}
	}
}

func TestFullOverflows(t *testing.T) {
	env, _ := polEnv(t, 3000)
	s := newPolSession(t, "full", env)
	fact, detail := longSession(s)
	polWant(t, "early fact", fact, "alpha := 1")
	polWant(t, "early detail", detail, "beta := 2")
	if !s.overflowed() {
		t.Error("full never marked an overflow")
	}
	if n := s.maxRequest(); n <= 3000 {
		t.Errorf("largest request %d, want more than W", n)
	}
	if s.turns[0].Overflow {
		t.Error("the first, small step is marked as an overflow")
	}
}

func TestFlatSummaryKeepsFactsNotDetails(t *testing.T) {
	env, rec := polEnv(t, 3000)
	s := newPolSession(t, "flat-summary", env)
	s.user("alpha := 0\n!say noted")
	fact, detail := longSession(s)
	polWant(t, "fact", fact, "alpha := 1")
	polWant(t, "detail", detail, "beta := unknown")
	if rec.count(hippocam.CallPalim) < 2 {
		t.Errorf("%d summaries, want the summary rewritten at least once", rec.count(hippocam.CallPalim))
	}
	if s.overflowed() {
		t.Error("flat-summary overflowed")
	}
	u := s.usage()
	if u[hippocam.CallPalim].Calls != rec.count(hippocam.CallPalim) || u[hippocam.CallPalim].Output == 0 {
		t.Errorf("palim usage %+v for %d calls", u[hippocam.CallPalim], rec.count(hippocam.CallPalim))
	}
	// One summary, at the top, after the system prompt; the latest value only.
	req := rec.lastRequest(hippocam.CallAgent)
	summaries := 0
	for i, m := range req.Messages {
		if strings.HasPrefix(m.Content, "Summary of the earlier conversation") {
			summaries++
			if i != 1 || m.Role != hippocam.RoleUser {
				t.Errorf("summary at %d with role %s", i, m.Role)
			}
			if strings.Contains(m.Content, "alpha := 0") || !strings.Contains(m.Content, "alpha := 1") {
				t.Errorf("summary does not hold just the latest value:\n%s", m.Content)
			}
		}
	}
	if summaries != 1 {
		t.Errorf("%d summaries in the request, want 1", summaries)
	}
	if len(req.Tools) != 0 {
		t.Errorf("the main request offers %d tools", len(req.Tools))
	}
	// The summarizer reads the old summary first, then the messages, then its instruction.
	sreq := rec.lastRequest(hippocam.CallPalim)
	if !strings.HasPrefix(sreq.Messages[1].Content, "Summary of the earlier conversation") {
		t.Errorf("the last summarizer request does not start with the old summary: %q", sreq.Messages[1].Content)
	}
}

func TestRetrievePrependAnswersFromStore(t *testing.T) {
	env, rec := polEnv(t, 3000)
	s := newPolSession(t, "retrieve-prepend", env)
	fact, detail := longSession(s)
	polWant(t, "fact after truncation", fact, "alpha := 1")
	s.user("alpha := 5\n!say revised")
	for i := 0; i < 8; i++ {
		s.user(polFiller(400) + "\n!say ok")
	}
	fact = s.user("!ask alpha")
	polWant(t, "fact", fact, "alpha := 5")
	polWant(t, "detail", detail, "beta := unknown")
	if s.overflowed() {
		t.Error("retrieve-prepend overflowed")
	}
	if n := s.maxRequest(); n > 2400 {
		t.Errorf("largest request %d, want at most ρW = 2400", n)
	}
	if got := rec.count(hippocam.CallPrecip); got != len(s.turns) {
		t.Errorf("%d extraction calls for %d turns", got, len(s.turns))
	}
	req := rec.lastRequest(hippocam.CallAgent)
	mem := req.Messages[1].Content
	if !strings.HasPrefix(mem, "Relevant memories") || !strings.Contains(mem, "- alpha := 5") || strings.Contains(mem, "alpha := 1") {
		t.Errorf("memories message:\n%s", mem)
	}
	for _, m := range req.Messages[2:] {
		if strings.Contains(m.Content, "alpha := 5") {
			t.Errorf("the revision is still in the conversation; the test needs it truncated")
		}
	}
	if strings.Contains(mem, "beta := 2") {
		t.Errorf("the extractor kept the detail: %s", mem)
	}
}

// The memory message ranks the facts that share terms with the latest user message first.
func TestRetrievePrependRanking(t *testing.T) {
	env, rec := polEnv(t, 8000)
	s := newPolSession(t, "retrieve-prepend", env)
	var facts []string
	for i := 0; i < 14; i++ {
		facts = append(facts, "item_"+string(rune('a'+i))+" := v"+string(rune('a'+i)))
	}
	facts = append(facts, "shop_owner := Dana")
	s.user(strings.Join(facts, "\n") + "\n!say stored")
	s.user("who is the owner of the shop?\n!say ok")
	mem := rec.lastRequest(hippocam.CallAgent).Messages[1].Content
	lines := strings.Split(mem, "\n")
	if len(lines) != 11 {
		t.Fatalf("%d memory lines, want the header and k = 10:\n%s", len(lines), mem)
	}
	polWant(t, "best match", lines[1], "- shop_owner := Dana")
}
