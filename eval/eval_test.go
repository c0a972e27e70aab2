package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/tokenizer"
)

const locomoJSON = `[{"sample_id": "c1", "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
  "session_10_date_time": "9 am on 3 March, 2023", "session_10": [{"speaker": "Bo", "dia_id": "D10:1", "text": "tenth"}],
  "session_2_date_time": "8 am on 2 March, 2023", "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Look!", "img_url": ["http://x/y.jpg"], "blip_caption": "a photo of a dog"}],
  "session_1_date_time": "7 am on 1 March, 2023", "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "first"}, {"speaker": "Bo", "dia_id": "D1:2", "text": "second"}]},
 "qa": [{"question": "Which year?", "answer": 2022, "evidence": ["D1:1"], "category": 2},
        {"question": "Trick?", "adversarial_answer": "no", "evidence": [], "category": 5},
        {"question": "Who?", "answer": "Bo", "evidence": ["D1:2"], "category": 1}]}]`

const longMemEvalJSON = `[{"question_id": "q1_abs", "question_type": "temporal-reasoning", "question": "When?", "answer": 3,
  "question_date": "2023/06/01 (Thu) 10:00", "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/02 (Tue) 09:00"],
  "haystack_session_ids": ["a", "b"], "haystack_sessions": [[{"role": "user", "content": "hi", "has_answer": true}, {"role": "assistant", "content": "hello"}], [{"role": "user", "content": "bye"}]]}]`

func TestParseLoCoMo(t *testing.T) {
	d, err := Parse([]byte(locomoJSON), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != FormatLoCoMo || len(d.Samples) != 1 || d.Excluded["adversarial (LoCoMo category 5)"] != 1 {
		t.Fatalf("parsed %+v", d)
	}
	s := d.Samples[0]
	if len(s.Sessions) != 3 || s.Sessions[0].Date != "7 am on 1 March, 2023" || s.Sessions[2].Turns[0].Text != "tenth" {
		t.Errorf("sessions out of number order: %+v", s.Sessions)
	}
	if got := s.Sessions[1].Turns[0].Text; got != "Look! [shares an image: a photo of a dog]" {
		t.Errorf("image turn %q", got)
	}
	if len(s.Questions) != 2 || s.Questions[0].Gold != "2022" || s.Questions[0].Category != "2" || s.Questions[1].ID != "c1/q3" {
		t.Errorf("questions %+v", s.Questions)
	}
}

func TestParseLongMemEval(t *testing.T) {
	d, err := Parse([]byte(longMemEvalJSON), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != FormatLongMemEval || len(d.Samples) != 1 {
		t.Fatalf("parsed %+v", d)
	}
	s := d.Samples[0]
	q := s.Questions[0]
	if s.ID != "q1_abs" || q.Category != "abstention" || q.Gold != "3" || q.Date != "2023/06/01 (Thu) 10:00" {
		t.Errorf("question %+v", q)
	}
	if len(s.Sessions) != 2 || s.Sessions[1].Date != "2023/05/02 (Tue) 09:00" || s.Sessions[0].Turns[1] != (Turn{"Assistant", "hello"}) {
		t.Errorf("sessions %+v", s.Sessions)
	}
}

func TestParseRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"NotAList":      `{"qa": []}`,
		"Empty":         `[]`,
		"Unknown":       `[{"foo": 1}]`,
		"NoSession":     `[{"conversation": {"speaker_a": "A"}, "qa": []}]`,
		"DatesMismatch": `[{"question_id": "x", "question": "q?", "answer": "a", "haystack_dates": ["d1"], "haystack_sessions": [[], []]}]`,
		"BadAnswer":     `[{"question_id": "x", "question": "q?", "answer": {"a": 1}, "haystack_sessions": [[]]}]`,
	} {
		if _, err := Parse([]byte(in), ""); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	if _, err := Parse([]byte(locomoJSON), "other"); err == nil {
		t.Errorf("an unknown format parsed")
	}
}

func TestSelect(t *testing.T) {
	d := &Dataset{Samples: []Sample{{ID: "a", Questions: make([]Question, 3)}, {ID: "b", Questions: make([]Question, 3)}, {ID: "c", Questions: make([]Question, 1)}}}
	got := Select(d, 4)
	if len(got) != 2 || len(got[0].Questions) != 3 || len(got[1].Questions) != 1 {
		t.Errorf("Select(4) = %+v", got)
	}
	if len(d.Samples[1].Questions) != 3 {
		t.Errorf("Select changed the dataset")
	}
	if n := len(Select(d, 0)); n != 3 {
		t.Errorf("Select(0) kept %d samples", n)
	}
}

func TestSplitAnswers(t *testing.T) {
	tests := []struct {
		reply string
		n     int
		want  []string
	}{
		{"1. Paris\n2) 7 May 2023\n3: blue", 3, []string{"Paris", "7 May 2023", "blue"}},
		{"Here you go:\n1. Paris,\nthe capital\n3. blue", 3, []string{"Paris,\nthe capital", "", "blue"}},
		{"**1.** Paris\n**2.** Rome", 2, []string{"Paris", "Rome"}},
		{"a := x\nb := y", 2, []string{"a := x", "b := y"}},
		{"a := x", 2, []string{"", ""}},
		{"  just one  ", 1, []string{"just one"}},
	}
	for _, tt := range tests {
		got := splitAnswers(tt.reply, tt.n)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("splitAnswers(%q, %d) = %q, want %q", tt.reply, tt.n, got, tt.want)
		}
	}
}

