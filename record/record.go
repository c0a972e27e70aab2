// Package record keeps every exchange Hippocam has with its upstream model: the main model's
// calls and those of its components (JANUS, PRECIP, PALIM, the learning layer's router and
// judges), one JSON line per call in a file per session (`hippocam serve --record DIR`,
// docs/sessions.md). A component call's line carries its case in the form `hippocam check`
// reads, so that a recording can be checked as it is.
//
// Two pieces observe a call: the model wrapper (Recorder.Model) times it and reads its answer
// and usage; the HTTP transport under the model client (Recorder.Transport) keeps the body the
// client sent and counts its tries. The caller of a structured call adds which attempt it is,
// its case and the problems it found with the answer (hippocam.CallNote); the session comes from
// the call's context (hippocam.WithCallSession).
//
// Lines are written by one goroutine, in the order the calls ended: a call never waits for the
// disk, and a write that fails is logged and counted (Recorder.Failures), never the call's error.
// API keys never reach a line: the transport reads the body only, not the headers.
package record

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
)

// Bounds of a line: a request body larger than MaxRequestBytes is left out (its size is kept),
// an answer's text longer than MaxAnswerBytes is cut. QueueLines bounds the lines waiting for
// the writer; a line that finds the queue full is lost, and counted as a failure.
const (
	MaxRequestBytes = 16 << 20
	MaxAnswerBytes  = 4 << 20
	QueueLines      = 4096
)

// Line is one recorded exchange, as written (one JSON object per line).
type Line struct {
	// Time is when the call began (UTC).
	Time    time.Time `json:"time"`
	Tenant  string    `json:"tenant"`
	Session string    `json:"session"`
	// Role is the call's role, as its X-Hippocam-Role header says.
	Role hippocam.CallRole `json:"role"`
	// Attempt counts the attempts of a structured call's contract from 1 (a correction quoting
	// the previous answer's problems is attempt 2); 1 for other calls.
	Attempt int `json:"attempt"`
	// Tries is how many HTTP requests the client made for the call (its retries included).
	Tries  int  `json:"tries"`
	Stream bool `json:"stream"`
	// Request is the body of the last try, as sent; RequestBytes its size. RequestCut says it
	// was larger than MaxRequestBytes and left out.
	Request      json.RawMessage `json:"request,omitempty"`
	RequestBytes int             `json:"request_bytes"`
	RequestCut   bool            `json:"request_cut,omitempty"`
	// Response is the answer as the client read it (a stream assembled); Error the call's
	// failure instead.
	Response *Response `json:"response,omitempty"`
	Error    string    `json:"error,omitempty"`
	// LatencyMS is the whole call; TTFBMS the wait for the response headers of the last try;
	// FirstTextMS, for a stream, the wait for its first piece of text.
	LatencyMS   float64            `json:"latency_ms"`
	TTFBMS      float64            `json:"ttfb_ms,omitempty"`
	FirstTextMS float64            `json:"first_text_ms,omitempty"`
	Usage       hippocam.CallUsage `json:"usage"`
	// Problems are the reasons the caller refused the answer, quoted back in the next attempt.
	Problems []string `json:"problems,omitempty"`
	// Case is a component call's answer in the form `hippocam check` reads.
	Case *Case `json:"case,omitempty"`
}

// Response is a recorded answer.
type Response struct {
	Content      string              `json:"content"`
	ToolCalls    []hippocam.ToolCall `json:"tool_calls,omitempty"`
	FinishReason string              `json:"finish_reason,omitempty"`
	// Cut says Content was longer than MaxAnswerBytes and is cut there.
	Cut bool `json:"cut,omitempty"`
}

// Case is one element of the array `hippocam check` reads: the messages of the session the
// request showed in the chat-completions shape, the span [first, last] a PALIM or PRECIP call
// consolidated, the stack JANUS judged or PRECIP closed the innermost intent of, and the answer
// (the arguments of the role's tool call when the model made one, else its text).
type Case struct {
	ID       string               `json:"id"`
	Role     hippocam.CallRole    `json:"role"`
	Messages []json.RawMessage    `json:"messages"`
	Span     []int                `json:"span,omitempty"`
	Stack    hippocam.IntentStack `json:"stack,omitempty"`
	Answer   string               `json:"answer"`
}

