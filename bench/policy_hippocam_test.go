package bench_test

import (
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// detailSession opens an intent, reads a file holding a fact and a detail, closes the intent
// (PRECIP turns the detail into an impression) and asks about both.
func detailSession(s *polSession) (fact, detail string) {
	s.user("#open Read the exports | the exports are read\n" + `!call read_file {"path":"exports/shop.csv"}`)
	s.results("revenue_shop := 1200\ndetail shop_owner := Dana\n" + polFiller(300))
	s.user("#close Read the exports\n!say read")
	return s.user("!ask revenue_shop"), s.user("!ask shop_owner")
}

func TestHippocamRecallsDetail(t *testing.T) {
	env, rec := polEnv(t, 4000)
	s := newPolSession(t, "hippocam", env)
	fact, detail := detailSession(s)
	polWant(t, "fact", fact, "revenue_shop := 1200")
	polWant(t, "detail", detail, "shop_owner := Dana")
	last := s.turns[len(s.turns)-1]
	if last.RecallCalls == 0 {
		t.Error("the detail was answered without a recall")
	}
	if rec.count(hippocam.CallPrecip) == 0 || rec.count(hippocam.CallJanus) == 0 {
		t.Errorf("calls %v: JANUS and PRECIP should have run", rec.calls)
	}
	u := s.usage()
	for role, n := range rec.calls {
		got := u[role].Calls
		if got != n {
			t.Errorf("%s: %d calls in the turns' usage, %d made", role, got, n)
		}
	}
	for _, turn := range s.turns {
		if turn.MaxRequestTokens > 4000 || turn.Overflow {
			t.Errorf("request of %d tokens (overflow %v)", turn.MaxRequestTokens, turn.Overflow)
		}
	}
}

func TestHippocamNoRecallAnswersDetailUnknown(t *testing.T) {
	env, rec := polEnv(t, 4000)
	s := newPolSession(t, "hippocam-no-recall", env)
	fact, detail := detailSession(s)
	polWant(t, "fact", fact, "revenue_shop := 1200")
	polWant(t, "detail", detail, "shop_owner := unknown")
	for _, turn := range s.turns {
		if turn.RecallCalls != 0 {
			t.Error("a recall call without the recall tool")
		}
	}
	for _, tool := range rec.lastRequest(hippocam.CallAgent).Tools {
		t.Errorf("the main request offers %q", tool.Name)
	}
}

// prefixSession states an early fact and fills a window of 3,000 to 5,000 tokens more than once
// over, so that pressure control folds the prefix, then asks about the fact. (Below 5,000 tokens
// a PALIM request, with its role prompt in a system message of its own, no longer fits: the span
// is archived without a call instead.)
func prefixSession(s *polSession) string {
	s.user("alpha := 1\n!say noted")
	for i := 0; i < 16; i++ {
		s.user(polFiller(400) + "\n!say ok")
	}
	return s.user("!ask alpha")
}

func TestHippocamKeepsFactThroughFolds(t *testing.T) {
	env, rec := polEnv(t, 8000)
	s := newPolSession(t, "hippocam", env)
	polWant(t, "fact", prefixSession(s), "alpha := 1")
	if rec.count(hippocam.CallPalim) == 0 {
		t.Error("PALIM never ran: the test needs the prefix folded")
	}
}

func TestHippocamNoPrefixTruncates(t *testing.T) {
	env, rec := polEnv(t, 3000)
	s := newPolSession(t, "hippocam-no-prefix", env)
	polWant(t, "fact", prefixSession(s), "alpha := unknown")
	if n := rec.count(hippocam.CallPalim); n != 0 {
		t.Errorf("%d PALIM calls reached the model", n)
	}
	if _, ok := s.usage()[hippocam.CallPalim]; ok {
		t.Error("the turns report PALIM usage")
	}
	for _, turn := range s.turns {
		if turn.MaxRequestTokens > 3000 || turn.Overflow {
			t.Errorf("request of %d tokens (overflow %v)", turn.MaxRequestTokens, turn.Overflow)
		}
	}
	// The folded prefix left only the stub.
	req := rec.lastRequest(hippocam.CallAgent)
	stub := false
	for _, m := range req.Messages {
		if m.Role == hippocam.RoleUser && strings.HasPrefix(m.Content, "[ref:") && strings.Contains(m.Content, "Earlier messages were dropped.") {
			stub = true
		}
	}
	if !stub {
		t.Error("no truncation stub in the last request")
	}
}
