package engine_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/scenario"
)

// Consolidation after the answer changes when the work is done, not what it does: a session
// whose steps leave consolidation to a job run right after each step, or to the next step
// (no lag allowed: it runs the work first), ends with the same context, message for message, as
// one whose steps consolidate before they return, and answers the same. With lag allowed, steps
// answer on contexts that still hold pending spans, so a pressure sweep between ρW and W may
// fold other history a little earlier; the session still answers the same and loses nothing.
func TestDeferredConsolidationSameState(t *testing.T) {
	const w, rounds = 8000, 240
	type run struct {
		right, asked int
		c            *conversation
	}
	noLag := engine.ForWindow(w)
	noLag.MaxLag = 0
	runs := map[string]run{}
	for name, mode := range map[string]consolidation{"inline": consolidateInline, "job": consolidateJob, "next": consolidateNext, "lagging": consolidateNext} {
		cfg := noLag
		if name == "lagging" {
			cfg = engine.ForWindow(w)
		}
		right, asked, _, c := longSessionWith(t, cfg, rounds, 40, 3, mode)
		c.checkLossless()
		runs[name] = run{right, asked, c}
	}
	base := runs["inline"]
	if base.c.session().Consolidations.Intent == 0 || base.c.session().Consolidations.Prefix == 0 {
		t.Fatalf("the session never consolidated (%+v): the comparison shows nothing", base.c.session().Consolidations)
	}
	for _, name := range []string{"job", "next", "lagging"} {
		r := runs[name]
		if r.right != base.right || r.asked != base.asked {
			t.Errorf("%s: answered %d/%d right, inline %d/%d", name, r.right, r.asked, base.right, base.asked)
		}
		got, want := r.c.session(), base.c.session()
		if name != "job" {
			// Its last step's work may still be pending: run it as the job would. (With JANUS
			// beside the answer, the default, the last step's closings wait for a next step.)
			res, err := r.c.e.Consolidate(context.Background(), got, hippocam.SessionArchive(r.c.st, "", r.c.id))
			if err != nil {
				t.Fatal(err)
			}
			got = res.Session
		}
		if got.Pending != nil {
			t.Errorf("%s: consolidation still pending at the end: %+v", name, got.Pending)
		}
		if d := contextDiff(got.Context, want.Context); d != "" && name != "lagging" {
			t.Errorf("%s: the context differs from the inline run's: %s", name, d)
		}
	}
}

// contextDiff describes the first difference between two contexts, or "".
func contextDiff(a, b []hippocam.Message) string {
	for i := range min(len(a), len(b)) {
		if a[i].ID != b[i].ID || a[i].Content != b[i].Content || a[i].Kind != b[i].Kind || a[i].Ref != b[i].Ref {
			return fmt.Sprintf("message %d: %s %s %q, want %s %s %q", i, a[i].ID, a[i].Kind, clip(a[i].Content), b[i].ID, b[i].Kind, clip(b[i].Content))
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d messages, want %d", len(a), len(b))
	}
	return ""
}

// A consolidation job is idempotent: run on a state it has already consolidated, it changes
// nothing.
func TestConsolidateTwice(t *testing.T) {
	c := newConversation(t, mustEngine(t, gateWindow(8000), mustSim(t)))
	c.mode = consolidateNext
	c.mustUser("#open Read the exports | both exports are read\n!say reading")
	res := c.mustUser("#close Read the exports\n!say done")
	if !res.Deferred {
		t.Fatal("closing an intent left nothing pending")
	}
	s := c.session()
	if s.Pending.Empty() {
		t.Fatal("the committed session holds no pending consolidation")
	}
	arch := hippocam.SessionArchive(c.st, "", c.id)
	first, err := c.e.Consolidate(context.Background(), s, arch)
	if err != nil {
		t.Fatal(err)
	}
	if first.IntentConsolidations != 1 || len(first.Change.Jobs) != 0 || first.Session.Pending != nil {
		t.Fatalf("first run: %d intent consolidations, jobs %v, pending %+v", first.IntentConsolidations, first.Change.Jobs, first.Session.Pending)
	}
	if err := c.st.Commit(context.Background(), first.Session, first.Change); err != nil {
		t.Fatal(err)
	}
	second, err := c.e.Consolidate(context.Background(), c.session(), arch)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Change.Ops) != 0 || len(second.Usage) != 0 {
		t.Fatalf("second run changed something: %d ops, usage %v", len(second.Change.Ops), second.Usage)
	}
}

// Pending work must not take the room that recall needs. An answer's recall exchanges, sized to
// the room of their own step, wait in the context until their memory is written; a step that
// answered on top of them between ρW and W, where its sweep could fold nothing else, had a few
// tokens left for its own recall results and answered "unknown". Replayed with consolidation
// left to later steps, no job and no lag bound, in both JANUS orders, the bundled refactor
// scenario answers every question as its expected file says, and loses nothing.
func TestPendingKeepsRecallRoom(t *testing.T) {
	lines, err := scenario.ParseFile("../scenarios/refactor.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../scenarios/refactor.expected")
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range []engine.JanusMode{engine.JanusBeside, engine.JanusGate} {
		t.Run(string(order), func(t *testing.T) {
			cfg := engine.ForWindow(8000)
			cfg.Janus, cfg.MaxLag = order, 1000
			c := newConversation(t, mustEngine(t, cfg, mustSim(t)))
			c.mode = consolidateNext
			var answers []string
			windowRuns := 0
			for i := 0; i < len(lines); {
				var res *engine.Result
				if lines[i].Role == hippocam.RoleTool {
					var texts []string
					for ; i < len(lines) && lines[i].Role == hippocam.RoleTool; i++ {
						texts = append(texts, lines[i].Content)
					}
					res = c.mustResults(texts...)
				} else {
					res = c.mustUser(lines[i].Content)
					if strings.HasPrefix(lines[i].Content, "!ask ") {
						answers = append(answers, res.Answer.Content)
					}
					i++
				}
				if res.PendingReason == engine.PendingWindow {
					windowRuns++
				}
			}
			if got := strings.Join(answers, "\n") + "\n"; got != string(want) {
				t.Errorf("answers:\n%swant:\n%s", got, want)
			}
			t.Logf("%d steps ran the pending work first for the window", windowRuns)
			c.checkLossless()
		})
	}
}
