package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hippocam/hippocam"
)

// When JANUS runs (Config.Janus). The paper's step asks JANUS first and lets the main model answer
// only once the stack and the guidance are in the context (Alg. 1, lines 2-4): every step then
// waits for a whole JANUS answer before the main call even starts. Measured at a provider's pace
// (400 ms to the first token, 80 tokens a second) that is most of the wait an agent sees on work
// that opens and closes intents often.
//
// JanusBeside, the default, asks JANUS at the same moment as the main model, over the same
// context. The answer goes to the agent as soon as the main model gives it; the verdict (the
// stack operations and the guidance) is kept for the session (Engine.verdicts) and applied when
// its next step begins, after that step's new messages and before its own JANUS call and main
// call. The next step waits for the verdict if it is not in yet, so no directive is skipped: the
// guidance reaches the main model one step later than in the paper's order, and the spans of the
// intents it closes are consolidated after that next step's answer.
//
// A verdict is applied only to the session state it was asked about: the step that asked must
// have committed (the session's version moved past the one the step began from), and the stack
// and the messages JANUS had reviewed must be as they were. Otherwise (the step's commit lost a
// race, another replica answered meanwhile, the process restarted and lost it) it is dropped;
// what it judged is still unreviewed (Transcript.JanusCovered did not move), so the next JANUS
// call judges it again. A verdict's calls were paid for whatever happens to it: their usage goes
// to the step that takes it, applied or dropped.
//
// JanusGate keeps the paper's order, for runs that measure the method itself.

// JanusMode is when JANUS runs against the main model's answer.
type JanusMode string

// JANUS modes.
const (
	JanusBeside JanusMode = "beside"
	JanusGate   JanusMode = "gate"
)

// Verdict outcomes, in Result.Verdict: what the step did with the verdict the session's previous
// step left.
const (
	VerdictApplied = "applied" // the stack changed and the guidance entered the context
	VerdictSkip    = "skip"    // JANUS kept the stack as it was
	VerdictFailed  = "failed"  // JANUS failed; the stack is unchanged
	VerdictDropped = "dropped" // the session moved on another way; the messages are judged again
	VerdictPending = "pending" // not in within Config.JanusWait: it applies at a later step
)

// DefaultJanusWait is the proxy's Config.JanusWait (serve --janus-wait): long enough to catch a
// verdict that is just arriving, short against a provider's time to the first token. An agent
// whose tools take time finds the verdict in already; one that sends its next request at once
// (a user typing fast, tools that return at once) gets its answer without waiting for the rest
// of JANUS's, whose verdict then applies a step later. Measured on the provider run (400 ms to
// the first token): a 100 ms wait held the median step at 1.24× the bare proxy's first byte.
const DefaultJanusWait = 20 * time.Millisecond

// verdictTimeout bounds a JANUS call that runs on after its step returned.
const verdictTimeout = 10 * time.Minute

// maxVerdicts bounds the verdicts kept for sessions whose next step has not come; when it is
// full it starts over (a dropped verdict costs a second look at the same messages, nothing else).
const maxVerdicts = 100_000

// janusDecision is the outcome of one JANUS call over a context: the operations it decided
// (checked against the stack it judged), or why there are none.
type janusDecision struct {
	ops hippocam.StackOps
	// err is set when no valid decision came; reviewed then says whether the messages shown
	// count as reviewed all the same (JANUS answered, but every answer broke the rules).
	err      error
	reviewed bool
	// seen is the id of the last message JANUS was shown, and round the first message of the
	// round its step served (step.start): a user's request there began the work that follows.
	seen, round string
}

// verdict is a JANUS call running beside a step's answer, and what it needs to be applied later.
type verdict struct {
	done   chan struct{}
	cancel context.CancelFunc
	// from is the session's version when the step that asked began; stack and covered are the
	// stack it judged and the session's Transcript.JanusCovered then.
	from    int64
	stack   hippocam.IntentStack
	covered string
	// Set before done is closed.
	d     janusDecision
	usage hippocam.Usage
}

// verdicts holds the verdict each session's last step left, by tenant and session id.
type verdicts struct {
	mu sync.Mutex
	m  map[string]*verdict
}

func verdictKey(tenant, id string) string { return tenant + "\x00" + id }

