package httpapi

import (
	"context"
	"hash"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sessions"
)

// Streamed answers. A streamed request hands the session service its callbacks: OnStart names
// the session before the step runs, OnCall tells the input tokens of each main-model call's
// request before its text, OnText queues each piece of the answer's text as the model produces
// it. A writer goroutine sends what is queued to the client as the format's delta
// events, every write bounded by Config.WriteTimeout, so the step never waits on the client
// and the session's lock is released as soon as the step is committed. Once Continue has
// returned, the handler writes the rest (tool calls, the end of the answer, usage) or, when
// the step failed after text went out, the format's error event instead of its end, so that
// the client's retry runs the step again.

// streamFormat writes the events of a streamed answer in one inbound format. Its methods are
// called from one goroutine at a time, in the order open, text…, then finish or fail; or whole
// alone, or fail alone after open.
type streamFormat interface {
	// open writes the headers and the events that precede the answer's text.
	open(id streamID) error
	// text writes one more piece of the answer's text.
	text(piece string) error
	// finish writes what follows the text that was streamed: the committed answer's tool calls,
	// its end and its usage.
	finish(res *sessions.Result) error
	// whole writes an answer none of whose text was streamed (a retry, a tool-call-only answer,
	// a model that cannot stream), as today's streams of a finished answer.
	whole(id streamID, res *sessions.Result) error
	// fail ends an open stream with the format's error event for err; no end of the answer follows.
	fail(err error) error
}

// streamID names a streamed answer: the session, the answer's key within it and when the
// response was created. The key is the answer's message id when the answer is known before
// anything is written; when its text streams while the step runs, the answer has no id yet,
// and the key is "@N", its position in the session's transcript (resolveAnswer reads both).
// inputTokens is what the main-model call whose text opens the stream was sent, as the engine
// counted it (0 when not known), for the formats that announce it before the text.
type streamID struct {
	session, answer string
	event           sessions.Event
	created         int64
	inputTokens     int
}

// positionKey is the answer key of the answer at index n of a transcript.
func positionKey(n int) string { return "@" + strconv.Itoa(n) }

// answerStream carries one streamed answer from the step to the client. The queue holds only
// text the client has not been sent yet, as text (events are encoded when written), so it never
// holds more than the answer; once the client cannot be written to, queued and later pieces are
// dropped.
type answerStream struct {
	w        http.ResponseWriter
	format   streamFormat
	position int // index of the answer in the session's transcript
	began    time.Time
	metrics  *Metrics

	mu      sync.Mutex
	pending strings.Builder // text not yet written
	queued  hash.Hash64     // of all the text queued, to check it against the committed answer
	length  int             // bytes of text queued
	peak    int             // the most bytes pending at once (tests check the bound)
	id      *streamID       // set by start
	tokens  int             // set by call: the input tokens of the latest main-model call
	opening int             // tokens when the first piece was queued: what the opening reports
	cluster string          // set by route: the task's cluster, named in the headers
	routed  bool
	closed  bool          // Continue returned: no more pieces
	failed  error         // the first write error; nothing more is written
	wake    chan struct{} // tells the writer there is text or the stream closed
	done    chan struct{} // closed when the writer goroutine ends; nil if it never started

	// opened is set by the writer goroutine once it wrote the stream's opening; the handler
	// reads it after close.
	opened bool
}

func newAnswerStream(w http.ResponseWriter, format streamFormat, m *Metrics) *answerStream {
	return &answerStream{w: w, format: format, began: time.Now(), metrics: m, wake: make(chan struct{}, 1), queued: fnv.New64a()}
}

// start is the service's OnStart: it names the stream and starts the writer.
func (a *answerStream) start(session string, event sessions.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.id != nil || a.closed {
		return
	}
	a.id = &streamID{session: session, answer: positionKey(a.position), event: event, created: time.Now().Unix()}
	a.done = make(chan struct{})
	go a.run()
}

// call is the service's OnCall: it keeps the input tokens of the main-model call under way,
// which the stream's opening reports when that call's text opens it.
func (a *answerStream) call(inputTokens int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokens = inputTokens
}

// route is the service's OnRoute: the cluster the task start was routed to, named in the
// stream's headers.
func (a *answerStream) route(cluster string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cluster, a.routed = cluster, true
}