// Recorder writes the lines of one directory. It is safe for concurrent use.
type Recorder struct {
	dir string
	log *slog.Logger

	mu      sync.RWMutex // guards closed against the sends on q
	closed  bool
	q       chan op
	stopped chan struct{}

	tombMu sync.Mutex
	tombs  map[string]time.Time // deleted sessions by file path: when they were deleted

	lines    atomic.Int64
	failures atomic.Int64
}

// op is one job of the writer: a line to append, a file to remove, or a flush.
type op struct {
	path  string
	entry *entry
	rm    bool
	ack   chan error
}

// Open returns a recorder writing under dir, which it creates (readable by its owner only: the
// lines hold the conversations).
func Open(dir string, log *slog.Logger) (*Recorder, error) {
	if dir == "" {
		return nil, fmt.Errorf("record: no directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{dir: dir, log: log, q: make(chan op, QueueLines), stopped: make(chan struct{}), tombs: map[string]time.Time{}}
	go r.write()
	return r, nil
}

// Dir is the directory the recorder writes under.
func (r *Recorder) Dir() string { return r.dir }

// Lines is how many lines were written; Failures how many were lost (a write that failed, or a
// full queue).
func (r *Recorder) Lines() int64    { return r.lines.Load() }
func (r *Recorder) Failures() int64 { return r.failures.Load() }

// Path is the file of a session's lines: DIR/<tenant>/<session>.jsonl, each name escaped
// (FileName). The calls of a tenant that belong to no one session go to DIR/<tenant>/_none.jsonl,
// and calls of no tenant to DIR/_none/.
func (r *Recorder) Path(tenant, session string) string {
	t, s := "_none", "_none"
	if tenant != "" {
		t = FileName(tenant)
	}
	if session != "" {
		s = FileName(session)
	}
	return filepath.Join(r.dir, t, s+".jsonl")
}

// FileName escapes a tenant or session name for a file name: ASCII letters, digits, '-' and '.'
// (but not first) stay; every other byte becomes '_' and two hex digits. Distinct names get
// distinct file names, and none starts with "_n".
func FileName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' && i > 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02x", c)
	}
	return b.String()
}

// Remove deletes the recording of a session, and drops the lines of calls that began before
// now and are still to be written (a job that ran on after the deletion). A recording that does
// not exist is no error.
func (r *Recorder) Remove(tenant, session string) error {
	path := r.Path(tenant, session)
	now := time.Now()
	r.tombMu.Lock()
	for p, t := range r.tombs { // a call runs for minutes at most: older marks have done their work
		if now.Sub(t) > 24*time.Hour {
			delete(r.tombs, p)
		}
	}
	r.tombs[path] = now
	r.tombMu.Unlock()
	ack := make(chan error, 1)
	if !r.send(op{path: path, rm: true, ack: ack}, true) {
		return removeFile(path)
	}
	return <-ack
}

// Flush waits until every line queued before it is written.
func (r *Recorder) Flush() {
	ack := make(chan error, 1)
	if r.send(op{ack: ack}, true) {
		<-ack
	}
}

// Close writes the queued lines and stops the writer; lines of later calls are dropped.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.q)
	r.mu.Unlock()
	<-r.stopped
	return nil
}

// send queues o; wait makes it wait for room instead of failing on a full queue. It reports
// whether o was queued.
func (r *Recorder) send(o op, wait bool) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return false
	}
	if wait {
		r.q <- o
		return true
	}
	select {
	case r.q <- o:
		return true
	default:
		return false
	}
}

