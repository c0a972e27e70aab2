package sim_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
)

func TestParseNumericKey(t *testing.T) {
	tests := []struct {
		in, want string // want "" means not a key
	}{
		{"sales[store=north,week=12]", "sales[store=north,week=12]"},
		{"  sales[week=12, store = north]  ", "sales[store=north,week=12]"},
		{"churn", "churn"},
		{"churn[plan=basic plus,region=eu-west]", "churn[plan=basic plus,region=eu-west]"},
		{"sales[store=north", ""},
		{"sales[store]", ""},
		{"sales[]", ""},
		{"sales[store=n,store=s]", ""},
		{"sales[store=a=b]", ""},
		{"[store=n]", ""},
		{"sales [store=n]", ""},
		{"sales[store=n] extra", ""},
	}
	for _, tt := range tests {
		k, ok := sim.ParseNumericKey(tt.in)
		if ok != (tt.want != "") || (ok && k.String() != tt.want) {
			t.Errorf("ParseNumericKey(%q) = %q, %v; want %q", tt.in, k.String(), ok, tt.want)
		}
	}
	k, rest, ok := sim.CutNumericKey("sales[store=n,week=3] = 4")
	if !ok || rest != " = 4" || len(k.Dims) != 2 || k.Dims[0] != (sim.Dim{Name: "store", Value: "n"}) {
		t.Fatalf("CutNumericKey: %+v, %q, %v", k, rest, ok)
	}
}

func TestNumericKeyLoose(t *testing.T) {
	key := func(s string) sim.NumericKey {
		k, ok := sim.ParseNumericKey(s)
		if !ok {
			t.Fatalf("%q is not a key", s)
		}
		return k
	}
	a := key("sales[store=north,week=11]")
	tests := []struct {
		other       string
		loose, same bool
	}{
		{"sales[week=12,store=north]", true, false},
		{"sales[week=11,store=north]", true, true},
		{"sales[store=north]", true, false},
		{"sales[store=south,week=12]", false, false},
		{"revenue[store=north,week=11]", false, false},
		{"sales[store=north,week=late]", false, false},
		{"sales[store=north,region=eu,week=11]", false, false},
	}
	for _, tt := range tests {
		b := key(tt.other)
		if a.Loose(b) != tt.loose || b.Loose(a) != tt.loose || a.Same(b) != tt.same {
			t.Errorf("%s vs %s: loose %v, same %v; want %v, %v", a, b, a.Loose(b), a.Same(b), tt.loose, tt.same)
		}
	}
}

// numericAnswer is the agent's answer to the task (the last message) after the given earlier
// context, advisory first when there is one.
func numericAnswer(t *testing.T, advisory string, msgs ...wire.ChatMessage) string {
	t.Helper()
	var all []wire.ChatMessage
	if advisory != "" {
		all = append(all, user(hippocam.AdvisoryHeader+"\n"+advisory))
	}
	return answerText(t, complete(t, mustModel(t), hippocam.CallAgent, agentChat(append(all, msgs...)...)))
}

func TestEstimate(t *testing.T) {
	const ask = "estimate sales[store=north,week=12]"
	tests := []struct {
		name, advisory string
		earlier        []wire.ChatMessage
		task, want     string
	}{
		{name: "FirstForecast", advisory: "- forecast sales[week=12,store=north] = 120.30 ± 4.1 (support 11)\n- forecast sales[store=north,week=12] = 99 ± 1 (support 3)",
			task: "Weekly sales\nobs sales[store=north,week=11] = 118.4\n" + ask, want: "120.3"},
		{name: "BareForecast", advisory: "forecast sales[store=north,week=12] = 121", task: "Weekly sales\n" + ask, want: "121"},
		{name: "ForecastSupportOnly", advisory: "* forecast sales[store=north,week=12] = 122.5 (support 2)", task: ask, want: "122.5"},
		{name: "ForecastOfAnotherPointIgnored", advisory: "forecast sales[store=north,week=13] = 130 ± 2 (support 9)",
			task: "obs sales[store=north,week=11] = 118.4\n" + ask, want: "118.4"},
		{name: "ForecastWithTrailingWordsIgnored", advisory: "forecast sales[store=north,week=12] = 130 roughly",
			task: "obs sales[store=north,week=11] = 118.4\n" + ask, want: "118.4"},
		{name: "CurrentMessageIsLatest", advisory: "obs sales[store=north,week=11] = 100\nfeedback: sales[store=north,week=11] = 99, outcome sales[store=north,week=11] = 105",
			task: "obs sales[store=north,week=9] = 90\n" + ask, want: "90"},
		{name: "LastLineOfAMessage", task: "obs sales[store=north,week=10] = 111\nobs sales[store=south,week=11] = 70\n- obs sales[week=11,store=north] = 118.40\n" + ask, want: "118.4"},
		{name: "FeedbackOutcome", earlier: []wire.ChatMessage{user("obs sales[store=north,week=10] = 80"), user("feedback: sales[store=north,week=11] = 85, outcome sales[store=north,week=11] = 88")},
			task: ask, want: "88"},
		{name: "NoAnswerFeedbackOutcome", earlier: []wire.ChatMessage{user("feedback: sales[store=north,week=11]: no answer, outcome sales[store=north,week=11] = 87.5")},
			task: ask, want: "87.5"},
		{name: "LatestMessageWins", earlier: []wire.ChatMessage{user("feedback: sales[store=north,week=11] = 85, outcome sales[store=north,week=11] = 88"), user("obs sales[store=north,week=10] = 80")},
			task: ask, want: "80"},
		{name: "OtherStoreIgnored", task: "obs sales[store=south,week=11] = 70\n" + ask, want: "unknown"},
		{name: "NothingVisible", task: "Weekly sales\n" + ask, want: "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := numericAnswer(t, tt.advisory, append(tt.earlier, user(tt.task))...)
			if want := "sales[store=north,week=12] = " + tt.want; got != want {
				t.Fatalf("answer %q, want %q", got, want)
			}
		})
	}
}

