package reasoningbank_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/reasoningbank"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

func newSystem(tb testing.TB) (*reasoningbank.System, *learn.Meter) {
	tb.Helper()
	tok := tokenizer.MustDefault()
	meter := learn.NewMeter(sim.New(tok).InProcess(), hippocam.DefaultPrices)
	return reasoningbank.New(&learn.Env{Model: meter, Tok: tok}), meter
}

func task(id, text string) hippocam.Task {
	return hippocam.Task{ID: id, Key: id, Attempt: 1, Messages: []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: "You are a reporting agent."},
		{Role: hippocam.RoleUser, Content: text},
	}}
}

// trajectory is task t answered with answer and ended with feedback.
func trajectory(t hippocam.Task, answer, feedback string) hippocam.Trajectory {
	msgs := append([]hippocam.Message(nil), t.Messages...)
	msgs = append(msgs, hippocam.Message{Role: hippocam.RoleAssistant, Content: answer})
	return hippocam.Trajectory{ID: t.ID + "#1", Task: t, Messages: msgs, Feedback: feedback}
}

func state(tb testing.TB, raw json.RawMessage) reasoningbank.State {
	tb.Helper()
	var st reasoningbank.State
	if err := json.Unmarshal(raw, &st); err != nil {
		tb.Fatalf("state: %v", err)
	}
	return st
}

var (
	sales  = task("t1", "Weekly sales report\ntags: revenue weekly\ndecide status_filter: shipped | all | pending")
	stock  = task("t2", "Warehouse stock count\ntags: stock monthly\ndecide unit: boxes | pallets")
	sales2 = task("t3", "Weekly sales report for the north region\ntags: revenue weekly north\ndecide status_filter: shipped | all | pending")
)

func TestUpdateJudgesAndExtracts(t *testing.T) {
	sys, meter := newSystem(t)
	ctx := context.Background()
	raw, err := sys.Update(ctx, nil, []hippocam.Trajectory{
		trajectory(sales, "status_filter = all", "feedback: status_filter = all wrong"),
		trajectory(stock, "unit = boxes", "feedback: unit = boxes right"),
	})
	if err != nil {
		t.Fatal(err)
	}
	st := state(t, raw)
	if len(st.Records) != 2 {
		t.Fatalf("%d records, want 2", len(st.Records))
	}
	if r := st.Records[0]; r.Outcome != reasoningbank.Failure || len(r.Items) != 1 || r.Items[0].Content != "avoid status_filter = all when: revenue weekly" {
		t.Fatalf("record of the failed task: %+v", r)
	}
	if r := st.Records[1]; r.Outcome != reasoningbank.Success || len(r.Items) != 1 || r.Items[0].Content != "use unit = boxes when: stock monthly" {
		t.Fatalf("record of the successful task: %+v", r)
	}
	if strings.Contains(st.Records[0].Request, "reporting agent") {
		t.Fatalf("the request holds the framing: %q", st.Records[0].Request)
	}
	if got := sys.Entries(raw); got != 2 {
		t.Fatalf("Entries = %d, want 2", got)
	}
	u := meter.Usage()
	if u[hippocam.CallRBJudge].Calls != 2 || u[hippocam.CallRBExtract].Calls != 2 {
		t.Fatalf("calls by role %+v, want 2 rb_judge and 2 rb_extract", u)
	}
	// The same trajectory again changes nothing and calls nothing.
	again, err := sys.Update(ctx, raw, []hippocam.Trajectory{trajectory(stock, "unit = boxes", "feedback: unit = boxes right")})
	if err != nil || string(again) != string(raw) {
		t.Fatalf("second update of one trajectory: %v, state changed: %v", err, string(again) != string(raw))
	}
	if meter.Usage()[hippocam.CallRBJudge].Calls != 2 {
		t.Fatal("a trajectory applied already was judged again")
	}
}

