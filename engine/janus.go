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

// JANUS (the Hippocam paper §2.2, appendix B.2.1) keeps the intent stack before every main-model answer:
// it closes concluded intents from the top, opens new ones broadest first, or skips, and writes
// first-person guidance that enters the context.

//go:embed prompts/janus.txt
var janusPrompt string

// Log keys of the engine's warnings about one session.
const (
	logTenant  = "tenant"
	logSession = "session"
)

// janusInstruction is JANUS's final message: what to decide, and the review lines (ReviewLine)
// that say where the messages new to it begin, with what the view left out of them.
func janusInstruction(review string) string {
	return "Judge the intent stack shown at the start against the messages after it.\n" + review + "\nDecide: close, open, or skip."
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
	ReviewLead        = "New since your last review: the messages from the one quoted as the review start through the last message above. What came before them you have reviewed already: the stack and the memories listed at the start are its result."
	ReviewStartPrefix = "Review start: the "
	ReviewNothingNew  = "Nothing is new since your last review: keep the stack as it is unless it no longer matches the messages shown."
	// ReviewLeftOutPrefix begins the line saying how many of the new messages, the oldest, the
	// view could not hold (janusView).
	ReviewLeftOutPrefix = "Not shown: "
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
				return SpanLatest + SpanRole(q.role) + SpanAbove + q.String()
			}
		}
	}
	q := quoteOf(shown[first], spanQuoteLengths[len(spanQuoteLengths)-1])
	return ordinal(1+count(q, first+1)) + " " + SpanLatest + SpanRole(q.role) + SpanAbove + q.String()
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
	for i := len(c) - 1; i >= 0; i-- { // Session.Index from the end, where it usually is
		if c[i].ID == covered {
			return i + 1
		}
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

// janusQuestion is what one JANUS call is asked: its view of the context (janusView), the review
// lines, and the id of the last message it shows (which it covers once it answers).
type janusQuestion struct {
	view         []hippocam.Message
	review, seen string
	// guidanceID is the id the guidance would get if it were appended now, and stack the stack
	// judged: CheckJanus anchors the intents it opens there. A verdict applied later is checked
	// again with the id its guidance then gets.
	guidanceID string
	stack      hippocam.IntentStack
	end        int
}

// janusQuestion builds the question for a JANUS call over the context as it stands.
func (st *step) janusQuestion() janusQuestion {
	view, review := st.janusView(st.reviewFrom())
	return janusQuestion{view: view, review: review, seen: lastShown(st.s.Context),
		guidanceID: "m" + fmt.Sprint(st.s.Seq+1), stack: st.s.Stack, end: len(st.s.Context)}
}

// janus asks JANUS and applies its verdict at once (JanusGate, the paper's order). It returns the
// intents JANUS closed (innermost first) and the guidance's id.
func (st *step) janus(ctx context.Context) ([]hippocam.Intent, string, error) {
	d := st.askJanus(ctx, st.janusQuestion())
	if d.err != nil && ctx.Err() != nil {
		return nil, "", ctx.Err()
	}
	return st.applyJanus(d)
}

// askJanus asks JANUS for its operations and validates them as one set against the stack judged
// (CheckJanus: rejected sets are explained back to it, Corrections times at most). It changes
// nothing of the step's state but its usage: applyJanus does.
func (st *step) askJanus(ctx context.Context, q janusQuestion) janusDecision {
	d := janusDecision{seen: q.seen}
	decided := false
	err := st.contractCall(ctx, hippocam.CallJanus, janusPrompt, q.view, 0, q.end, q.stack, janusInstruction(q.review), JanusToolSpec, func(args string) error {
		var out JanusOutput
		if err := decodeArgs(args, &out); err != nil {
			return err
		}
		decided = true
		d.ops = out.Ops()
		_, _, err := CheckJanus(q.stack, d.ops, q.guidanceID, st.e.cfg.MaxDepth)
		return err
	})
	if err != nil {
		var gaveUp *errGaveUp
		d.err, d.reviewed = err, errors.As(err, &gaveUp) && decided
		d.ops = hippocam.StackOps{}
	}
	return d
}

// applyJanus applies a JANUS decision to the step: the guidance message is appended, the stack
// moves on and the messages JANUS was shown count as reviewed. It returns the intents closed
// (innermost first) and the id of the message their spans end before (spanOf): the guidance,
// in the paper's order.
//
// If JANUS failed, the stack stays unchanged, the failure is counted (Result.JanusFailures) and
// logged, and the step goes on. Whether the messages it was shown count as reviewed depends on
// why it failed: when it answered with a decision that kept breaking the rules, they do (asking
// again would give the same answer); when no decision came at all (the call failed, the request
// did not fit, the answers never parsed), they do not, and the next call reviews them again.
func (st *step) applyJanus(d janusDecision) ([]hippocam.Intent, string, error) {
	if d.err != nil {
		if d.reviewed {
			st.s.Transcript.JanusCovered = d.seen
		}
		st.res.JanusFailures++
		st.res.Verdict = VerdictFailed
		st.e.log.Warn("intent maintenance failed; stack unchanged", logTenant, st.s.Tenant, logSession, st.s.ID,
			"error", d.err, "reviewed", d.reviewed)
		return nil, "", nil
	}
	st.s.Transcript.JanusCovered = d.seen
	if d.ops.Skip() {
		st.res.Verdict = VerdictSkip
		return nil, "", nil
	}
	guidanceID := "m" + fmt.Sprint(st.s.Seq+1) // the id the guidance gets, below
	// The intents it opens begin with the guidance, which in the paper's order comes right
	// after the messages JANUS judged. A verdict applied a step later (JanusBeside) lands after
	// the answer and the new messages; the work it names began with that answer, so that is
	// where they begin: their spans hold the answer and the tool results it led to.
	// The spans of the intents it closes end where the guidance would have stood too, or,
	// when the round JANUS judged began with a request of the user's, before that request: it
	// asked for the next work (spanOf says the same of the paper's order).
	anchor, end := guidanceID, guidanceID
	if i := st.s.Index(d.seen); i >= 0 && lastShown(st.s.Context) != d.seen {
		for _, m := range st.s.Context[i+1:] {
			if !m.Kind.Hidden() {
				anchor, end = m.ID, m.ID
				break
			}
		}
		if r := st.s.Index(d.round); r >= 0 && r <= i && st.s.Context[r].Role == hippocam.RoleUser && st.s.Context[r].Kind == hippocam.KindRaw {
			end = d.round
		}
	}
	next, closed, err := CheckJanus(st.s.Stack, d.ops, anchor, st.e.cfg.MaxDepth)
	if err != nil {
		// Checked against this very stack when it was decided: cannot happen.
		return nil, "", fmt.Errorf("janus: a checked decision no longer holds: %w", err)
	}
	ops := d.ops
	g := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindGuidance, Content: guidanceText(ops)}
	g.Tokens = hippocam.MessageTokens(st.e.tok, &g)
	g.ID = st.s.NextID("m")
	if g.ID != guidanceID {
		return nil, "", fmt.Errorf("janus: guidance id %s, expected %s", g.ID, guidanceID)
	}
	// The guidance counts as reviewed when it follows the last message JANUS was shown (the
	// paper's order). A verdict applied a step later (JanusBeside) lands after the answer and the
	// new messages, which JANUS has not judged yet: its next call starts at them.
	if lastShown(st.s.Context) == d.seen {
		st.s.Transcript.JanusCovered = g.ID
	}
	st.push(g)
	st.before = st.s.Stack
	st.s.Stack = next
	st.res.Verdict = VerdictApplied
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
	if end == guidanceID {
		end = g.ID
	}
	return closed, end, nil
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

// JANUS's view. JANUS does not read the whole context: it judges where the work stands from the
// stack, the memories in view and what is new to it, and a request that grew with the session
// would cost, at every step, the whole context again. Its request (janusView) is, in this order,
// so that its most stable parts come first and one JANUS call's request is served from the
// provider's cache by the next one's:
//
//  1. the system message: JANUS's role prompt and the schema of its answer (contractCall);
//  2. one user message, the state: the first line of every memory in the context, with its ref
//     (JanusMemoriesHeading); the intent stack, outermost first, each intent with its exit
//     condition and where it opened (JanusStackHeading); and, when the new messages hold no
//     message of the user's, the user's latest message before them (JanusAimHeading): the exit
//     conditions say when the work is done, and that message says what was asked, which is what
//     closing (and opening on an empty stack) is judged against;
//  3. the new messages: those after the last message JANUS's last answered call covered
//     (Transcript.JanusCovered, reviewFrom), so that nothing a failed call missed is lost; when
//     the first of them answers a tool call, the exchange it belongs to begins the messages, so
//     that every tool result follows its call;
//  4. the instruction, with the review lines (ReviewLine) quoting the first new message.
//
// Bounds, in tokens, from B = janusBudget(W): the new messages take at most B, the newest first;
// each message of the user's or the assistant's at most B/4, a tool result at most B/32 (what
// JANUS judges by is what the assistant concluded, not the raw output, which stays in the
// context for the main model), the part of an exchange before the new messages B/64 a message;
// the memories' first lines at most B/4, the newest kept; the user's message at most B/4. A
// message cut to its bound keeps its beginning and its end, with a line saying how much was cut
// in between. When the new messages do not all fit, the oldest are left out and the instruction
// says how many and how large (ReviewLeftOutPrefix); they count as reviewed once a call
// answers, like the others: the stack is judged on where the work is now, and a backlog held
// back for later calls would only grow. The request is so bounded whatever the length of the
// session.
const (
	JanusStackHeading    = "Intent stack (outermost first):"
	JanusMemoriesHeading = "Memories in view, oldest first (each one's first line; its ref opens it):"
	JanusAimHeading      = "The user's latest message before the messages below:"
	// JanusCutMark begins the line that stands where a message was cut to its bound.
	JanusCutMark = "[… "
)

// janusBudget is B: W/4, at most 16,384 tokens.
func janusBudget(window int) int { return min(window/4, 16384) }

// janusView returns the messages of JANUS's request before its instruction (the state message,
// then the messages from the exchange of context[from] on) and the review lines for them.
func (st *step) janusView(from int) ([]hippocam.Message, string) {
	c := st.s.Context
	b := janusBudget(st.e.cfg.Window)
	// The new messages, newest first, while they fit B; the newest always.
	lo, used, leftOut, leftTokens := len(c), 0, 0, 0
	for i := len(c) - 1; i >= from; i-- {
		if c[i].Kind.Hidden() {
			continue
		}
		n := min(c[i].Tokens, janusMessageCap(&c[i], b))
		if leftOut == 0 && (used+n <= b || lo == len(c)) {
			lo, used = i, used+n
			continue
		}
		leftOut++
		leftTokens += c[i].Tokens
	}
	// Where the shown messages begin: the exchange of the first new one, or, with nothing new,
	// of the last message, so that JANUS still sees where the conversation stands.
	first := lo
	if first == len(c) {
		first = len(c) - 1
		for first > 0 && c[first].Kind.Hidden() {
			first--
		}
	}
	first = max(exchangeStart(c, first), 0)
	view := []hippocam.Message{{Role: hippocam.RoleUser, Kind: hippocam.KindGuidance, Content: st.janusState(first, b)}}
	newAt := -1
	for i := first; i < len(c); i++ {
		if c[i].Kind.Hidden() {
			continue
		}
		limit := janusMessageCap(&c[i], b)
		if i < lo {
			limit = b / 64
		} else if newAt < 0 {
			newAt = len(view)
		}
		view = append(view, st.janusShown(&c[i], limit))
	}
	if newAt < 0 {
		return view, ReviewNothingNew
	}
	review := ReviewLine(view, newAt)
	if leftOut > 0 {
		review += fmt.Sprintf("\n%sthe %d oldest of the new messages (about %d tokens); only the newest fit this request.", ReviewLeftOutPrefix, leftOut, leftTokens)
	}
	return view, review
}

// janusMessageCap is the bound on one new message in JANUS's view: B/32 for a tool result, B/4
// for the others.
func janusMessageCap(m *hippocam.Message, b int) int {
	if m.Role == hippocam.RoleTool {
		return b / 32
	}
	return b / 4
}

// janusShown is m as JANUS's view shows it: its text cut to limit tokens, keeping its beginning
// and its end, and without its attachments (images, files), which are named instead.
func (st *step) janusShown(m *hippocam.Message, limit int) hippocam.Message {
	v := *m
	v.Origin = nil
	v.Parts = nil
	if n := len(m.Parts); n > 0 {
		note := fmt.Sprintf("[%d attachment(s) not shown]", n)
		if strings.TrimSpace(v.Content) == "" {
			v.Content = note
		} else {
			v.Content += "\n" + note
		}
	}
	v.Content = cutMiddle(st.e.tok, v.Content, limit)
	v.Tokens = hippocam.MessageTokens(st.e.tok, &v)
	return v
}

// cutMiddle returns text whole when it counts at most limit tokens, else its first two thirds
// and last third of about limit tokens, cut at line ends where one is near, with a line between
// them saying how much was left out.
func cutMiddle(tok hippocam.Tokenizer, text string, limit int) string {
	n := tok.Count(text)
	if n <= limit || limit <= 0 {
		return text
	}
	r := []rune(text)
	keep := len(r) * limit / n
	head, tail := keep*2/3, keep/3
	if k := strings.LastIndexByte(string(r[:head]), '\n'); k >= 0 && len([]rune(string(r[:head])[:k])) > head*3/4 {
		head = len([]rune(string(r[:head])[:k]))
	}
	rest := string(r[len(r)-tail:])
	if k := strings.IndexByte(rest, '\n'); k >= 0 && len([]rune(rest[:k])) < tail/4 {
		rest = rest[k+1:]
	}
	cut := string(r[:head])
	left := n - tok.Count(cut) - tok.Count(rest)
	return cut + "\n" + JanusCutMark + fmt.Sprintf("about %d tokens not shown here …]\n", max(left, 1)) + rest
}

// janusState is the first message of JANUS's view: the memories' first lines, the stack and the
// user's latest message, when it comes before c[first:], where the shown messages begin. The
// memories come first: they change least from one call to the next (a new one is added at the
// end, mostly), so the provider's cache serves them even when the stack has just changed.
func (st *step) janusState(first, b int) string {
	c := st.s.Context
	var s strings.Builder
	// The memories' first lines, the newest that fit B/4, in their order.
	var heads []string
	size, older := 0, 0
	for i := len(c) - 1; i >= 0; i-- {
		if !c[i].Consolidated() || c[i].Kind.Hidden() {
			continue
		}
		line, _, _ := strings.Cut(strings.TrimSpace(c[i].Content), "\n")
		if !strings.Contains(line, hippocam.RefTag(c[i].Ref)) {
			line = hippocam.RefTag(c[i].Ref) + " " + line
		}
		line = clip(line, 240)
		n := st.e.tok.Count(line) + 1
		if older > 0 || size+n > b/4 {
			older++
			continue
		}
		heads = append(heads, line)
		size += n
	}
	if len(heads)+older > 0 {
		s.WriteString(JanusMemoriesHeading + "\n")
		if older > 0 {
			fmt.Fprintf(&s, "(%d older memories not listed)\n", older)
		}
		for i := len(heads) - 1; i >= 0; i-- {
			s.WriteString(heads[i] + "\n")
		}
		s.WriteString("\n")
	}
	s.WriteString(JanusStackHeading + "\n")
	if len(st.s.Stack) == 0 {
		s.WriteString("(empty)\n")
	}
	for i, in := range st.s.Stack {
		fmt.Fprintf(&s, "%s- %s (done when: %s; opened %s)\n", strings.Repeat("  ", i), in.Label, in.Done, st.openedWhere(in.Start, first))
	}
	// The user's latest message, when none is among the new ones.
	for i := len(c) - 1; i >= 0; i-- {
		m := &c[i]
		if m.Role != hippocam.RoleUser || m.Kind != hippocam.KindRaw {
			continue
		}
		if i < first {
			v := st.janusShown(m, b/4)
			s.WriteString("\n" + JanusAimHeading + "\n" + v.Content + "\n")
		}
		break
	}
	return strings.TrimRight(s.String(), "\n")
}

// openedWhere says where the intent whose first message has id start opened, for the stack in
// JANUS's view, whose messages begin at context[first]: among them; after the message it quotes
// (the one before the intent's first, which is what prompted it); or in work that a memory now
// holds, named by its ref. Each stays the same from one call to the next until consolidation
// moves the intent's start, so the stack does not change for the provider's cache at every step.
func (st *step) openedWhere(start string, first int) string {
	c := st.s.Context
	if i := st.s.Index(start); i >= first {
		return "among the messages below"
	} else if i >= 0 {
		for j := i - 1; j >= 0; j-- {
			if c[j].Kind.Hidden() {
				continue
			}
			if c[j].Consolidated() {
				return "after memory " + hippocam.RefTag(c[j].Ref)
			}
			return "after the " + SpanRole(c[j].Role) + " " + quoteOf(&c[j], spanQuoteLengths[0]).String()
		}
		return "at the start of the conversation"
	}
	// Consolidated since: the memory that follows the last unconsolidated message not newer than
	// it holds it (ids grow with the session's sequence).
	seq, ok := idSeq(start)
	if !ok {
		return "earlier"
	}
	after := 0
	for i := range c {
		if c[i].Consolidated() || c[i].Kind.Hidden() {
			continue
		}
		if n, ok := idSeq(c[i].ID); ok && n <= seq {
			after = i + 1
		}
	}
	for i := after; i < len(c); i++ {
		if c[i].Kind.Hidden() {
			continue
		}
		if c[i].Consolidated() {
			return "in work now held by memory " + hippocam.RefTag(c[i].Ref)
		}
		break
	}
	return "earlier"
}