// text is the service's OnText: it queues a piece and returns at once.
func (a *answerStream) text(piece string) {
	if piece == "" {
		return
	}
	a.mu.Lock()
	if a.failed != nil || a.closed || a.id == nil {
		a.mu.Unlock()
		return
	}
	if a.length == 0 {
		a.opening = a.tokens
	}
	a.pending.WriteString(piece)
	a.peak = max(a.peak, a.pending.Len())
	a.queued.Write([]byte(piece))
	a.length += len(piece)
	a.mu.Unlock()
	a.signal()
}

func (a *answerStream) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// run writes queued text until the stream closes or a write fails.
func (a *answerStream) run() {
	defer close(a.done)
	for {
		a.mu.Lock()
		for a.pending.Len() == 0 && !a.closed {
			a.mu.Unlock()
			<-a.wake
			a.mu.Lock()
		}
		text, closed, tokens := a.pending.String(), a.closed, a.opening
		a.pending = strings.Builder{}
		a.mu.Unlock()
		if text != "" {
			if err := a.write(text, tokens); err != nil {
				a.cutOff(err)
				return
			}
		}
		if closed {
			return
		}
	}
}

// write sends one stretch of text, opening the stream first, with the input tokens of the call
// that produced it.
func (a *answerStream) write(text string, inputTokens int) error {
	if !a.opened {
		a.w.Header().Set(SessionHeader, a.id.session)
		if a.routed {
			a.w.Header().Set(ClusterHeader, a.cluster)
		}
		a.w.Header().Set(EventHeader, string(a.id.event))
		id := *a.id
		id.inputTokens = inputTokens
		if err := a.format.open(id); err != nil {
			return err
		}
		a.opened = true
		if a.metrics != nil {
			a.metrics.firstText.Observe(time.Since(a.began).Seconds())
		}
	}
	return a.format.text(text)
}

// cutOff records that the client cannot be written to and drops what is queued.
func (a *answerStream) cutOff(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed == nil {
		a.failed = err
		if a.metrics != nil {
			a.metrics.cutOffs.Inc()
		}
	}
	a.pending = strings.Builder{}
}

// close ends the queue once Continue returned and waits for the writer to send what is queued
// (each write bounded by the write timeout).
func (a *answerStream) close() {
	a.mu.Lock()
	a.closed = true
	done := a.done
	a.mu.Unlock()
	a.signal()
	if done != nil {
		<-done
	}
}

// errStreamMismatch is the error of a stream whose text is not the answer that was committed
// (the session service promises they are the same): the stream ends with an error event, and
// the client's retry gets the stored answer whole.
var errStreamMismatch = hippocam.Errorf(hippocam.EINTERNAL, "the streamed text differs from the committed answer; retry the request for the stored answer")

// finish writes the rest of a committed answer after close: all of it when no text went out.
// It returns errStreamMismatch, after ending the stream with an error event, when the text
// streamed is not the answer's; otherwise the error of writing to the client.
func (a *answerStream) finish(res *sessions.Result) error {
	if a.failed != nil {
		return a.failed
	}
	var err error
	if a.opened {
		whole := fnv.New64a()
		whole.Write([]byte(res.Answer.Content))
		if a.length != len(res.Answer.Content) || whole.Sum64() != a.queued.Sum64() {
			a.abort(errStreamMismatch)
			return errStreamMismatch
		}
		err = a.format.finish(res)
	} else {
		err = a.format.whole(streamID{session: res.Session.ID, answer: res.Answer.ID, event: res.Event, created: res.Session.UpdatedAt.Unix()}, res)
	}
	if err != nil {
		a.cutOff(err)
	}
	return err
}

// begun reports, after close, whether the stream has begun: an error can then only be told
// with the format's error event.
func (a *answerStream) begun() bool { return a.opened || a.failed != nil }

// abort ends a stream that began with the format's error event for err (when the client can
// still be written to).
func (a *answerStream) abort(err error) {
	if a.failed != nil || !a.opened {
		return
	}
	if werr := a.format.fail(err); werr != nil {
		a.cutOff(werr)
	}
}

// detach returns the context a step runs in: it does not end when the client goes away, so
// that an answer already paid for is committed and the client's retry finds it stored; once
// the client is gone the step has at most grace more. The cancel function must be called when
// the step is over.
func detach(parent context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-parent.Done():
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
			cancel()
		}
	}()
	return ctx, cancel
}