func TestReadVerdict(t *testing.T) {
	for in, want := range map[string]string{
		`{"verdict": "correct", "reason": "same"}`:                     Correct,
		"```json\n{\"verdict\": \"Partially Correct\"}\n```":           Partial,
		`Sure. {"verdict": "incorrect", "reason": "it names another"}`: Wrong,
	} {
		if v, _, err := readVerdict(in); err != nil || v != want {
			t.Errorf("readVerdict(%q) = %q, %v; want %q", in, v, err, want)
		}
	}
	for _, in := range []string{"correct", `{"verdict": "maybe"}`, `{"verdict": 1}`} {
		if _, _, err := readVerdict(in); err == nil {
			t.Errorf("readVerdict(%q) read a verdict", in)
		}
	}
}

// fit keeps the newest sessions that fit, cutting the oldest one kept at a turn, and never goes
// over the window.
func TestFitKeepsTheNewest(t *testing.T) {
	tok := tokenizer.MustDefault()
	var s Sample
	for i := 0; i < 20; i++ {
		var sess Session
		for j := 0; j < 10; j++ {
			sess.Turns = append(sess.Turns, Turn{"Ann", strings.Repeat("word ", 20) + string(rune('a'+i))})
		}
		s.Sessions = append(s.Sessions, sess)
	}
	r := &runner{cfg: Config{Window: 3000, AnswerTokens: 100, Tok: tok}}
	q := questionMessage(Question{Text: "Which?"})
	msgs := r.fit(s, q, 1)
	if n := hippocam.RequestTokens(tok, msgs, nil); n > 3000-100 || n < 3000-100-300 {
		t.Errorf("the request takes %d tokens of a budget of 2900", n)
	}
	last := msgs[len(msgs)-2].Content
	if !strings.HasPrefix(last, "Conversation session 20 of 20") || msgs[len(msgs)-1].Content != q.Content || msgs[0].Role != hippocam.RoleSystem {
		t.Errorf("the request does not end with the newest session and the question")
	}
	first := msgs[1].Content
	if strings.Count(first, "Ann:") == 10 {
		t.Errorf("the oldest session kept was not cut at a turn")
	}
}

func TestSummaryScores(t *testing.T) {
	res := &Result{Format: "locomo", Model: "m", Judge: "m", Window: 4000, Usage: map[string]CondUsage{}, Rows: []Row{
		{Condition: "full", Category: "1", Verdict: Correct, InputTokens: 10},
		{Condition: "full", Category: "1", Verdict: Partial, InputTokens: 10},
		{Condition: "full", Category: "2", Verdict: Wrong},
		{Condition: "full", Category: "10", Verdict: Unjudged},
		{Condition: "truncate", Category: "1", Verdict: Wrong},
	}}
	s := Summarize(res)
	if got := s.Tallies["full"]["1"].Score(); got != 0.75 {
		t.Errorf("score of category 1 = %v, want 0.75", got)
	}
	if got := s.Tallies["full"][AllCategories].Score(); got != 1.5/4 {
		t.Errorf("overall score = %v", got)
	}
	if strings.Join(s.Categories, ",") != "1,2,10" || s.Totals["full"].Answer.Input != 20 {
		t.Errorf("categories %v, totals %+v", s.Categories, s.Totals["full"])
	}
	if _, ok := s.Tallies["truncate"]["2"]; ok || !math.IsNaN((&Tally{}).Score()) {
		t.Errorf("a category with no question has a tally")
	}
	md := s.Markdown(res)
	for _, want := range []string{"| 1 | 2 | 75.0% | 0.0% |", "| 2 | 1 | 0.0% | n/a |", "| full | 1 | 1 | 1 | 1 | 20 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if svg := string(s.Plot(res)); !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "75%") || !strings.Contains(svg, "n/a") {
		t.Errorf("plot:\n%s", svg)
	}
}
