package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hippocam/hippocam"
)

// Consolidation after the answer changes when the work is done, not what it does: a session
// whose steps leave consolidation to a job, run right after each step or only when the next
// step finds it pending, ends with the same context, message for message, as one whose steps
// consolidate before they return, and answers the same.
func TestDeferredConsolidationSameState(t *testing.T) {
	const w, rounds = 8000, 240
	type run struct {
		right, asked int
		c            *conversation
	}
	runs := map[consolidation]run{}
	for _, mode := range []consolidation{consolidateInline, consolidateJob, consolidateNext} {
		right, asked, _, c := longSessionIn(t, w, rounds, 40, 3, mode)
		c.checkLossless()
		runs[mode] = run{right, asked, c}
	}
	base := runs[consolidateInline]
	if base.c.session().Consolidations.Intent == 0 || base.c.session().Consolidations.Prefix == 0 {
		t.Fatalf("the session never consolidated (%+v): the comparison shows nothing", base.c.session().Consolidations)
	}
	for _, mode := range []consolidation{consolidateJob, consolidateNext} {
		r := runs[mode]
		if r.right != base.right || r.asked != base.asked {
			t.Errorf("mode %d answered %d/%d right, inline %d/%d", mode, r.right, r.asked, base.right, base.asked)
		}
		got, want := r.c.session(), base.c.session()
		if mode == consolidateNext {
			// Its last step's work may still be pending: run it as the job would. (With JANUS
			// beside the answer, the default, the last step's closings wait for a next step.)
			res, err := r.c.e.Consolidate(context.Background(), got, hippocam.SessionArchive(r.c.st, "", r.c.id))
			if err != nil {
				t.Fatal(err)
			}
			got = res.Session
		}
		if got.Pending != nil {
			t.Errorf("mode %d: consolidation still pending at the end: %+v", mode, got.Pending)
		}
		if d := contextDiff(got.Context, want.Context); d != "" {
			t.Errorf("mode %d: the context differs from the inline run's: %s", mode, d)
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