func (vs *verdicts) put(key string, v *verdict) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if len(vs.m) >= maxVerdicts {
		vs.m = map[string]*verdict{}
	}
	vs.m[key] = v
}

func (vs *verdicts) get(key string) *verdict {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.m[key]
}

// remove forgets key's verdict if it is still v.
func (vs *verdicts) remove(key string, v *verdict) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.m[key] == v {
		delete(vs.m, key)
	}
}

// beside reports whether the step asks JANUS beside its answer.
func (st *step) beside() bool {
	return st.e.cfg.Janus != JanusGate && !st.e.cfg.Ablations.FlatSummary && !st.preview
}

// startJanus asks JANUS about the context as it stands, in the background: the view is built
// here, the call runs on its own copy of the step's state, and the verdict is kept for the
// session (register) once the step has returned its answer.
func (st *step) startJanus(ctx context.Context) {
	jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), verdictTimeout)
	v := &verdict{done: make(chan struct{}), cancel: cancel, from: st.s.Version, stack: st.s.Stack, covered: st.s.Transcript.JanusCovered}
	// JANUS's own state: the session as it is now. Its context is cut to its length, so that the
	// step's later appends never reach it; nothing edits the messages already there.
	snap := *st.s
	snap.Context = st.s.Context[:len(st.s.Context):len(st.s.Context)]
	js := &step{e: st.e, s: &snap, arch: st.arch, nodes: map[string][]hippocam.Message{}, recallIDs: map[string]bool{}}
	js.res.Usage = hippocam.Usage{}
	q := st.janusQuestion()
	round := st.start
	go func() {
		defer close(v.done)
		defer cancel()
		v.d = js.askJanus(jctx, q)
		v.d.round = round
		v.usage = js.res.Usage
	}()
	st.next = v
}

// register keeps the step's verdict for the session's next step. Called once the step has
// succeeded.
func (st *step) register() {
	if v := st.next; v != nil {
		st.next = nil
		st.e.verdicts.put(verdictKey(st.s.Tenant, st.s.ID), v)
	}
}

// dropNext stops the JANUS call of a step that failed: its verdict would be about a step that
// did not happen.
func (st *step) dropNext() {
	if v := st.next; v != nil {
		st.next = nil
		v.cancel()
		<-v.done
	}
}

// takeVerdict waits for the verdict the session's previous step left, if any, and applies it
// when it still fits the session (see the top of this file). It returns the intents it closed
// and the guidance's id, as janus does.
func (st *step) takeVerdict(ctx context.Context) ([]hippocam.Intent, string, error) {
	key := verdictKey(st.s.Tenant, st.s.ID)
	v := st.e.verdicts.get(key)
	if v == nil {
		return nil, "", nil
	}
	select {
	case <-v.done:
	default:
		t0 := time.Now()
		var bound <-chan time.Time
		if w := st.e.cfg.JanusWait; w > 0 {
			t := time.NewTimer(w)
			defer t.Stop()
			bound = t.C
		}
		select {
		case <-v.done:
		case <-bound:
			// Still running: this step answers without it, and starts no JANUS call of its
			// own; the verdict stays for a later step, whose JANUS call then reviews this
			// step's messages too.
			st.res.VerdictWait, st.res.Verdict, st.janusBusy = time.Since(t0), VerdictPending, true
			return nil, "", nil
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
		st.res.VerdictWait = time.Since(t0)
	}
	st.e.verdicts.remove(key, v)
	st.res.Usage.Merge(v.usage)
	if v.from >= st.s.Version || v.covered != st.s.Transcript.JanusCovered || !slices.Equal(v.stack, st.s.Stack) {
		st.res.Verdict = VerdictDropped
		return nil, "", nil
	}
	return st.applyJanus(v.d)
}

// SettleVerdict waits for the JANUS call the session's last step left running (JanusBeside) and
// returns its usage, which the step that takes the verdict then no longer counts: for a caller
// that accounts each step's calls to that step, as a benchmark does. The verdict itself stays for
// the next step. Nothing left: nil.
func (e *Engine) SettleVerdict(ctx context.Context, tenant, id string) (hippocam.Usage, error) {
	v := e.verdicts.get(verdictKey(tenant, id))
	if v == nil {
		return nil, nil
	}
	select {
	case <-v.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	u := v.usage
	v.usage = nil
	return u, nil
}
