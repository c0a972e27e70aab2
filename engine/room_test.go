package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/tokenizer"
)

// Until JANUS has run, pressure control keeps free the room of the PRECIP request that would
// consolidate an intent JANUS closes: its frame and its answer, not JANUS's larger ones. A context
// that leaves exactly that room is not folded, and PRECIP's request over all of it still fits W.
func TestRoomKeptIsPrecipsRequest(t *testing.T) {
	model := &scriptedPalim{answers: []string{palimAnswer(t, PalimOutput{Narrative: "I read the records."})}}
	e, err := New(ForWindow(16000), model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &foldFixture{t: t, e: e, model: model, s: NewSession("", "room", time.Unix(0, 0))}
	f.add(hippocam.Message{Role: hippocam.RoleUser, Content: "Records follow."})
	f.s.Stack = hippocam.IntentStack{{Label: "Read the records", Done: "all are read", Start: f.s.Context[0].ID}}
	st := f.e.newStep(f.s, nil, Input{})
	precipRoom := st.componentFrame(precipPrompt, PrecipToolSpec) + answerRoom(hippocam.CallPrecip, e.cfg.Window)
	janusRoom := st.componentFrame(janusPrompt, JanusToolSpec) + janusAnswerRoom(e.cfg.Window)
	rho := int(e.cfg.Pressure * float64(e.cfg.Window))
	for k := 0; ; k++ {
		next := hippocam.Message{Role: hippocam.RoleUser, Content: words(40, fmt.Sprintf("records%d", k))}
		if tokens(f.s.Context)+2*hippocam.MessageTokens(e.tok, &next)+precipRoom > rho {
			break
		}
		f.add(next)
		f.add(hippocam.Message{Role: hippocam.RoleAssistant, Content: "Noted."})
	}
	if tokens(f.s.Context)+janusRoom <= rho {
		t.Fatalf("a context of %d tokens leaves JANUS's room of %d as well: the test shows nothing", tokens(f.s.Context), janusRoom)
	}
	st = f.e.newStep(f.s, hippocam.SessionArchive(inmem.New(), "", "room"), Input{})
	if err := st.pressureControl(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := f.model.calls(); n != 0 || st.res.PrefixConsolidations != 0 {
		t.Fatalf("%d PALIM calls, %d folds for a context of %d tokens that leaves PRECIP's room of %d below ρW = %d",
			n, st.res.PrefixConsolidations, tokens(st.s.Context), precipRoom, rho)
	}
	if need := tokens(st.s.Context) + precipRoom; need > e.cfg.Window {
		t.Fatalf("PRECIP's request over the context would need %d tokens, over W", need)
	}
}
