package engine

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/hippocam/hippocam"
)

// step is the working state of one interaction step: a private copy of the session, the
// operations to commit, and the archive nodes created so far (readable by recall before they
// are committed).
type step struct {
	e     *Engine
	s     *hippocam.Session
	arch  hippocam.Archive
	in    Input
	ops   []hippocam.Op
	nodes map[string][]hippocam.Message
	res   Result
	// start is the id of the first message of the unfinished round this step serves: the first
	// input, or the assistant message whose tool calls the inputs answer. It is always protected.
	start string
	// recall exchanges currently in the context (ids), transient: they leave with the answer.
	recallIDs map[string]bool
	// listings holds the short form of each recall result, used once a deeper layer is opened.
	listings map[string]string
	// before is the intent stack as it was before JANUS's operations of this step.
	before hippocam.IntentStack
	// closing holds the intents JANUS closed in this step until PRECIP has consolidated them:
	// their spans are protected from prefix folds meanwhile.
	closing []hippocam.Intent
	// failedFolds remembers spans (first and last id) whose fold failed in this step, so that
	// later sweeps of the same step do not ask PALIM again for the same thing.
	failedFolds map[string]bool
	// frame caches agentFrame, without and with the recall tool; reserve the configured or
	// requested answer room (answerReserve).
	frame     [2]int
	reserve   int
	janusDone bool
	// next is the JANUS call running beside this step's answer (JanusBeside), kept for the
	// session's next step once this one succeeds.
	next *verdict
	// janusBusy is set when the previous step's JANUS call is still running (JanusWait ran
	// out): this step starts none of its own.
	janusBusy bool
	// answerText is the answer's text so far: the text of every main response of the step (the
	// part passed to Input.OnText); partStarted is set once the current response added to it.
	answerText  strings.Builder
	partStarted bool
	// storedSeq is the session's id sequence when the step began: messages with a higher
	// sequence entered in this step and are not in the store yet, so search reads them here.
	storedSeq int64
	// preview appends without folding (Preview): nothing is consolidated and no model called,
	// and a history with nothing new to answer is accepted.
	preview bool
	// job records, in a consolidation job (Consolidate), which ops did which pending work, for
	// Rebase; nil in a step.
	job *jobWork
	// claimed is set when the step appends to the session's context in place (ClaimContext);
	// array is the context's backing array when the step began.
	claimed bool
	array   *hippocam.Message
	// prefix is the array the step's requests over the context share (requestPrefix); its room
	// beyond its length is the step's own. mark says how far it is known to match the context.
	prefix []hippocam.Message
	mark   prefixMark
	// sizes keeps what pressure control counts over the context (share.go).
	sizes contextSizes
	// head and tools are the sizes of what the step's main-model requests add to the context,
	// counted once: requestHead, toolTokens (without and with recall).
	head  []hippocam.Message
	tools [2]struct {
		agent, recall int
		counted       bool
	}
}

