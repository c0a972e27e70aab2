package httpapi

import (
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sessions"
)

// stuckFormat is a client that takes the stream's opening and its first piece, then stops
// reading: its first text write waits until unblock is closed and then fails.
type stuckFormat struct {
	entered chan struct{}
	unblock chan struct{}
	writes  atomic.Int32
}

func (f *stuckFormat) open(streamID) error { return nil }
func (f *stuckFormat) text(string) error {
	if f.writes.Add(1) == 1 {
		close(f.entered)
	}
	<-f.unblock
	return errors.New("write: i/o timeout")
}
func (f *stuckFormat) finish(*sessions.Result) error          { return nil }
func (f *stuckFormat) whole(streamID, *sessions.Result) error { return nil }
func (f *stuckFormat) fail(error) error                       { return nil }

// While the client does not read, the step's pieces are queued without blocking it, as text
// (never more than the answer); once the write fails, the queue is dropped and later pieces
// are not kept.
func TestAnswerStreamQueueIsBounded(t *testing.T) {
	f := &stuckFormat{entered: make(chan struct{}), unblock: make(chan struct{})}
	a := newAnswerStream(httptest.NewRecorder(), f, nil)
	a.start("s", sessions.EventCreated)
	a.text("first")
	<-f.entered // the writer is stuck on the first piece
	piece := strings.Repeat("x", 64)
	const n = 16384 // 1 MiB of answer
	for i := 0; i < n; i++ {
		a.text(piece)
	}
	a.mu.Lock()
	pending, peak := a.pending.Len(), a.peak
	a.mu.Unlock()
	if pending != n*len(piece) || peak != n*len(piece) {
		t.Fatalf("pending %d, peak %d; want exactly the %d bytes of text not yet written", pending, peak, n*len(piece))
	}
	close(f.unblock)
	a.close()
	for i := 0; i < 100; i++ {
		a.text(piece)
	}
	if a.failed == nil || a.pending.Len() != 0 || f.writes.Load() != 1 {
		t.Fatalf("after the failed write: failed %v, pending %d, writes %d; want the queue dropped", a.failed, a.pending.Len(), f.writes.Load())
	}
	if err := a.finish(&sessions.Result{}); err == nil {
		t.Error("finish after a cut-off wrote to the client")
	}
}

// recordingFormat is a client that reads everything; it records what it was sent.
type recordingFormat struct {
	sent     strings.Builder
	finished bool
	failed   error
}

func (f *recordingFormat) open(streamID) error                    { return nil }
func (f *recordingFormat) text(s string) error                    { f.sent.WriteString(s); return nil }
func (f *recordingFormat) finish(*sessions.Result) error          { f.finished = true; return nil }
func (f *recordingFormat) whole(streamID, *sessions.Result) error { f.finished = true; return nil }
func (f *recordingFormat) fail(err error) error                   { f.failed = err; return nil }

// A stream whose text is not the committed answer ends with an error event, never with the
// format's end: the client's retry then gets the stored answer whole.
func TestAnswerStreamChecksTheAnswer(t *testing.T) {
	for _, tt := range []struct {
		name, answer string
		ok           bool
	}{{"OK", "one two", true}, {"ErrLonger", "one two three", false}, {"ErrDifferent", "one tww", false}} {
		t.Run(tt.name, func(t *testing.T) {
			f := &recordingFormat{}
			a := newAnswerStream(httptest.NewRecorder(), f, nil)
			a.start("s", sessions.EventContinued)
			a.text("one ")
			a.text("two")
			a.close()
			err := a.finish(&sessions.Result{Answer: hippocam.Message{Content: tt.answer}})
			if f.sent.String() != "one two" {
				t.Fatalf("sent %q", f.sent.String())
			}
			if tt.ok != (err == nil) || f.finished != tt.ok || (f.failed != nil) == tt.ok {
				t.Errorf("err %v, finished %v, failed %v", err, f.finished, f.failed)
			}
		})
	}
}
