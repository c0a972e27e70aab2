package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// recordingModel passes every call to inner and keeps the requests.
type recordingModel struct {
	inner hippocam.Model
	mu    sync.Mutex
	reqs  []*hippocam.Request
}

func (r *recordingModel) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.inner.Complete(ctx, req)
}

func (r *recordingModel) byRole(role hippocam.CallRole) []*hippocam.Request {
	var out []*hippocam.Request
	for _, q := range r.reqs {
		if q.Role == role {
			out = append(out, q)
		}
	}
	return out
}

// ablationRun drives closed intents, large tool results and a question about an archived
// detail through an engine with the given ablations, at W = 4,000.
func ablationRun(t *testing.T, a engine.Ablations) (*recordingModel, *engine.Result) {
	rec := &recordingModel{inner: mustSim(t)}
	cfg := gateWindow(4000)
	cfg.Ablations = a
	c := newConversation(t, mustEngine(t, cfg, rec))
	c.mustUser("#open Read the notes | the notes are read\n!call read_file {\"path\":\"notes\"}")
	c.mustResults("detail owner := Dana\n" + filler("notes", 20))
	c.mustUser("#close Read the notes\n!say read")
	for k := 0; k < 8; k++ {
		c.mustUser(fmt.Sprintf("!call look {\"n\":%d}", k))
		c.mustResults(filler(fmt.Sprintf("look%d", k), 20))
	}
	res := c.mustUser("!ask owner")
	c.checkLossless()
	return rec, res
}

// Each ablation of the Hippocam paper's Table 4 is one switch of the engine's configuration.
func TestAblations(t *testing.T) {
	t.Run("Whole", func(t *testing.T) {
		rec, res := ablationRun(t, engine.Ablations{})
		if res.Answer.Content != "owner := Dana" || len(rec.byRole(hippocam.CallJanus)) == 0 || len(rec.byRole(hippocam.CallPalim)) == 0 {
			t.Fatalf("answer %q, %d JANUS and %d PALIM calls", res.Answer.Content, len(rec.byRole(hippocam.CallJanus)), len(rec.byRole(hippocam.CallPalim)))
		}
	})
	t.Run("NoRecall", func(t *testing.T) {
		rec, res := ablationRun(t, engine.Ablations{NoRecall: true})
		if res.RecallCalls != 0 {
			t.Fatalf("%d recall calls", res.RecallCalls)
		}
		for _, q := range rec.byRole(hippocam.CallAgent) {
			for _, tool := range q.Tools {
				if tool.Name == engine.RecallTool {
					t.Fatal("the recall tool was offered")
				}
			}
			if strings.Contains(q.Messages[0].Content, "# Recall and search") {
				t.Fatal("the memory instructions still teach recall")
			}
		}
	})
	t.Run("NoPrefix", func(t *testing.T) {
		rec, _ := ablationRun(t, engine.Ablations{NoPrefix: true})
		if n := len(rec.byRole(hippocam.CallPalim)); n != 0 {
			t.Fatalf("%d PALIM calls", n)
		}
	})
	t.Run("FlatSummary", func(t *testing.T) {
		rec, _ := ablationRun(t, engine.Ablations{FlatSummary: true})
		if n := len(rec.byRole(hippocam.CallJanus)); n != 0 {
			t.Fatalf("%d JANUS calls", n)
		}
	})
	t.Run("NoIntentConditioning", func(t *testing.T) {
		rec, _ := ablationRun(t, engine.Ablations{NoIntentConditioning: true})
		precips := rec.byRole(hippocam.CallPrecip)
		if len(precips) == 0 {
			t.Fatal("no PRECIP call")
		}
		for _, q := range precips {
			if last := q.Messages[len(q.Messages)-1].Content; strings.Contains(last, engine.ChainPrefix) {
				t.Fatalf("PRECIP was given the intent chain: %q", last)
			}
		}
	})
}
