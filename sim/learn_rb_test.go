package sim_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sim"
)

// rbCall sends instruction as a reasoning_bank contract call (system prompt, one user message,
// no tools) and decodes the JSON answer into v, strictly.
func rbCall(tb testing.TB, m *sim.Model, role hippocam.CallRole, instruction string, v any) {
	tb.Helper()
	resp := complete(tb, m, role, chat(system("You review an agent's work."), user(instruction)))
	if len(resp.Choices[0].Message.ToolCalls) != 0 {
		tb.Fatalf("%s answered with a tool call; the contract offers none", role)
	}
	if err := json.Unmarshal([]byte(answerText(tb, resp)), v); err != nil {
		tb.Fatalf("%s answer: %v", role, err)
	}
}

const rbTask = "The task:\nSales report\ntags: revenue weekly\nrevenue_target := 1200\ndecide status_filter: shipped | all | pending\ndecide currency: eur | usd\n\nWhat the agent did, in order:\n[agent]\nstatus_filter = all\ncurrency = eur\n\nThe feedback at the end:\n"

func TestRBJudge(t *testing.T) {
	tests := []struct {
		name, feedback, want string
	}{
		{"AllRight", "feedback: status_filter = all right\nfeedback: currency = eur right", "success"},
		{"RightWithReference", "feedback: status_filter = all right, reference status_filter = shipped\nfeedback: currency = eur right", "success"},
		{"OneWrong", "feedback: status_filter = all wrong\nfeedback: currency = eur right", "failure"},
		{"QuestionWrong", "feedback: owner := Dana wrong", "failure"},
		{"NoFeedback", "(none)", "success"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v struct{ Outcome, Rationale string }
			rbCall(t, mustModel(t), hippocam.CallRBJudge, rbTask+tt.feedback+"\n\nDid the agent accomplish it?", &v)
			if v.Outcome != tt.want || v.Rationale == "" {
				t.Fatalf("verdict %+v, want outcome %s with a rationale", v, tt.want)
			}
		})
	}
}

type rbItem struct{ Title, Description, Content string }

func TestRBExtract(t *testing.T) {
	feedback := "feedback: status_filter = all wrong\nfeedback: currency = eur right\n"
	tests := []struct {
		name, instruction string
		want              []rbItem
	}{
		{
			name:        "Success",
			instruction: rbTask + feedback + "\nOutcome: success\nThe reviewer's reason: fine.",
			want: []rbItem{
				{"status_filter", "when: revenue weekly", "use status_filter = all when: revenue weekly"},
				{"currency", "when: revenue weekly", "use currency = eur when: revenue weekly"},
			},
		},
		{
			name:        "Failure",
			instruction: rbTask + feedback + "\nOutcome: failure\nThe reviewer's reason: one was wrong.",
			want: []rbItem{
				{"status_filter", "when: revenue weekly", "avoid status_filter = all when: revenue weekly"},
				{"currency", "when: revenue weekly", "avoid currency = eur when: revenue weekly"},
			},
		},
		{
			name:        "ChosenFromTheAnswerWithoutFeedback",
			instruction: "Pick\ndecide mode: fast | slow\n[agent]\nmode = slow\nOutcome: success",
			want:        []rbItem{{"mode", "when: any task", "use mode = slow"}},
		},
		{
			name:        "AtMostThree",
			instruction: "Pick\ntags: x\ndecide a: p | q\ndecide b: p | q\ndecide c: p | q\ndecide d: p | q\nfeedback: a = p right\nfeedback: b = p right\nfeedback: c = q right\nfeedback: d = q right\nOutcome: success",
			want: []rbItem{
				{"a", "when: x", "use a = p when: x"},
				{"b", "when: x", "use b = p when: x"},
				{"c", "when: x", "use c = q when: x"},
			},
		},
		{
			name:        "FactsAreNeverNotes",
			instruction: "Pick\nrevenue_target := 1200\nfeedback: revenue_target := 1200 right\nOutcome: success",
			want:        []rbItem{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got struct{ Items []rbItem }
			rbCall(t, mustModel(t), hippocam.CallRBExtract, tt.instruction, &got)
			if !reflect.DeepEqual(got.Items, tt.want) && !(len(got.Items) == 0 && len(tt.want) == 0) {
				t.Fatalf("items\n%+v\nwant\n%+v", got.Items, tt.want)
			}
		})
	}
}
