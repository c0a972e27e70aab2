package bench

import (
	"testing"

	"github.com/hippocam/hippocam"
)

func TestJudge(t *testing.T) {
	updated := Question{Key: "plan", Want: "plan := gold", Stale: []string{"plan := bronze", "plan := silver"}}
	detail := Question{Key: "owner", Want: "owner := Dana", Detail: true}
	never := Question{Key: "region", Want: "region := unknown"}
	for _, tc := range []struct {
		name   string
		q      Question
		answer string
		want   Verdict
		got    string
	}{
		{"Right", updated, "plan := gold", Right, "plan := gold"},
		{"RightAmongOtherLines", updated, "Looking it up.\n- plan := gold\n", Right, "plan := gold"},
		{"RightLastLineWins", updated, "plan := silver\nplan := gold", Right, "plan := gold"},
		{"RightNoSpaces", updated, "plan:=gold", Right, "plan := gold"},
		{"RightDetailLine", detail, "detail owner := Dana", Right, "owner := Dana"},
		{"RightUnknown", never, "region := unknown", Right, "region := unknown"},
		{"Stale", updated, "plan := bronze", Stale, "plan := bronze"},
		{"StaleLastLineWins", updated, "plan := gold\nplan := silver", Stale, "plan := silver"},
		{"MissedUnknown", updated, "plan := unknown", Missed, "plan := unknown"},
		{"MissedNoLine", detail, "ok", Missed, "ok"},
		{"MissedOtherKey", detail, "owners := Dana", Missed, "owners := Dana"},
		{"MissedEmpty", never, "", Missed, ""},
		{"Invented", updated, "plan := platinum", Invented, "plan := platinum"},
		{"InventedForUnknownKey", never, "region := eu-west", Invented, "region := eu-west"},
		{"MissedImpressionIsNoValue", detail, "detail owner (in the archive)", Missed, "detail owner (in the archive)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Judge(tc.q, tc.answer)
			if a.Verdict != tc.want || a.Got != tc.got || a.Key != tc.q.Key || a.Want != tc.q.Want || a.Detail != tc.q.Detail {
				t.Fatalf("Judge(%q) = %+v, want verdict %s, got %q", tc.answer, a, tc.want, tc.got)
			}
		})
	}
}

func TestScore(t *testing.T) {
	qs := []Question{
		{Key: "a", Want: "a := 2", Stale: []string{"a := 1"}},
		{Key: "b", Want: "b := x"},
		{Key: "c", Want: "c := unknown"},
		{Key: "d", Want: "d := 4"},
		{Key: "e", Want: "e := 5"},
	}
	answers, tally := Score(qs, []string{"a := 1", "b := x", "c := 3", "d := unknown"})
	want := Tally{Questions: 5, Right: 1, Stale: 1, Invented: 1, Missed: 2}
	if tally != want {
		t.Fatalf("tally %+v, want %+v", tally, want)
	}
	if tally.Accuracy() != 0.2 || (Tally{}).Accuracy() != 0 {
		t.Fatalf("accuracy %v", tally.Accuracy())
	}
	verdicts := []Verdict{Stale, Right, Invented, Missed, Missed}
	for i, a := range answers {
		if a.Verdict != verdicts[i] {
			t.Errorf("answer %d: %s, want %s", i, a.Verdict, verdicts[i])
		}
	}
}

func TestResultScore(t *testing.T) {
	r := &Result{Calls: map[hippocam.CallRole]int{}, NewContentTokens: 1000, RecallCalls: 3}
	r.Usage = usageOf(map[string][4]float64{"agent": {4000, 3000, 100, 0.002}, "janus": {1000, 500, 50, 0.001}})
	r.score([]Question{{Key: "a", Want: "a := 1"}, {Key: "b", Want: "b := 2"}}, []string{"a := 1", "b := 3"})
	if r.Right != 1 || r.Invented != 1 || r.Accuracy != 0.5 || r.Questions != 2 {
		t.Fatalf("verdicts: %+v", r)
	}
	if r.InputTokens != 5000 || r.CachedInputTokens != 3500 || r.UncachedInputTokens != 1500 || r.OutputTokens != 150 {
		t.Fatalf("tokens: in %d, cached %d, uncached %d, out %d", r.InputTokens, r.CachedInputTokens, r.UncachedInputTokens, r.OutputTokens)
	}
	if r.UncachedPerNewContent != 1.5 || r.RecallPerQuestion != 1.5 || r.Calls[hippocam.CallAgent] != 1 || r.Calls[hippocam.CallJanus] != 1 {
		t.Fatalf("ratios: %v per new content, %v recalls per question, calls %v", r.UncachedPerNewContent, r.RecallPerQuestion, r.Calls)
	}
	if r.CostPerCorrectUSD == nil || *r.CostPerCorrectUSD != r.CostUSD || r.CostUSD < 0.00299 || r.CostUSD > 0.00301 {
		t.Fatalf("cost %v, per right answer %v", r.CostUSD, r.CostPerCorrectUSD)
	}
	none := &Result{Calls: map[hippocam.CallRole]int{}}
	none.score([]Question{{Key: "a", Want: "a := 1"}}, []string{"a := unknown"})
	if none.CostPerCorrectUSD != nil || none.Missed != 1 {
		t.Fatalf("no right answer: %+v", none)
	}
}

// usageOf builds usage of one call per role from {input, cached input, output, cost}.
func usageOf(roles map[string][4]float64) hippocam.Usage {
	u := hippocam.Usage{}
	for role, x := range roles {
		u[hippocam.CallRole(role)] = hippocam.RoleUsage{Calls: 1, Input: int64(x[0]), CachedInput: int64(x[1]), Output: int64(x[2]), CostUSD: x[3]}
	}
	return u
}