// write is the writer goroutine.
func (r *Recorder) write() {
	defer close(r.stopped)
	for o := range r.q {
		switch {
		case o.rm:
			o.ack <- removeFile(o.path)
		case o.entry == nil:
			close(o.ack)
		default:
			r.tombMu.Lock()
			t, gone := r.tombs[o.path]
			r.tombMu.Unlock()
			if gone && o.entry.line.Time.Before(t) {
				continue // the session was deleted after the call began
			}
			if err := appendLine(o.path, o.entry.encode()); err != nil {
				r.fail("write", err)
				continue
			}
			r.lines.Add(1)
		}
	}
}

func (r *Recorder) fail(what string, err error) {
	r.failures.Add(1)
	r.log.Warn("recording: a line was lost", "what", what, "error", err)
}

func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// appendLine appends b to the file at path, creating it and its directory.
func appendLine(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b) // one write: a reader sees whole lines, or a line still to end
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// entry is a call waiting to be encoded: what the encoding needs that is costly to prepare is
// prepared by the writer, not by the call.
type entry struct {
	line Line
	body []byte
	resp *hippocam.Response
	cas  *hippocam.CallCase
}

// encode returns the line, ended by a newline.
func (e *entry) encode() []byte {
	l := &e.line
	l.RequestBytes = len(e.body)
	switch {
	case len(e.body) > MaxRequestBytes:
		l.RequestCut = true
	case len(e.body) > 0 && json.Valid(e.body):
		l.Request = e.body
	case len(e.body) > 0:
		l.Request, _ = json.Marshal(string(e.body)) // not JSON: kept as text
	}
	if e.resp != nil {
		c := e.resp.Message.Content
		cut := len(c) > MaxAnswerBytes
		if cut {
			c = c[:MaxAnswerBytes]
		}
		l.Response = &Response{Content: c, ToolCalls: e.resp.Message.ToolCalls, FinishReason: e.resp.FinishReason, Cut: cut}
		if e.cas != nil {
			l.Case = caseOf(e.cas, e.resp, l)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		// A value that cannot be encoded (a raw value that is not JSON): the line without it.
		l.Case, l.Request = nil, nil
		l.Error = strings.TrimSpace(l.Error + " (recording: " + err.Error() + ")")
		b.Reset()
		_ = enc.Encode(l)
	}
	return b.Bytes()
}

// caseOf builds the check case of a component call.
func caseOf(c *hippocam.CallCase, resp *hippocam.Response, l *Line) *Case {
	answer := resp.Message.Content
	for _, tc := range resp.Message.ToolCalls {
		if c.Tool != "" && tc.Name == c.Tool {
			answer = tc.Arguments
			break
		}
	}
	out := &Case{
		ID:     fmt.Sprintf("%s/%s/%s/%d", l.Session, l.Role, l.Time.Format("20060102T150405.000000000Z"), l.Attempt),
		Role:   c.Role,
		Stack:  c.Stack,
		Answer: answer,
	}
	if req, err := wire.FromRequest("check", &hippocam.Request{Messages: c.Messages}); err == nil {
		for i := range req.Messages {
			b, err := json.Marshal(&req.Messages[i])
			if err != nil {
				return nil
			}
			out.Messages = append(out.Messages, b)
		}
	} else {
		return nil
	}
	if c.Role != hippocam.CallJanus && c.Lo >= 0 {
		out.Span = []int{c.Lo, len(c.Messages) - 1}
	}
	return out
}

// exchange is what the transport saw of one call.
type exchange struct {
	mu    sync.Mutex
	tries int
	body  []byte
	head  time.Time // when the headers of the last try's answer arrived
}

type exchangeKey struct{}

// Transport returns an http.RoundTripper over rt (nil: http.DefaultTransport) that keeps, for
// the calls of a model this recorder wraps, the body of every request sent and when its answer
// began. It reads no header.
func (r *Recorder) Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &transport{rt: rt}
}

