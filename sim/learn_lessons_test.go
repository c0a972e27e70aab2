package sim_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sim"
)

// lessonsCall sends instruction as a lessons-system contract call and decodes the JSON answer.
func lessonsCall(tb testing.TB, m *sim.Model, role hippocam.CallRole, instruction string, v any) {
	tb.Helper()
	resp := complete(tb, m, role, chat(system("You keep an agent's lessons."), user(instruction)))
	dec := json.NewDecoder(strings.NewReader(answerText(tb, resp)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		tb.Fatalf("%s answer: %v", role, err)
	}
}

type judgeAnswer struct{ Verdict, Diagnosis, Reflection string }

func TestJudge(t *testing.T) {
	tests := []struct {
		name, feedback, verdict, reflection string
	}{
		{"AllRight", "> feedback: status_filter = shipped right\n> feedback: currency = eur right", "ok", ""},
		{"Wrong", "> feedback: status_filter = all wrong\n> feedback: currency = eur right", "surprise", "chose status_filter = all; marked wrong"},
		{"Lucky", "> feedback: status_filter = all right, reference status_filter = shipped", "surprise", "chose status_filter = all; reference status_filter = shipped"},
		{"ReferenceChosen", "> feedback: status_filter = shipped right, reference status_filter = shipped", "ok", ""},
		{"AskedFact", "> feedback: owner := Dana wrong", "surprise", "chose owner := Dana; marked wrong"},
		{"None", "> (none)", "ok", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			instruction := "Judge it.\n\n## Task\n> Sales report\n> tags: revenue\n\n## Attempt\n> [assistant] status_filter = all\n> feedback: other = x wrong\n\n## Feedback\n" + tt.feedback
			var v judgeAnswer
			lessonsCall(t, mustModel(t), hippocam.CallJudge, instruction, &v)
			if v.Verdict != tt.verdict || v.Reflection != tt.reflection {
				t.Fatalf("got %+v, want verdict %s reflection %q", v, tt.verdict, tt.reflection)
			}
		})
	}
}

type lessonAnswer struct {
	Kind, Key, Value, Decision string
	When                       []string
	NotWhen                    []string `json:"not_when"`
	Evidence                   string
}

func TestLessonsRuleOrder(t *testing.T) {
	// A candidate that is both a conflict with #1 and a merge with #2 is resolved as a conflict
	// (the rules apply in order), and #2 stays.
	instruction := "## Candidate\nuse status_filter = shipped when: revenue, weekly\n   decision: x\n   evidence: 2 of 4 ok\n\n" +
		"## Similar lessons\n#1 use status_filter = all when: revenue, weekly\n   decision: y\n#2 use status_filter = shipped when: weekly, amazon\n   decision: z"
	var v struct {
		Action      string
		DuplicateOf int `json:"duplicate_of"`
		Add         []lessonAnswer
		Delete      []struct {
			Number int
			Reason string
		}
		Reason string
	}
	lessonsCall(t, mustModel(t), hippocam.CallLessons, instruction, &v)
	if v.Action != "conflict" || len(v.Delete) != 1 || v.Delete[0].Number != 1 || len(v.Add) != 1 {
		t.Fatalf("got %+v, want a conflict deleting #1 and adding the candidate", v)
	}
	want := lessonAnswer{Kind: "use", Key: "status_filter", Value: "shipped", Decision: "choose shipped for status_filter",
		When: []string{"revenue", "weekly"}, NotWhen: []string{}, Evidence: "2 of 4 ok"}
	if !reflect.DeepEqual(v.Add[0], want) {
		t.Fatalf("added %+v, want %+v", v.Add[0], want)
	}
}

func TestLessonsWithoutCandidate(t *testing.T) {
	m := mustModel(t)
	_, err := m.InProcess().Complete(t.Context(), &hippocam.Request{Role: hippocam.CallLessons, Messages: []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: "You keep lessons."},
		{Role: hippocam.RoleUser, Content: "## Candidate\nnothing here\n"},
	}})
	if hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("err = %v, want EINVALID", err)
	}
}