// Step runs Algorithm 1 once on a copy of s: it appends in's messages, keeps the context within
// the window (Algorithm 2), lets JANUS maintain the intent stack, obtains the main model's answer
// (answering its recall calls), consolidates the spans of closed intents and checks the prefix.
//
// Errors: EINVALID for input that breaks the conversation's rules (nothing changes), ECAPACITY
// when the request cannot fit the window even after every sweep, and the model's error when the
// main model fails. When model calls were made before the failure, the error is a *StepError
// carrying their usage (UsageOf), which the caller should record: it was paid for. Failures of JANUS, PRECIP and PALIM are not errors: they leave the stack or
// the span as it was and the step continues.
func (e *Engine) Step(ctx context.Context, s *hippocam.Session, arch hippocam.Archive, in Input) (_ *Result, err error) {
	ctx = hippocam.WithCallSession(ctx, s.Tenant, s.ID) // the model calls below are the session's (an observer files them under it)
	began := time.Now()
	st := e.newStep(s, arch, in)
	// The step appends to the context where the session's last step left room, instead of
	// copying the whole context first, unless another copy of the session did so already.
	if !noSharing.Load() {
		kept, claimed := st.s.ClaimContext()
		st.claimed = claimed
		if c, ok := kept.(*carried); ok {
			st.prefix, st.mark, st.sizes = c.prefix, c.mark, c.sizes
		}
	}
	st.array = unsafe.SliceData(st.s.Context)
	defer func() { err = st.failed(err) }() // a failed step's usage travels in its error (StepError)
	defer st.dropNext()                     // a JANUS call still held by the step here belongs to a failed step
	// Consolidation earlier steps left comes first only when this step needs it: its context
	// would not fit the window, or would stay past ρW whatever the sweep folds, without it; or
	// it has waited more than MaxLag steps (consolidate.go). Otherwise the step answers on the context as it stands, the pending
	// spans protected from folds, and the job does the work after.
	if err := st.runPendingIfDue(ctx); err != nil {
		return nil, err
	}
	if in.Regenerate != "" {
		if err := st.branchAnswer(in.Regenerate); err != nil {
			return nil, err
		}
	} else if err := st.appendInputs(ctx); err != nil {
		return nil, err
	}
	// Lines 2-3 as JanusBeside runs them (verdict.go): the verdict JANUS reached beside the
	// previous step's answer is applied now, after this step's new messages.
	var closed []hippocam.Intent
	var guidance string
	if st.beside() {
		var err error
		if closed, guidance, err = st.takeVerdict(ctx); err != nil {
			return nil, err
		}
		// Pressure control below still keeps room for a PRECIP request over the context
		// (componentNeed), as in the paper's order: the closings and the reinforcement after
		// the answer need it. Without it, small windows lost answers (eval's fixture at 4k).
		st.closing = closed // the closed spans stay protected until PRECIP
	}
	// Alg. 1 line 1: pressure control before anything reads the context.
	if err := st.pressureControl(ctx); err != nil {
		return nil, err
	}
	if st.beside() {
		// JANUS judges this context while the main model answers it.
		if !st.janusBusy {
			st.startJanus(ctx)
		}
	} else if !e.cfg.Ablations.FlatSummary {
		// Lines 2-3 in the paper's order: JANUS, then the validated stack and its guidance (not
		// with the flat-summary ablation, which keeps no intents).
		var err error
		if closed, guidance, err = st.janus(ctx); err != nil {
			return nil, err
		}
	}
	st.janusDone = true
	st.closing = closed
	// Line 4: the main model's answer, with progressive recall.
	if err := st.answer(ctx); err != nil {
		return nil, err
	}
	// Lines 5-13: consolidate the closed spans, innermost first, then the ordinary check; or
	// leave that to a job, after the answer.
	if in.Defer {
		st.deferClosed(closed, guidance)
	} else if err := st.consolidateClosed(ctx, closed, guidance, st.before.Labels()); err != nil {
		return nil, err
	}
	st.register()
	if st.claimed || unsafe.SliceData(st.s.Context) != st.array {
		// The context's backing array is the step's own beyond the session's length: its spare
		// capacity goes to the next step, with the requests' shared prefix and the sizes
		// counted.
		st.s.KeepContext(&carried{prefix: st.prefix, mark: st.mark, sizes: st.sizes})
	}
	return st.result(began), nil
}

// newStep starts the working state of a step over a copy of s.
func (e *Engine) newStep(s *hippocam.Session, arch hippocam.Archive, in Input) *step {
	st := &step{e: e, s: s.Clone(), arch: arch, in: in, nodes: map[string][]hippocam.Message{}, recallIDs: map[string]bool{}, listings: map[string]string{}, failedFolds: map[string]bool{}}
	st.res.Usage = hippocam.Usage{}
	st.res.Change.From = s.Version
	st.storedSeq = s.Seq
	return st
}

