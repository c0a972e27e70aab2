package sim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// The judge role grades an eval answer by the reference's words, and still judges the lessons
// system's attempts when the instruction is theirs.
func TestJudgeGradesAnswers(t *testing.T) {
	tests := []struct{ name, reference, answer, verdict string }{
		{"AllWords", "blue", "fav_color := blue", "correct"},
		{"CaseAndPunctuation", "7 May 2023", "It was on 7 may, 2023.", "correct"},
		{"SomeWords", "pottery and painting", "painting", "partially_correct"},
		{"NoWord", "blue", "fav_color := unknown", "wrong"},
		{"NoAnswer", "blue", "", "wrong"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			instruction := "Grade it.\n\n## Question\n\nWhat colour?\n\n## Reference answer\n\n" + tt.reference + "\n\n## Answer to grade\n\n" + tt.answer + "\n\nReply with a JSON object."
			resp := complete(t, mustModel(t), hippocam.CallJudge, chat(system("You grade answers."), user(instruction)))
			var v struct{ Verdict, Reason string }
			dec := json.NewDecoder(strings.NewReader(answerText(t, resp)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			if v.Verdict != tt.verdict || v.Reason == "" {
				t.Errorf("verdict %q (%q), want %q", v.Verdict, v.Reason, tt.verdict)
			}
		})
	}
}
