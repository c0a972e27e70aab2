package engine

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// JANUS (seed 000 §2.2, appendix B.2.1) keeps the intent stack before every main-model answer:
// it closes concluded intents from the top, opens new ones broadest first, or skips, and writes
// first-person guidance that enters the context.

//go:embed prompts/janus.txt
var janusPrompt string

// janusInstruction renders the evaluation request with the current stack as an indented
// hierarchy, outermost first.
func janusInstruction(stack hippocam.IntentStack) string {
	var b strings.Builder
	b.WriteString("Evaluate the intent stack against the conversation above.\nCurrent stack (outermost first):\n")
	if len(stack) == 0 {
		b.WriteString("(empty)\n")
	}
	for i, in := range stack {
		fmt.Fprintf(&b, "%s- %s (done when: %s)\n", strings.Repeat("  ", i), in.Label, in.Done)
	}
	b.WriteString("Decide: close, open, or skip.")
	return b.String()
}

// janus asks JANUS for its operations, validates them as one set (rejected sets are explained
// back to it, Corrections times at most) and applies them. It appends the guidance message and
// returns the intents it closed (innermost first) and the guidance's id. If JANUS keeps failing
// or cannot be reached, the stack stays unchanged and the step goes on.
func (st *step) janus(ctx context.Context) ([]hippocam.Intent, string, error) {
	guidanceID := "m" + fmt.Sprint(st.s.Seq+1) // the id the guidance will get if appended
	var next hippocam.IntentStack
	var closed []hippocam.Intent
	var ops hippocam.StackOps
	err := st.contractCall(ctx, hippocam.CallJanus, janusPrompt, len(st.s.Context), janusInstruction(st.s.Stack), JanusToolSpec, func(args string) error {
		var out JanusOutput
		if err := decodeArgs(args, &out); err != nil {
			return err
		}
		ops = out.Ops()
		var err error
		next, closed, err = st.s.Stack.Apply(ops, guidanceID)
		if err != nil {
			return fmt.Errorf("the operations were rejected, none applied: %s", hippocam.ErrorMessage(err))
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		st.e.log.Warn("intent maintenance failed; stack unchanged", "error", err)
		return nil, "", nil
	}
	if ops.Skip() {
		return nil, "", nil
	}
	g := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindGuidance, Content: guidanceText(ops)}
	g.Tokens = hippocam.MessageTokens(st.e.tok, &g)
	g.ID = st.s.NextID("m")
	if g.ID != guidanceID {
		return nil, "", fmt.Errorf("janus: guidance id %s, intents anchored at %s", g.ID, guidanceID)
	}
	st.push(g)
	st.before = st.s.Stack
	st.s.Stack = next
	ev := hippocam.StackEvent{Step: st.s.Version + 1, Guidance: g.Content}
	for _, c := range closed {
		ev.Closed = append(ev.Closed, c.Label)
	}
	for _, o := range ops.Open {
		ev.Opened = append(ev.Opened, strings.TrimSpace(o.Label))
	}
	st.s.StackLog = append(st.s.StackLog, ev)
	if n := len(st.s.StackLog); n > hippocam.MaxStackLog {
		st.s.StackLog = append([]hippocam.StackEvent(nil), st.s.StackLog[n-hippocam.MaxStackLog:]...)
	}
	return closed, g.ID, nil
}

// guidanceText is the guidance message: JANUS's words, or, when it gave none, a plain statement
// of the operations.
func guidanceText(ops hippocam.StackOps) string {
	text := ops.Guidance
	if text == "" {
		var parts []string
		for _, c := range ops.Close {
			parts = append(parts, fmt.Sprintf("I have finished %q.", c.Label))
		}
		for _, o := range ops.Open {
			parts = append(parts, fmt.Sprintf("I now work on %q; it is done when %s.", o.Label, o.Done))
		}
		text = strings.Join(parts, " ")
	}
	return "(Intent guidance) " + text
}