func TestEstimateCurve(t *testing.T) {
	const key = "churn[plan=basic,region=eu]"
	ask := "estimate-curve " + key + " over 4"
	// The Kaplan–Meier curve of the counts below: interval 1 loses 5 of 50, interval 2 9 of 45,
	// interval 3 has no counts, interval 4 pools two lines (3 of 30 and 1 of 10).
	counts := "counts churn[region=eu,plan=basic] interval=1 at_risk=50 events=5\n" +
		"counts churn[plan=basic,region=eu] interval=2 at_risk=45 events=9\n" +
		"counts churn[plan=basic,region=eu] interval=4 at_risk=30 events=3\n" +
		"- counts churn[plan=basic,region=eu] interval=4 at_risk=10 events=1\n" +
		"counts churn[plan=pro,region=eu] interval=1 at_risk=50 events=50\n"
	s1 := 1 - 5.0/50
	s2 := s1 * (1 - 9.0/45)
	s4 := s2 * (1 - 4.0/40)
	km := fmt.Sprintf("[%.3g, %.3g, %.3g, %.3g]", s1, s2, s2, s4)
	tests := []struct {
		name, advisory string
		earlier        []wire.ChatMessage
		task, want     string
	}{
		{name: "Advice", advisory: "- curve churn[region=eu,plan=basic] = [0.95, 0.9, 0.86, 0.8] (support 400)\n- curve " + key + " = [0.5, 0.4, 0.3, 0.2]",
			task: counts + ask, want: "[0.95, 0.9, 0.86, 0.8]"},
		{name: "AdviceCut", advisory: "curve " + key + " = [0.95, 0.9, 0.86, 0.8, 0.7, 0.6]", task: ask, want: "[0.95, 0.9, 0.86, 0.8]"},
		{name: "AdviceContinued", advisory: "curve " + key + " = [0.950, 0.9]", task: ask, want: "[0.95, 0.9, 0.9, 0.9]"},
		{name: "AdviceOfAnotherEntityIgnored", advisory: "curve churn[plan=pro,region=eu] = [0.5, 0.4, 0.3, 0.2] (support 9)", task: counts + ask, want: km},
		{name: "RealizedInFeedback", earlier: []wire.ChatMessage{user("feedback: " + key + " = [0.9, 0.8, 0.7, 0.6], outcome " + key + " = [0.93, 0.88, 0.84, 0.79]")},
			task: counts + ask, want: "[0.93, 0.88, 0.84, 0.79]"},
		{name: "KaplanMeier", task: "Churn by plan\n" + counts + ask, want: km},
		{name: "CountsOfEarlierMessagesIgnored", earlier: []wire.ChatMessage{user(counts)}, task: ask, want: "unknown"},
		{name: "Nothing", task: ask, want: "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := numericAnswer(t, tt.advisory, append(tt.earlier, user(tt.task))...)
			if want := key + " = " + tt.want; got != want {
				t.Fatalf("answer %q, want %q", got, want)
			}
		})
	}
	if km != "[0.9, 0.72, 0.72, 0.648]" {
		t.Fatalf("the test's own Kaplan–Meier curve is %s", km)
	}
}