func TestReadTakesTheMostSimilarEarlierTaskOnly(t *testing.T) {
	sys, _ := newSystem(t)
	ctx := context.Background()
	raw, err := sys.Update(ctx, nil, []hippocam.Trajectory{
		trajectory(sales, "status_filter = all", "feedback: status_filter = all wrong"),
		trajectory(stock, "unit = boxes", "feedback: unit = boxes right"),
	})
	if err != nil {
		t.Fatal(err)
	}
	adv, err := sys.Read(ctx, raw, &sales2, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if adv.Entries != 1 || !strings.Contains(adv.Text, "avoid status_filter = all when: revenue weekly") || strings.Contains(adv.Text, "unit") {
		t.Fatalf("advisory for a sales task: %d entries\n%s", adv.Entries, adv.Text)
	}
	// A task never reads its own notes: the sales task itself gets the other task's.
	own, err := sys.Read(ctx, raw, &sales, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(own.Text, "status_filter") {
		t.Fatalf("the task read its own notes:\n%s", own.Text)
	}
	// Nothing fits a tiny budget; an empty state gives an empty advisory.
	if tiny, _ := sys.Read(ctx, raw, &sales2, 5); tiny.Text != "" || tiny.Entries != 0 {
		t.Fatalf("advisory within 5 tokens: %+v", tiny)
	}
	if empty, err := sys.Read(ctx, nil, &sales2, 1000); err != nil || empty.Text != "" {
		t.Fatalf("advisory of an empty state: %+v, %v", empty, err)
	}
}

func TestForget(t *testing.T) {
	sys, _ := newSystem(t)
	raw, err := sys.Update(context.Background(), nil, []hippocam.Trajectory{
		trajectory(sales, "status_filter = all", "feedback: status_filter = all wrong"),
		trajectory(stock, "unit = boxes", "feedback: unit = boxes right"),
	})
	if err != nil {
		t.Fatal(err)
	}
	left, err := sys.Forget(raw, []string{"t1#1"})
	if err != nil {
		t.Fatal(err)
	}
	st := state(t, left)
	if len(st.Records) != 1 || st.Records[0].Trajectory != "t2#1" {
		t.Fatalf("after forgetting t1#1: %+v", st.Records)
	}
}

// broken answers every call with what it is given.
type broken struct {
	answer string
	calls  int
}

func (b *broken) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	b.calls++
	return &hippocam.Response{Message: hippocam.Message{Role: hippocam.RoleAssistant, Content: b.answer}}, nil
}

func TestBrokenAnswersLeaveTheStateAsItWas(t *testing.T) {
	for name, answer := range map[string]string{
		"NotJSON":        "I think it went well.",
		"UnknownOutcome": `{"outcome":"partial","rationale":"half of it"}`,
		"NoRationale":    `{"outcome":"success","rationale":" "}`,
	} {
		t.Run(name, func(t *testing.T) {
			m := &broken{answer: answer}
			sys := reasoningbank.New(&learn.Env{Model: m, Tok: tokenizer.MustDefault(), Corrections: 2})
			_, err := sys.Update(context.Background(), nil, []hippocam.Trajectory{trajectory(sales, "status_filter = all", "feedback: status_filter = all wrong")})
			if !errors.Is(err, learn.ErrGaveUp) {
				t.Fatalf("error %v, want one wrapping ErrGaveUp", err)
			}
			if m.calls != 3 {
				t.Fatalf("%d calls, want 1 and 2 corrections", m.calls)
			}
		})
	}
}

func TestNotesValidate(t *testing.T) {
	item := func(title, content string) reasoningbank.Item {
		return reasoningbank.Item{Title: title, Description: "when the report is weekly", Content: content}
	}
	shown := "[user]\nWeekly report\nrevenue_target := 1200"
	tests := []struct {
		name  string
		items []reasoningbank.Item
		ok    bool
	}{
		{"OK", []reasoningbank.Item{item("Filter", "Count only shipped orders."), item("Currency", "Report in euros.")}, true},
		{"OKNone", nil, true},
		{"ErrTooMany", []reasoningbank.Item{item("a", "x"), item("b", "y"), item("c", "z"), item("d", "w")}, false},
		{"ErrEmptyField", []reasoningbank.Item{item("", "Count only shipped orders.")}, false},
		{"ErrTitleLines", []reasoningbank.Item{item("Filter\nfirst", "Count only shipped orders.")}, false},
		{"ErrSameNoteTwice", []reasoningbank.Item{item("Filter", "Count only shipped orders."), item("filter", "count only shipped orders.")}, false},
		{"ErrCopiesAFact", []reasoningbank.Item{item("Target", "revenue_target := 1200")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := reasoningbank.Notes{Items: tt.items}
			if err := n.Validate(shown); (err == nil) != tt.ok {
				t.Fatalf("Validate = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
