package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// derivationContext is a small dated log: an earlier memory in view, then the span (from index
// 1) of one session dated Thursday 25 May 2023 with relative expressions.
func derivationContext() []hippocam.Message {
	return []hippocam.Message{
		{ID: "m1", Role: hippocam.RoleUser, Content: "[ref:r1] Consolidated memory of my earlier work.\nKnowledge:\n- [neutral] Order ord_4471 was shipped on 2 May 2023."},
		{ID: "m2", Role: hippocam.RoleUser, Content: "Log, 3:10 pm on 25 May, 2023:\n" +
			"Ana: I ran the lake race yesterday, it took 42min. Last Saturday I fixed the boiler.\n" +
			"Ben: The repair cost 4,750 and the timer is set to 30s. I met three builders two weeks ago.\n" +
			"Ana: We moved here last year and I start the new job next month. The first visit was fine. I grew up in Sweden."},
		{ID: "m3", Role: hippocam.RoleAssistant, Content: "Noted."},
	}
}

func TestGroundingDerivations(t *testing.T) {
	ctx := derivationContext()
	check := func(fact string) []string {
		out := engine.PalimOutput{Narrative: "I read the log.", Knowledge: []hippocam.KnowledgeItem{{Fact: fact, Evaluation: hippocam.EvalNeutral}}}
		return engine.Check(hippocam.CallPalim, ctx, 1, nil, mustJSON(t, out))
	}
	accepted := []struct{ name, fact string }{
		{"date as written", "The log is dated 25 May 2023."},
		{"yesterday", "Ana ran the lake race on 24 May 2023."},
		{"yesterday month first", "Ana ran the lake race on May 24, 2023."},
		{"yesterday ISO", "Ana ran the lake race on 2023-05-24."},
		{"yesterday ordinal", "Ana ran the lake race on the 24th of May 2023."},
		{"yesterday without year", "Ana ran the lake race on 24 May."},
		{"weekday", "Ana fixed the boiler on Saturday 20 May 2023."},
		{"weeks ago", "Ben met the builders around 11 May 2023."},
		{"last year", "They moved in 2022."},
		{"next month", "Ana starts the new job in June 2023."},
		{"unit spelled out", "The timer is set to 30 seconds."},
		{"unit abbreviated", "The race took 42 minutes (42 min)."},
		{"number without separator", "The repair cost 4750."},
		{"count in words", "Ben met 3 builders."},
		{"ordinal in words", "The 1st visit was fine."},
		{"carried over from a memory in view", "Order ord_4471 shipped on 2 May 2023."},
		{"names as written", "Ana told Ben about the boiler; Ben agreed."},
		{"name of the same stem", "Ana has Swedish roots; the builders were Ben's."},
		{"capital starting a sentence", "Yesterday's race went well. Fixing the boiler took a day."},
	}
	for _, c := range accepted {
		t.Run(c.name, func(t *testing.T) {
			if p := check(c.fact); len(p) > 0 {
				t.Errorf("%q refused: %v", c.fact, p)
			}
		})
	}
	refused := []struct{ name, fact, quoted string }{
		{"invented date", "They met on 3 March 2019.", `"3 March 2019"`},
		{"invented date of known parts", "Ana ran the lake race on 2 May 2025.", `"2 May 2025"`},
		{"yesterday of another message's date", "Ana ran the lake race on 1 May 2023.", `"1 May 2023"`},
		{"day the expressions do not reach", "Ana ran the lake race on 9 May 2023.", `"9 May 2023"`},
		{"invented month", "Ana starts the new job in September 2023.", `"September 2023"`},
		{"invented sum", "The repair cost 4,812.", `"4,812"`},
		{"other unit", "The timer is set to 30 kg.", `"30"`},
		{"invented count", "Ben met 7 builders.", `"7"`},
		{"invented identifier", "Order ord_9999 shipped.", `"ord_9999"`},
		{"invented name", "Ana ran the race with Bob Smith.", `"bob", "smith"`},
		{"invented place", "Ana ran the lake race in Paris.", `"paris"`},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			p := check(c.fact)
			if len(p) == 0 || !strings.Contains(strings.Join(p, "; "), c.quoted) {
				t.Errorf("%q: %v, want a refusal quoting %s", c.fact, p, c.quoted)
			}
		})
	}
}

// TestGroundingNeedsAnAnchor: a relative expression derives nothing without a stated date, and a
// date resolved in the context before the span is not lost by the span.
func TestGroundingNeedsAnAnchor(t *testing.T) {
	ctx := []hippocam.Message{{ID: "m1", Role: hippocam.RoleUser, Content: "I ran the race yesterday."}}
	out := engine.PalimOutput{Knowledge: []hippocam.KnowledgeItem{{Fact: "The race was on 24 May 2023.", Evaluation: hippocam.EvalNeutral}}}
	if p := engine.Check(hippocam.CallPalim, ctx, 0, nil, mustJSON(t, out)); len(p) == 0 {
		t.Errorf("a date resolved against no stated date was accepted")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGroundingCarriesTheDate: a message without a date of its own resolves its relative
// expressions against the latest earlier message that states one.
func TestGroundingCarriesTheDate(t *testing.T) {
	ctx := []hippocam.Message{
		{ID: "m1", Role: hippocam.RoleUser, Content: "Log of 2 June 2024 follows."},
		{ID: "m2", Role: hippocam.RoleUser, Content: "Ira: the boat trip was yesterday."},
	}
	for fact, ok := range map[string]bool{"The boat trip was on 1 June 2024.": true, "The boat trip was on 31 May 2024.": false} {
		out := engine.PalimOutput{Knowledge: []hippocam.KnowledgeItem{{Fact: fact, Evaluation: hippocam.EvalNeutral}}}
		if p := engine.Check(hippocam.CallPalim, ctx, 1, nil, mustJSON(t, out)); (len(p) == 0) != ok {
			t.Errorf("%q: problems %v, want accepted %v", fact, p, ok)
		}
	}
}
