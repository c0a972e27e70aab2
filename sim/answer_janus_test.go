package sim_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
)

// JANUS reacts to the directives from the review start the engine's instruction quotes
// (engine.ReviewLine) through the end of the material, whatever answers lie between, so that
// directives a failed call did not act on are acted on by the next.
func TestJanusReviewStart(t *testing.T) {
	msg := func(role hippocam.Role, content string) hippocam.Message {
		return hippocam.Message{Role: role, Content: content}
	}
	u := func(c string) hippocam.Message { return msg(hippocam.RoleUser, c) }
	a := func(c string) hippocam.Message { return msg(hippocam.RoleAssistant, c) }
	tests := []struct {
		name    string
		context []hippocam.Message
		from    int
		open    []string
		close   []string
	}{
		{
			name:    "PastAnAnswer",
			context: []hippocam.Message{u("#open A | a holds"), a("ok"), u("#open B | b holds")},
			from:    0,
			open:    []string{"A", "B"},
		},
		{
			name:    "AfterReviewed",
			context: []hippocam.Message{u("#open A | a holds"), a("ok"), u("#open B | b holds")},
			from:    1,
			open:    []string{"B"},
		},
		{
			name:    "RepeatedText", // identical messages after the start need an ordinal
			context: []hippocam.Message{u("#close A"), a("ok"), u("go on"), a("ok"), u("go on"), a("ok"), u("go on\n#close B")},
			from:    2,
			close:   []string{"B"},
		},
		{
			name:    "IdenticalDirectives",
			context: []hippocam.Message{u("#open A | a holds"), a("ok"), u("#open A | a holds")},
			from:    0,
			open:    []string{"A", "A"}, // emitted as written; the engine rejects the repeat
		},
		{
			name:    "NothingNew",
			context: []hippocam.Message{u("#open A | a holds")},
			from:    1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			review := engine.ReviewLine(tt.context, tt.from)
			if tt.from >= len(tt.context) != strings.Contains(review, engine.ReviewNothingNew) {
				t.Fatalf("review line %q for from=%d of %d", review, tt.from, len(tt.context))
			}
			material := make([]wire.ChatMessage, len(tt.context))
			for i, m := range tt.context {
				material[i] = text(m.Role, m.Content)
			}
			instruction := "Evaluate the intent stack.\n" + review + "\nDecide."
			out := janusCall(t, mustModel(t), instruction, material...)
			var open, closed []string
			for _, o := range out.Open {
				open = append(open, o.Label)
			}
			for _, c := range out.Close {
				closed = append(closed, c.Label)
			}
			if !reflect.DeepEqual(open, tt.open) || !reflect.DeepEqual(closed, tt.close) {
				t.Fatalf("review %q: open %v close %v, want open %v close %v", review, open, closed, tt.open, tt.close)
			}
		})
	}
}

// A review start that no message matches is a mistake of the engine: EINVALID, not a guess.
func TestJanusReviewStartUnmatched(t *testing.T) {
	req := componentChat(engine.JanusToolSpec, "Evaluate.\n"+engine.ReviewStartPrefix+`latest user message above that reads "nowhere"`, user("#open A | a holds"))
	if _, err := mustModel(t).Complete(hippocam.CallJanus, req); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("err = %v, want EINVALID", err)
	}
}

// Messages an Anthropic upstream got as one turn (an agent's context note and its request, sent
// one after the other) read back as one: a review start quoting the second still finds it.
func TestJanusReviewStartInMergedTurn(t *testing.T) {
	instruction := "Evaluate.\n" + engine.ReviewStartPrefix + `latest user message above that reads "#open T | t holds"`
	out := janusCall(t, mustModel(t), instruction, user("<environment_context>linux</environment_context>\n#open T | t holds"))
	if len(out.Open) != 1 || out.Open[0].Label != "T" {
		t.Fatalf("open %+v, want T", out.Open)
	}
}

// Directives of several unreviewed steps: an intent opened and closed again meanwhile cancels
// out, since one answer closes before it opens; everything else is emitted in order.
func TestJanusOpenThenCloseCancel(t *testing.T) {
	material := []wire.ChatMessage{user("#close Old"), assistant("ok"), user("#open T | t holds\n#open U | u holds"), assistant("ok"), user("#close U\n#open V | v holds")}
	instruction := "Evaluate.\n" + engine.ReviewStartPrefix + `latest user message above that reads "#close Old"`
	out := janusCall(t, mustModel(t), instruction, material...)
	var open, closed []string
	for _, o := range out.Open {
		open = append(open, o.Label)
	}
	for _, c := range out.Close {
		closed = append(closed, c.Label)
	}
	if !reflect.DeepEqual(open, []string{"T", "V"}) || !reflect.DeepEqual(closed, []string{"Old"}) {
		t.Fatalf("open %v close %v, want open [T V] close [Old]", open, closed)
	}
}