func TestEstimateEntities(t *testing.T) {
	const ask = "estimate-entities power"
	dets := "det freq=103.42 bw=0.20 power=-45.10\n- det freq=250.1 bw=1.5 power=-60\ndet freq=300 bw=2\n"
	tests := []struct {
		name, advisory string
		earlier        []wire.ChatMessage
		task, want     string
	}{
		{name: "Advice", advisory: "- entity freq=103.41 power=-44.6 (support 5)\n- entity freq=180 power=-70 (support 2)\n- entity freq=220 power=-50\n- entity freq=250.2 power=-59.5 (support 3)\n- entity freq=400 bw=3 (support 8)",
			task: dets + ask, want: "entity freq=103.41 power=-44.6\nentity freq=250.2 power=-59.5"},
		{name: "WeakAdviceFallsBackToDetections", advisory: "- entity freq=103.41 power=-44.6 (support 2)", task: dets + ask,
			want: "entity freq=103.42 power=-45.1\nentity freq=250.1 power=-60"},
		{name: "DetectionsOfEarlierMessagesIgnored", earlier: []wire.ChatMessage{user(dets)}, task: "det freq=99 power=-40\n" + ask, want: "entity freq=99 power=-40"},
		{name: "Nothing", task: ask, want: "entities: none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := numericAnswer(t, tt.advisory, append(tt.earlier, user(tt.task))...); got != tt.want {
				t.Fatalf("answer %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNumericAndDecisionsInOneAnswer(t *testing.T) {
	task := "Weekly review\ntags: x\ndecide unit: boxes | pallets\nobs sales[store=n,week=3] = 7\nestimate sales[store=n,week=4]\n!say done\nestimate-entities power\ndet freq=1 power=2"
	got := numericAnswer(t, "use unit = pallets", user(task))
	if want := "unit = pallets\nsales[store=n,week=4] = 7\ndone\nentity freq=1 power=2"; got != want {
		t.Fatalf("answer %q, want %q", got, want)
	}
	// An advisory quotes earlier tasks: its requests are not the task's.
	if got := numericAnswer(t, "estimate sales[store=n,week=4]\nobs sales[store=n,week=3] = 7", user("!say hi")); got != "hi" {
		t.Fatalf("answer %q, want hi", got)
	}
}

// routed asks the simulated router where a task goes.
func routed(t *testing.T, task string, systems []string, clusters string) string {
	t.Helper()
	var offered []string
	for _, s := range systems {
		offered = append(offered, fmt.Sprintf(`{"id":%q,"description":"a system"}`, s))
	}
	input := fmt.Sprintf(`{"task":{"messages":[{"role":"user","content":%q}]},"systems":[%s],"clusters":[%s]}`, task, strings.Join(offered, ","), clusters)
	resp := complete(t, mustModel(t), hippocam.CallRouter, chat(system("You route tasks."), user("Route the task.\n\nRouting input, as JSON:\n"+input)))
	var a struct{ Action, Cluster, System, Scope string }
	decodeText(t, resp, &a)
	if a.Action == "reuse" {
		return "reuse " + a.Cluster
	}
	return "create " + a.System + " | " + a.Scope
}

// decodeText decodes the answer's text as JSON into v.
func decodeText(tb testing.TB, resp *wire.ChatResponse, v any) {
	tb.Helper()
	if err := json.Unmarshal([]byte(answerText(tb, resp)), v); err != nil {
		tb.Fatalf("answer is not the expected JSON: %v", err)
	}
}

func TestRouterNumeric(t *testing.T) {
	all := []string{"icl", "hippocam", "regression", "hazard", "entities"}
	tests := []struct {
		name, task string
		systems    []string
		clusters   string
		want       string
	}{
		{"Estimate", "Weekly sales forecast\nobs sales[store=n,week=1] = 3\nestimate sales[store=n,week=2]", all, "", "create regression | Weekly sales forecast"},
		{"Curve", "Churn\nestimate-curve churn[plan=basic] over 6", all, "", "create hazard | Churn"},
		{"Entities", "Spectrum scan\ndet freq=1 bw=2 power=3\nestimate-entities power", all, "", "create entities | Spectrum scan"},
		{"FirstOfferedRequest", "Mixed\nestimate-entities power\nestimate x[a=b]", []string{"icl", "regression"}, "", "create regression | Mixed"},
		{"WithADecision", "Mixed\ndecide unit: a | b\nestimate x[a=b]", all, "", "create regression | Mixed"},
		{"NotOffered", "Weekly sales forecast\nestimate sales[store=n,week=2]", []string{"icl", "hippocam"}, "", "create hippocam | Weekly sales forecast"},
		{"TitleReuseFirst", "Weekly sales forecast\nestimate sales[store=n,week=2]", all, `{"id":"c1","system":"icl","description":"Weekly sales forecast","trajectories":1}`, "reuse c1"},
		{"RouteFirst", "Weekly sales forecast\n#route icl | sales\nestimate sales[store=n,week=2]", all, "", "create icl | sales"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := routed(t, tt.task, tt.systems, tt.clusters); got != tt.want {
				t.Fatalf("router: %q, want %q", got, tt.want)
			}
		})
	}
}