type transport struct{ rt http.RoundTripper }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	x, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if x == nil {
		return t.rt.RoundTrip(req)
	}
	var body []byte
	if req.GetBody != nil {
		if rc, err := req.GetBody(); err == nil {
			body, _ = io.ReadAll(rc)
			rc.Close()
		}
	}
	x.mu.Lock()
	x.tries++
	x.body = body
	x.mu.Unlock()
	resp, err := t.rt.RoundTrip(req)
	x.mu.Lock()
	x.head = time.Now()
	x.mu.Unlock()
	return resp, err
}

// Model returns m with its calls recorded. It keeps what m can do besides Complete
// (hippocam.StreamModel, hippocam.RequestCounter).
func (r *Recorder) Model(m hippocam.Model) hippocam.Model {
	base := &model{r: r, m: m}
	sm, stream := m.(hippocam.StreamModel)
	rc, count := m.(hippocam.RequestCounter)
	switch {
	case stream && count:
		return &streamCountModel{streamModel{base, sm}, rc}
	case stream:
		return &streamModel{base, sm}
	case count:
		return &countModel{base, rc}
	}
	return base
}

type model struct {
	r *Recorder
	m hippocam.Model
}

func (x *model) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	ex := &exchange{}
	began := time.Now()
	resp, err := x.m.Complete(context.WithValue(ctx, exchangeKey{}, ex), req)
	x.r.record(ctx, req, ex, began, time.Time{}, false, resp, err)
	return resp, err
}

type streamModel struct {
	*model
	sm hippocam.StreamModel
}

func (x *streamModel) CompleteStream(ctx context.Context, req *hippocam.Request, fn func(string) error) (*hippocam.Response, error) {
	ex := &exchange{}
	began := time.Now()
	var first time.Time
	resp, err := x.sm.CompleteStream(context.WithValue(ctx, exchangeKey{}, ex), req, func(text string) error {
		if first.IsZero() && text != "" {
			first = time.Now()
		}
		return fn(text)
	})
	x.r.record(ctx, req, ex, began, first, true, resp, err)
	return resp, err
}

type countModel struct {
	*model
	rc hippocam.RequestCounter
}

func (x *countModel) RequestTokens(t hippocam.Tokenizer, req *hippocam.Request) int {
	return x.rc.RequestTokens(t, req)
}

type streamCountModel struct {
	streamModel
	rc hippocam.RequestCounter
}

func (x *streamCountModel) RequestTokens(t hippocam.Tokenizer, req *hippocam.Request) int {
	return x.rc.RequestTokens(t, req)
}

// record queues the line of one call; a call made with a hippocam.CallNote waits for the
// caller's judgement of its answer.
func (r *Recorder) record(ctx context.Context, req *hippocam.Request, ex *exchange, began, first time.Time, stream bool, resp *hippocam.Response, err error) {
	end := time.Now()
	tenant, session, _ := hippocam.CallSession(ctx)
	role := hippocam.CallAgent
	if req != nil && req.Role != "" {
		role = req.Role
	}
	ex.mu.Lock()
	e := &entry{body: ex.body, line: Line{
		Time: began.UTC(), Tenant: tenant, Session: session, Role: role, Attempt: 1, Tries: ex.tries, Stream: stream,
		LatencyMS: ms(end.Sub(began)),
	}}
	if !ex.head.IsZero() {
		e.line.TTFBMS = ms(ex.head.Sub(began))
	}
	ex.mu.Unlock()
	if !first.IsZero() {
		e.line.FirstTextMS = ms(first.Sub(began))
	}
	if err != nil {
		e.line.Error = err.Error()
	} else if resp != nil {
		e.resp = resp
		e.line.Usage = resp.Usage
	}
	path := r.Path(tenant, session)
	queue := func() {
		if !r.send(op{path: path, entry: e}, false) {
			r.fail("queue", errors.New("the queue is full or the recorder closed"))
		}
	}
	note := hippocam.CallNoteOf(ctx)
	if note == nil {
		queue()
		return
	}
	note.Hold(func(n *hippocam.CallNote) {
		e.line.Attempt = n.Attempt
		if err == nil {
			e.line.Problems = n.Problems()
			if n.Case != nil {
				e.cas = n.Case()
			}
		}
		queue()
	})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