// result closes the step: its usage and counts enter the session, and the change carries its
// ops and, when consolidation is left pending, the job that runs it.
func (st *step) result(began time.Time) *Result {
	st.s.Usage.Merge(st.res.Usage)
	st.s.Consolidations.Intent += st.res.IntentConsolidations
	st.s.Consolidations.Prefix += st.res.PrefixConsolidations
	if st.s.Pending.Empty() {
		st.s.Pending = nil
	} else {
		st.res.Change.Jobs = []hippocam.Job{{Kind: hippocam.JobConsolidate}}
	}
	st.res.Session = st.s
	st.res.Change.Ops = st.ops
	st.res.Elapsed = time.Since(began)
	return &st.res
}

// appendInputs checks and appends the step's history and new messages. Tool results must answer
// the pending calls of the answer before them; a user or system message cannot arrive while calls
// are unanswered; the step's own messages must leave no call unanswered. Rounds completed on the
// way are recorded. A history of any length is imported: whenever it fills the window past ρW
// on the way in, the prefix before the working tail is folded (Alg. 2's first sweep), so that
// what arrives at once is consolidated as if it had arrived step by step. A new framing version
// is marked where it took effect: at the start on first contact, else after the inputs.
func (st *step) appendInputs(ctx context.Context) error {
	if len(st.in.Messages) == 0 && !st.preview {
		return hippocam.Errorf(hippocam.EINVALID, "a step needs at least one new message")
	}
	firstContact := len(st.s.Context) == 0
	if st.in.NewFraming && firstContact {
		st.markFraming()
	}
	if st.in.Advisory != "" && firstContact {
		st.pushAdvisory(st.in.Advisory)
	}
	pending, caller := st.pendingCalls()
	all := append(append([]hippocam.Message(nil), st.in.History...), st.in.Messages...)
	first := len(st.in.History) // index in all of the step's first own message
	for i, m := range all {
		what := fmt.Sprintf("message %d", i-first)
		if i < first {
			what = fmt.Sprintf("history message %d", i)
		}
		switch m.Role {
		case hippocam.RoleTool:
			if !pending[m.ToolCallID] {
				return hippocam.Errorf(hippocam.EINVALID, "%s: tool result for %q answers no pending tool call", what, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		case hippocam.RoleUser, hippocam.RoleSystem, hippocam.RoleAssistant:
			if len(pending) > 0 {
				return hippocam.Errorf(hippocam.EINVALID, "%s: %d tool call(s) of the last answer have no result yet", what, len(pending))
			}
			if m.Role == hippocam.RoleAssistant && i >= first {
				return hippocam.Errorf(hippocam.EINVALID, "%s: an assistant message can enter only as history", what)
			}
		default:
			return hippocam.Errorf(hippocam.EINVALID, "%s: unknown role %q", what, m.Role)
		}
		if i == first {
			st.start = "" // set below: this message, or the answer whose calls it answers
			if m.Role == hippocam.RoleTool {
				st.start = caller
			}
		}
		m.ID = st.s.NextID("m")
		m.Kind = hippocam.KindRaw
		m.Ref, m.Trace, m.Knowledge = "", nil, nil
		m.Tokens = hippocam.MessageTokens(st.e.tok, &m)
		if st.start == "" && i >= first {
			st.start = m.ID
		}
		st.push(m)
		switch {
		case m.Role == hippocam.RoleAssistant && len(m.ToolCalls) > 0:
			pending, caller = map[string]bool{}, m.ID
			for _, id := range m.CallIDs() {
				pending[id] = true
			}
		case m.Role == hippocam.RoleAssistant:
			st.s.AddRound(m.Tokens)
		case m.Role == hippocam.RoleTool && len(pending) == 0:
			st.completeRound(caller)
		}
		if i < first && !st.preview && float64(st.predicted()) > st.e.cfg.Pressure*float64(st.e.cfg.Window) {
			if err := st.sweep(ctx, true); err != nil {
				return fmt.Errorf("import: %w", err)
			}
		}
	}
	if len(pending) > 0 {
		return hippocam.Errorf(hippocam.EINVALID, "%d tool call(s) of the last answer have no result", len(pending))
	}
	if st.in.LateAdvisory != "" && !firstContact && !st.holdsAdvisory(st.in.LateAdvisory) {
		st.pushAdvisory(st.in.LateAdvisory)
	}
	if st.in.NewFraming && !firstContact {
		st.markFraming()
	}
	return nil
}

// pushAdvisory appends an advisory (Input.Advisory, Input.LateAdvisory) as its own message.
func (st *step) pushAdvisory(text string) {
	a := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindAdvisory, Content: hippocam.AdvisoryHeader + "\n" + text, ID: st.s.NextID("m")}
	a.Tokens = hippocam.MessageTokens(st.e.tok, &a)
	st.push(a)
}

// holdsAdvisory reports whether the context holds the advisory text already.
func (st *step) holdsAdvisory(text string) bool {
	content := hippocam.AdvisoryHeader + "\n" + text
	for i := range st.s.Context {
		if m := &st.s.Context[i]; m.Kind == hippocam.KindAdvisory && m.Content == content {
			return true
		}
	}
	return false
}

// markFraming archives the step's framing as a new version beneath a KindFraming mark appended to
// the context. The mark is never sent to a model; expanding it gives that version's messages at
// the place it took effect.
func (st *step) markFraming() {
	ids := make([]string, 0, len(st.in.Framing))
	lo := len(st.s.Context)
	for _, m := range st.in.Framing {
		m.ID = st.s.NextID("m")
		m.Kind = hippocam.KindRaw
		m.Ref, m.Trace, m.Knowledge = "", nil, nil
		m.Tokens = hippocam.MessageTokens(st.e.tok, &m)
		st.push(m)
		ids = append(ids, m.ID)
	}
	mark := hippocam.Message{Role: hippocam.RoleSystem, Kind: hippocam.KindFraming, Ref: st.s.NextID("r")}
	mark.Content = fmt.Sprintf("The agent's framing (%d message(s)) took effect here. %s", len(ids), hippocam.RefTag(mark.Ref))
	if len(ids) == 0 {
		// An empty framing is a version too (the agent dropped its system prompt): the mark
		// stands alone, over an empty node.
		mark.Content = "The agent's framing was removed here."
		mark.Ref = ""
		st.push(mark)
		return
	}
	if _, err := st.replace(lo, len(st.s.Context), mark); err != nil {
		st.e.log.Error("framing mark", "error", err) // cannot happen: the span was just appended
	}
}

// branchAnswer starts a regeneration: the last answer (id) moves beneath a KindBranch mark, kept
// and recallable but no longer shown, and the round that answer served becomes this step's
// unfinished round again. EINVALID when the answer is not the context's last message any more.
func (st *step) branchAnswer(id string) error {
	c := st.s.Context
	i := st.s.Index(id)
	if i < 0 || i != len(c)-1 || c[i].Role != hippocam.RoleAssistant {
		return hippocam.Errorf(hippocam.EINVALID, "cannot answer again: the last answer is no longer the end of the session")
	}
	// The round it served starts after the previous main-model answer: at the assistant message
	// whose calls the inputs answered, else at the first input.
	start := ""
	for j := i - 1; j >= 0; j-- {
		m := &c[j]
		if m.Role == hippocam.RoleAssistant {
			if start == "" || c[j+1].Role == hippocam.RoleTool {
				start = m.ID
			}
			break
		}
		if m.Kind == hippocam.KindRaw && (m.Role == hippocam.RoleUser || m.Role == hippocam.RoleTool || m.Role == hippocam.RoleSystem) {
			start = m.ID
		}
	}
	mark := hippocam.Message{Role: hippocam.RoleSystem, Kind: hippocam.KindBranch, Ref: st.s.NextID("r")}
	mark.Content = "An earlier answer here was regenerated; it is kept beneath " + hippocam.RefTag(mark.Ref) + "."
	if _, err := st.replace(i, i+1, mark); err != nil {
		return err
	}
	st.start = start
	return nil
}

// completeRound records the size of the round that the answer with the given id began: the
// answer and the tool results after it.
func (st *step) completeRound(answerID string) {
	i := st.s.Index(answerID)
	if i < 0 {
		return
	}
	n := st.s.Context[i].Tokens
	for _, m := range st.s.Context[i+1:] {
		if m.Role == hippocam.RoleTool {
			n += m.Tokens
		}
	}
	st.s.AddRound(n)
}

// pendingCalls returns the tool-call ids of the last assistant answer when it is the last
// message with calls not yet answered, and that answer's id.
func (st *step) pendingCalls() (map[string]bool, string) {
	c := st.s.Context
	for i := len(c) - 1; i >= 0; i-- {
		if c[i].Role != hippocam.RoleAssistant {
			if c[i].Role == hippocam.RoleTool {
				continue
			}
			return nil, ""
		}
		if len(c[i].ToolCalls) == 0 {
			return nil, ""
		}
		pending := map[string]bool{}
		for _, id := range c[i].CallIDs() {
			pending[id] = true
		}
		for _, m := range c[i+1:] {
			delete(pending, m.ToolCallID)
		}
		if len(pending) == 0 {
			return nil, ""
		}
		return pending, c[i].ID
	}
	return nil, ""
}

// push appends m to the context and records the op.
func (st *step) push(m hippocam.Message) {
	st.s.Context = append(st.s.Context, m)
	st.ops = append(st.ops, hippocam.AppendOp(m))
}

// replace is Alg. 1's REPLACE: the context messages [lo, hi) move beneath a fresh ref, in order,
// and memory takes their place. Intent anchors are ids, so nothing shifts. It refuses (and
// reports a bug) if the span holds the start of an open intent or a transient recall message.
func (st *step) replace(lo, hi int, memory hippocam.Message) (hippocam.Message, error) {
	if lo < 0 || hi > len(st.s.Context) || lo >= hi {
		return memory, fmt.Errorf("replace: empty or out-of-range span [%d,%d)", lo, hi)
	}
	span := st.s.Context[lo:hi]
	ids := make([]string, len(span))
	for i, m := range span {
		ids[i] = m.ID
		if st.recallIDs[m.ID] {
			return memory, fmt.Errorf("replace: span holds a recall exchange")
		}
		for _, in := range st.s.Stack {
			if in.Start == m.ID {
				return memory, fmt.Errorf("replace: span holds the first message of open intent %q", in.Label)
			}
		}
	}
	if memory.ID == "" {
		memory.ID = st.s.NextID("m")
	}
	st.nodes[memory.Ref] = append([]hippocam.Message(nil), span...)
	ctx := make([]hippocam.Message, 0, len(st.s.Context)-len(span)+1)
	ctx = append(ctx, st.s.Context[:lo]...)
	ctx = append(ctx, memory)
	ctx = append(ctx, st.s.Context[hi:]...)
	st.s.Context = ctx
	st.ops = append(st.ops, hippocam.ReplaceOp(ids, memory))
	return memory, nil
}

// call sends one model request and records its usage.
func (st *step) call(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	t0 := time.Now()
	resp, err := st.e.model.Complete(ctx, req)
	st.res.ModelTime += time.Since(t0)
	if err != nil {
		return nil, err
	}
	st.res.Usage.Add(req.Role, resp.Usage, st.e.cfg.Prices)
	return resp, nil
}

// tokens sums the sizes of msgs.
func tokens(msgs []hippocam.Message) int {
	n := 0
	for i := range msgs {
		n += msgs[i].Tokens
	}
	return n
}

// Children reads one layer of the archive, including nodes this step created.
func (st *step) children(ctx context.Context, ref string) ([]hippocam.Message, error) {
	if kids, ok := st.nodes[ref]; ok {
		return kids, nil
	}
	return st.arch.Children(ctx, ref)
}

// message finds one message of the session: in the context, in this step's nodes, or archived.
func (st *step) message(ctx context.Context, id string) (*hippocam.Message, error) {
	if i := st.s.Index(id); i >= 0 && !st.recallIDs[id] {
		return &st.s.Context[i], nil
	}
	for _, kids := range st.nodes {
		for i := range kids {
			if kids[i].ID == id {
				return &kids[i], nil
			}
		}
	}
	return st.arch.Message(ctx, id)
}
