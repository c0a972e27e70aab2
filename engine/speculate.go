package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/hippocam/hippocam"
)

// Latency (docs/architecture.md §7). Two things keep the main answer off the slow path:
//
//   - Streaming: when the caller asks for the answer's text as it comes (Input.OnText) and the
//     model can stream (hippocam.StreamModel), every main-model call streams, and its text goes
//     to the caller as it arrives. Tool calls come whole with the response, once it is known
//     whether they are Hippocam's own (recall, search) or the agent's.
//   - Speculation (Config.Speculate): the main model's first call of a step starts together with
//     JANUS, over the context as it stands before JANUS's guidance. When JANUS leaves the context
//     as it was (a skip, or a failure that keeps the stack), the request that would have been
//     made is the one already under way, and its answer stands. When JANUS changes it, that call
//     is cancelled and made again with the guidance; the discarded call's usage is recorded
//     under hippocam.CallSpeculative (estimated from the request and the text received when it
//     was cut short). Until JANUS has decided, the speculative call's text is held back, so the
//     caller never sees text of a discarded answer.

// Speculation outcomes, in Result.Speculation.
const (
	SpeculationStood  = "stood"  // JANUS left the context as it was: the answer under way stood
	SpeculationRedone = "redone" // JANUS changed it: the main call was made again
)

// speculation is a main-model call started beside JANUS.
type speculation struct {
	req    *hippocam.Request
	cancel context.CancelFunc
	done   chan struct{}
	resp   *hippocam.Response
	err    error
	relay  *relay
}

// relay passes a call's text pieces on to the caller, or holds them until release.
type relay struct {
	mu       sync.Mutex
	held     []string
	out      func(string) // nil: the pieces are only counted
	open     bool
	dropped  bool
	received int // bytes received, for the usage estimate of a discarded call
}

func (r *relay) piece(text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.received += len(text)
	switch {
	case r.dropped:
	case r.open:
		r.out(text)
	default:
		r.held = append(r.held, text)
	}
	return nil
}

// release sends what was held and lets later pieces through as they come.
func (r *relay) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.held {
		r.out(t)
	}
	r.held, r.open = nil, true
}

// drop discards what was held and what is still to come.
func (r *relay) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held, r.dropped = nil, true
}

// receivedBytes is how much text the call has produced so far.
func (r *relay) receivedBytes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.received
}

// speculate starts the step's first main-model call beside JANUS, when the configuration asks
// for it and the request fits. It never touches the step's state from its goroutine.
func (st *step) speculate(ctx context.Context) {
	if !st.e.cfg.Speculate || st.e.cfg.Ablations.FlatSummary {
		return
	}
	req := st.agentRequest(st.recallOffered())
	if hippocam.RequestTokens(st.e.tok, req.Messages, req.Tools) > st.e.cfg.Window {
		return // the answer loop reports it, after JANUS
	}
	cctx, cancel := context.WithCancel(ctx)
	sp := &speculation{req: req, cancel: cancel, done: make(chan struct{}), relay: &relay{out: st.emit}}
	go func() {
		defer close(sp.done)
		sp.resp, sp.err = st.e.complete(cctx, req, st.in.OnText != nil, sp.relay.piece)
	}()
	st.spec = sp
}

// takeSpeculation settles the speculative call against req, the first request the answer loop
// would make now that JANUS has run: the same request lets the call stand (its held text is
// released and its answer returned); another discards it. It returns nil when there is no
// speculation or it was discarded.
func (st *step) takeSpeculation(req *hippocam.Request) *speculation {
	sp := st.spec
	if sp == nil {
		return nil
	}
	st.spec = nil
	if sameRequest(sp.req, req) {
		sp.relay.release()
		<-sp.done
		st.res.Speculation = SpeculationStood
		return sp
	}
	sp.relay.drop()
	sp.cancel()
	<-sp.done
	st.res.Speculation = SpeculationRedone
	switch {
	case sp.err == nil:
		st.res.Usage.Add(hippocam.CallSpeculative, sp.resp.Usage, st.e.cfg.Prices)
	case errors.Is(sp.err, context.Canceled):
		// Cut short by the cancellation: the prompt was read, and some of the answer written.
		u := hippocam.CallUsage{Input: hippocam.RequestTokens(st.e.tok, sp.req.Messages, sp.req.Tools)}
		u.Output = (sp.relay.receivedBytes() + 3) / 4 // about four bytes a token
		st.res.Usage.Add(hippocam.CallSpeculative, u, st.e.cfg.Prices)
	}
	// A call the provider refused was not billed.
	return nil
}

// abandon cancels a speculative call the step no longer needs (it failed before answering).
func (st *step) abandon() {
	if sp := st.spec; sp != nil {
		st.spec = nil
		sp.relay.drop()
		sp.cancel()
		<-sp.done
	}
}

// sameRequest reports whether two main-model requests carry the same messages, tools and
// options. Messages are compared by what a model reads of them.
func sameRequest(a, b *hippocam.Request) bool {
	if len(a.Messages) != len(b.Messages) || len(a.Tools) != len(b.Tools) || a.ToolChoice != b.ToolChoice || a.Model != b.Model {
		return false
	}
	for i := range a.Tools {
		if a.Tools[i].Name != b.Tools[i].Name {
			return false
		}
	}
	for i := range a.Messages {
		x, y := &a.Messages[i], &b.Messages[i]
		if x.ID != y.ID || x.Role != y.Role || x.Kind != y.Kind || x.Content != y.Content || len(x.ToolCalls) != len(y.ToolCalls) || x.ToolCallID != y.ToolCallID {
			return false
		}
	}
	return true
}

// complete makes one main-model call: streamed when stream is set and the model can stream,
// with every piece of text passed to piece; otherwise a plain call.
func (e *Engine) complete(ctx context.Context, req *hippocam.Request, stream bool, piece func(string) error) (*hippocam.Response, error) {
	if sm, ok := e.model.(hippocam.StreamModel); ok && stream {
		return sm.CompleteStream(ctx, req, piece)
	}
	return e.model.Complete(ctx, req)
}

// emit passes a piece of the current main response's text to the caller and adds it to the
// answer: the answer the step keeps is exactly the text the caller received. The text of a
// response after another one's is set apart by a blank line.
func (st *step) emit(text string) {
	if text == "" {
		return
	}
	if !st.partStarted {
		st.partStarted = true
		if st.answerText.Len() > 0 {
			text = "\n\n" + text
		}
	}
	st.answerText.WriteString(text)
	if st.in.OnText != nil {
		st.in.OnText(text)
	}
}

// emitPart is emit for the whole text of a response that did not stream.
func (st *step) emitPart(text string) {
	st.partStarted = false
	st.emit(text)
}
