package eval_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/eval"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// A run against the simulated model in-process: the full condition answers from the whole
// conversation, batches are split per question, and a failing judge leaves rows unjudged.
func TestRunDirect(t *testing.T) {
	m := sim.New(tokenizer.MustDefault()).InProcess()
	d, err := eval.Parse([]byte(`[{"sample_id": "s", "conversation": {"speaker_a": "A", "speaker_b": "B",
	  "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "Hi.\ncolor := blue"}], "session_2": [{"speaker": "B", "dia_id": "D2:1", "text": "Look.\npet := a cat"}]},
	  "qa": [{"question": "Colour?\n!ask color", "answer": "blue", "category": 1}, {"question": "Pet?\n!ask pet", "answer": "a dog", "category": 2}]}]`), "")
	if err != nil {
		t.Fatal(err)
	}
	var rows []eval.Row
	cfg := eval.Config{Conditions: []string{eval.CondFull}, Model: "sim", Window: 4000, Batch: 2, Tok: tokenizer.MustDefault(), Direct: m, Judge: m,
		Prices: &hippocam.Prices{Input: 1, Output: 2}, OnRow: func(r eval.Row) error { rows = append(rows, r); return nil }}
	res, err := eval.Run(context.Background(), cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || len(res.Rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].Answer != "color := blue" || rows[0].Verdict != eval.Correct || rows[1].Answer != "pet := a cat" || rows[1].Verdict != eval.Partial {
		t.Errorf("rows %+v", rows)
	}
	if rows[0].Batch != 2 || rows[0].InputTokens+rows[1].InputTokens == 0 || rows[0].CostUSD == nil || *rows[0].CostUSD == 0 {
		t.Errorf("usage of a batch %+v", rows)
	}
	// Two copies of the sample side by side: the same verdicts, in sample order.
	d2 := *d
	d2.Samples = []eval.Sample{d.Samples[0], d.Samples[0]}
	d2.Samples[1].ID = "t"
	cfg.Parallel, cfg.OnRow = 2, nil
	if res, err = eval.Run(context.Background(), cfg, &d2); err != nil || len(res.Rows) != 4 || res.Rows[0].Sample != "s" || res.Rows[2].Sample != "t" || res.Rows[3].Verdict != eval.Partial {
		t.Errorf("in parallel: %v, %+v", err, res.Rows)
	}
	cfg.Judge = failing{}
	res, err = eval.Run(context.Background(), cfg, d)
	if err != nil || res.Rows[0].Verdict != eval.Unjudged || !strings.Contains(res.Rows[0].Error, "judge:") {
		t.Errorf("with a failing judge: %v, %+v", err, res.Rows)
	}
}

type failing struct{}

func (failing) Complete(context.Context, *hippocam.Request) (*hippocam.Response, error) {
	return nil, hippocam.Errorf(hippocam.EUNAVAILABLE, "down")
}
