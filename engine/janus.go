package engine

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
)

// JANUS (seed 000 §2.2, appendix B.2.1) keeps the intent stack before every main-model answer:
// it closes concluded intents from the top, opens new ones broadest first, or skips, and writes
// first-person guidance that enters the context.

//go:embed prompts/janus.txt
var janusPrompt string

// Log keys of the engine's warnings about one session.
const (
	logTenant  = "tenant"
	logSession = "session"
)

// janusInstruction renders the evaluation request with the current stack as an indented
// hierarchy, outermost first, and the line that says from which message on the conversation is
// new to JANUS (ReviewLine).
func janusInstruction(stack hippocam.IntentStack, review string) string {
	var b strings.Builder
	b.WriteString("Evaluate the intent stack against the conversation above.\nCurrent stack (outermost first):\n")
	if len(stack) == 0 {
		b.WriteString("(empty)\n")
	}
	for i, in := range stack {
		fmt.Fprintf(&b, "%s- %s (done when: %s)\n", strings.Repeat("  ", i), in.Label, in.Done)
	}
	b.WriteString(review + "\n")
	b.WriteString("Decide: close, open, or skip.")
	return b.String()
}

// The review lines of JANUS's instruction. JANUS acts on what it has not reviewed yet: the
// messages after the last one its last answered call covered (Transcript.JanusCovered), so that a
// call that failed loses no directive, and one that succeeded is not acted on twice. The
// instruction says where that begins by quoting the message, the way span lines quote a span's
// start (SpanLine): its role and its text, long enough that no later message reads the same,
// with an ordinal ("the 2nd latest") only when a later message repeats it word for word.
//
//	New since your last review: the messages from the one quoted as the review start through the last message above; ...
//	Review start: the latest tool result above that begins "revenue_shop := 1200 detail shop_owner…"
//
// With nothing new (a regenerated answer) the instruction says ReviewNothingNew instead.
const (
	ReviewLead        = "New since your last review: the messages from the one quoted as the review start through the last message above. Earlier messages you have reviewed already: judge the stack against the whole conversation, but act on what is new."
	ReviewStartPrefix = "Review start: the "
	ReviewNothingNew  = "Nothing is new since your last review: keep the stack as it is unless it no longer matches the conversation."
)

// ReviewLine is the review lines for a context whose messages from index from on are new to
// JANUS. Hidden messages are neither quoted nor compared.
func ReviewLine(context []hippocam.Message, from int) string {
	var shown []*hippocam.Message
	first := -1
	for i := range context {
		if context[i].Kind.Hidden() {
			continue
		}
		if i >= from && first < 0 {
			first = len(shown)
		}
		shown = append(shown, &context[i])
	}
	if first < 0 {
		return ReviewNothingNew
	}
	return ReviewLead + "\n" + ReviewStartPrefix + quoteStart(shown, first)
}

// quoteStart names shown[first] as a start line does: "latest ROLE above that begins …", with
// the shortest quote that no other message matches (or, failing that, no later one), and an
// ordinal among the later messages that match when even the longest quote does not tell them
// apart.
func quoteStart(shown []*hippocam.Message, first int) string {
	count := func(q spanQuote, from int) int {
		n := 0
		for i := from; i < len(shown); i++ {
			if i != first && q.matches(shown[i]) {
				n++
			}
		}
		return n
	}
	for _, scope := range []int{0, first + 1} {
		for _, limit := range spanQuoteLengths {
			if q := quoteOf(shown[first], limit); count(q, scope) == 0 {
				return "latest " + SpanRole(q.role) + " above " + q.String()
			}
		}
	}
	q := quoteOf(shown[first], spanQuoteLengths[len(spanQuoteLengths)-1])
	return ordinal(1+count(q, first+1)) + " latest " + SpanRole(q.role) + " above " + q.String()
}

// reviewFrom returns the index of the first context message JANUS has not reviewed: the one
// after Transcript.JanusCovered. When that message has been consolidated since, the review
// starts after the last unconsolidated message that is not newer than it (message ids grow with
// the session's sequence, and unconsolidated messages stay in the order they arrived), so that
// the memory holding it is reviewed again rather than anything skipped. Nothing covered yet: 0.
func (st *step) reviewFrom() int {
	c := st.s.Context
	covered := st.s.Transcript.JanusCovered
	if covered == "" {
		return 0
	}
	if i := st.s.Index(covered); i >= 0 {
		return i + 1
	}
	seq, ok := idSeq(covered)
	if !ok {
		return 0
	}
	from := 0
	for i := range c {
		if c[i].Consolidated() || c[i].Kind.Hidden() {
			continue
		}
		if n, ok := idSeq(c[i].ID); ok && n <= seq {
			from = i + 1
		}
	}
	return from
}

// idSeq reads the sequence number of a session-scoped id ("m12": 12).
func idSeq(id string) (int64, bool) {
	digits := strings.TrimLeft(id, "abcdefghijklmnopqrstuvwxyz")
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && digits != ""
}

// lastShown returns the id of the last context message a request carries, or "".
func lastShown(context []hippocam.Message) string {
	for i := len(context) - 1; i >= 0; i-- {
		if !context[i].Kind.Hidden() {
			return context[i].ID
		}
	}
	return ""
}

// janus asks JANUS for its operations, validates them as one set (CheckJanus: rejected sets are
// explained back to it, Corrections times at most) and applies them. It appends the guidance
// message and returns the intents it closed (innermost first) and the guidance's id.
//
// If JANUS fails, the stack stays unchanged, the failure is counted (Result.JanusFailures) and
// logged, and the step goes on. Whether the messages it was shown count as reviewed depends on
// why it failed: when it answered with a decision that kept breaking the rules, they do (asking
// again would give the same answer); when no decision came at all (the call failed, the request
// did not fit, the answers never parsed), they do not, and the next call reviews them again.
func (st *step) janus(ctx context.Context) ([]hippocam.Intent, string, error) {
	guidanceID := "m" + fmt.Sprint(st.s.Seq+1) // the id the guidance will get if appended
	end := len(st.s.Context)
	seen := lastShown(st.s.Context)
	var next hippocam.IntentStack
	var closed []hippocam.Intent
	var ops hippocam.StackOps
	decided := false
	instruction := janusInstruction(st.s.Stack, ReviewLine(st.s.Context, st.reviewFrom()))
	err := st.contractCall(ctx, hippocam.CallJanus, janusPrompt, 0, end, st.s.Stack, instruction, JanusToolSpec, func(args string) error {
		var out JanusOutput
		if err := decodeArgs(args, &out); err != nil {
			return err
		}
		decided = true
		ops = out.Ops()
		var err error
		next, closed, err = CheckJanus(st.s.Stack, ops, guidanceID, st.e.cfg.MaxDepth)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		var gaveUp *errGaveUp
		reviewed := errors.As(err, &gaveUp) && decided
		if reviewed {
			st.s.Transcript.JanusCovered = seen
		}
		st.res.JanusFailures++
		st.e.log.Warn("intent maintenance failed; stack unchanged", logTenant, st.s.Tenant, logSession, st.s.ID,
			"error", err, "reviewed", reviewed)
		return nil, "", nil
	}
	st.s.Transcript.JanusCovered = seen
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
	st.s.Transcript.JanusCovered = g.ID
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
