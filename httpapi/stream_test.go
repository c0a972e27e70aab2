package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// gatedModel is the simulated model, in process, whose main-model calls can be held at a gate
// once their text has streamed: while a call waits there the step has not committed. JANUS and
// the other roles pass straight through.
type gatedModel struct {
	inner *sim.InProcess
	gated atomic.Bool
	// held receives the context of a main call that waits at the gate; release lets it go,
	// failing it with the error sent (nil: it returns its answer).
	held    chan context.Context
	release chan error
	// input is the input tokens of the latest main-model request, as the engine counts them.
	input atomic.Int64
}

var _ hippocam.StreamModel = (*gatedModel)(nil)

func newGatedModel() *gatedModel {
	return &gatedModel{inner: sim.New(tokenizer.MustDefault()).InProcess(), held: make(chan context.Context), release: make(chan error)}
}

func (g *gatedModel) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	return g.CompleteStream(ctx, req, func(string) error { return nil })
}

func (g *gatedModel) CompleteStream(ctx context.Context, req *hippocam.Request, fn func(string) error) (*hippocam.Response, error) {
	if req.Role == hippocam.CallAgent {
		g.input.Store(int64(hippocam.RequestTokens(tokenizer.MustDefault(), req.Messages, req.Tools)))
	}
	resp, err := g.inner.CompleteStream(ctx, req, fn)
	if err != nil || req.Role != hippocam.CallAgent || !g.gated.Load() {
		return resp, err
	}
	select {
	case g.held <- ctx:
	case <-ctx.Done():
		return nil, hippocam.Errorf(hippocam.EUNAVAILABLE, "main call cancelled: %v", ctx.Err())
	}
	select {
	case err := <-g.release:
		if err != nil {
			return nil, err
		}
		return resp, nil
	case <-ctx.Done():
		return nil, hippocam.Errorf(hippocam.EUNAVAILABLE, "main call cancelled: %v", ctx.Err())
	}
}

// streamServer is a proxy over the gated model, in memory, on a listener whose connections
// can be watched; sendBuf, when not zero, is the send buffer of every accepted connection.
type streamServer struct {
	*httptest.Server
	model   *gatedModel
	metrics *httpapi.Metrics
	ln      *watchListener
}

func newStreamServer(t *testing.T, window, sendBuf int, edit func(*httpapi.Config)) *streamServer {
	t.Helper()
	m := newGatedModel()
	ecfg := engine.ForWindow(window)
	e, err := engine.New(ecfg, m, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	metrics := httpapi.NewMetrics()
	cfg := httpapi.Config{Engine: e, Store: inmem.New(), Metrics: metrics}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ln := &watchListener{Listener: ts.Listener, gone: make(chan struct{}, 16), sendBuf: sendBuf}
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return &streamServer{Server: ts, model: m, metrics: metrics, ln: ln}
}

// watchListener reports when a client closed its connection (the server read its end), and
// can give accepted connections a small send buffer.
type watchListener struct {
	net.Listener
	gone    chan struct{}
	sendBuf int
}

func (l *watchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok && l.sendBuf > 0 {
		tc.SetWriteBuffer(l.sendBuf)
	}
	return &watchConn{Conn: c, gone: l.gone}, nil
}

type watchConn struct {
	net.Conn
	gone chan struct{}
}

func (c *watchConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err == io.EOF {
		select {
		case c.gone <- struct{}{}:
		default:
		}
	}
	return n, err
}

// A streamed request in each format: the body, and how to read its events.
type streamCase struct {
	name, path string
	body       func(text string) string
	// text returns the answer text an event carries; end reports the format's success
	// terminator; failed its error event.
	text   func(ev map[string]any) (string, bool)
	end    func(data string, ev map[string]any) bool
	failed func(ev map[string]any) bool
}

var streamCases = []streamCase{
	{
		name: "Chat", path: "/v1/chat/completions",
		body: func(text string) string {
			return `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":` + quote(text) + `}]}`
		},
		text: func(ev map[string]any) (string, bool) {
			choices, _ := ev["choices"].([]any)
			if len(choices) == 0 {
				return "", false
			}
			delta, _ := choices[0].(map[string]any)["delta"].(map[string]any)
			s, _ := delta["content"].(string)
			return s, s != ""
		},
		end:    func(data string, _ map[string]any) bool { return data == "[DONE]" },
		failed: func(ev map[string]any) bool { return ev["error"] != nil },
	},
	{
		name: "Responses", path: "/v1/responses",
		body: func(text string) string { return `{"model":"m","stream":true,"input":` + quote(text) + `}` },
		text: func(ev map[string]any) (string, bool) {
			s, _ := ev["delta"].(string)
			return s, ev["type"] == "response.output_text.delta"
		},
		end: func(_ string, ev map[string]any) bool { return ev["type"] == "response.completed" },
		failed: func(ev map[string]any) bool {
			r, _ := ev["response"].(map[string]any)
			e, _ := r["error"].(map[string]any)
			return ev["type"] == "response.failed" && r["status"] == "failed" && e["code"] != nil && e["message"] != nil
		},
	},
	{
		name: "Messages", path: "/v1/messages",
		body: func(text string) string {
			return `{"model":"m","max_tokens":512,"stream":true,"messages":[{"role":"user","content":` + quote(text) + `}]}`
		},
		text: func(ev map[string]any) (string, bool) {
			d, _ := ev["delta"].(map[string]any)
			s, _ := d["text"].(string)
			return s, ev["type"] == "content_block_delta" && d["type"] == "text_delta"
		},
		end:    func(_ string, ev map[string]any) bool { return ev["type"] == "message_stop" },
		failed: func(ev map[string]any) bool { return ev["type"] == "error" },
	},
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// eventReader reads the data of server-sent events one at a time.
type eventReader struct {
	t  *testing.T
	br *bufio.Reader
}

// next returns the next event's data and its JSON; ok is false at the end of the body.
func (r *eventReader) next() (string, map[string]any, bool) {
	r.t.Helper()
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			return "", nil, false
		}
		data, found := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: ")
		if !found {
			continue
		}
		var ev map[string]any
		if data != "[DONE]" {
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				r.t.Fatalf("event %q: %v", data, err)
			}
		}
		return data, ev, true
	}
}

// post sends a request and returns the response once its headers arrived.
func (s *streamServer) post(t *testing.T, path, session, body string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set(httpapi.SessionHeader, session)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (s *streamServer) status(t *testing.T, method, path string) int {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// longSay is an agent message whose answer is text of several pieces.
const longSay = "!say The first piece of a streamed answer reaches the client before the model has finished; the rest follows as it comes."

// In every format the first piece of text reaches the client while the main model is still
// answering, before anything is committed; the step then commits and the stream ends with the
// format's terminator, its pieces joined being the answer.
func TestStreamTextBeforeCommit(t *testing.T) {
	for _, tc := range streamCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStreamServer(t, 8000, 0, nil)
			s.model.gated.Store(true)
			session := "early-" + strings.ToLower(tc.name)
			resp := s.post(t, tc.path, session, tc.body(longSay))
			defer resp.Body.Close()
			<-s.model.held // the main call has streamed its text and waits: the step is not over
			if resp.StatusCode != 200 || resp.Header.Get(httpapi.SessionHeader) != session || resp.Header.Get(httpapi.EventHeader) != "created" {
				t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
			}
			r := &eventReader{t: t, br: bufio.NewReader(resp.Body)}
			var text strings.Builder
			for text.Len() == 0 {
				_, ev, ok := r.next()
				if !ok {
					t.Fatal("the stream ended before any text")
				}
				if piece, ok := tc.text(ev); ok {
					text.WriteString(piece)
				}
			}
			if st := s.status(t, "GET", "/api/sessions/"+session); st != http.StatusNotFound {
				t.Fatalf("GET session while its step runs: %d, want 404 (nothing committed yet)", st)
			}
			s.model.release <- nil
			ended := false
			for {
				data, ev, ok := r.next()
				if !ok {
					break
				}
				if piece, ok := tc.text(ev); ok {
					text.WriteString(piece)
				}
				if tc.failed(ev) {
					t.Fatalf("error event %s", data)
				}
				ended = ended || tc.end(data, ev)
			}
			if want := strings.TrimPrefix(longSay, "!say "); text.String() != want || !ended {
				t.Errorf("text %q (terminated %v), want %q", text.String(), ended, want)
			}
			if st := s.status(t, "GET", "/api/sessions/"+session); st != http.StatusOK {
				t.Errorf("GET session after the stream: %d", st)
			}
		})
	}
}

// A step that fails after its text went out ends the stream with the format's error event and
// no terminator; nothing was kept, so the client's retry runs the step again.
func TestStreamFailureAfterText(t *testing.T) {
	for _, tc := range streamCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStreamServer(t, 8000, 0, nil)
			s.model.gated.Store(true)
			session := "broken-" + strings.ToLower(tc.name)
			resp := s.post(t, tc.path, session, tc.body(longSay))
			defer resp.Body.Close()
			<-s.model.held
			s.model.release <- hippocam.Errorf(hippocam.EUNAVAILABLE, "the upstream broke off")
			r := &eventReader{t: t, br: bufio.NewReader(resp.Body)}
			var sawText, failed, ended bool
			for {
				data, ev, ok := r.next()
				if !ok {
					break
				}
				_, isText := tc.text(ev)
				sawText = sawText || isText
				failed = failed || tc.failed(ev)
				ended = ended || tc.end(data, ev)
			}
			if !sawText || !failed || ended {
				t.Fatalf("text %v, error event %v, terminator %v; want text, then an error event and no terminator", sawText, failed, ended)
			}
			if st := s.status(t, "GET", "/api/sessions/"+session); st != http.StatusNotFound {
				t.Fatalf("GET session after the failed step: %d, want 404", st)
			}
			s.model.gated.Store(false)
			retry := s.post(t, tc.path, session, tc.body(longSay), "X-Stainless-Retry-Count", "1")
			text, ended := readStream(t, tc, retry)
			if want := strings.TrimPrefix(longSay, "!say "); text != want || !ended || retry.Header.Get(httpapi.EventHeader) != "created" {
				t.Errorf("retry: text %q, terminated %v, event %q", text, ended, retry.Header.Get(httpapi.EventHeader))
			}
		})
	}
}

// readStream reads a whole stream: its text and whether it ended with the terminator.
func readStream(t *testing.T, tc streamCase, resp *http.Response) (string, bool) {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	r := &eventReader{t: t, br: bufio.NewReader(resp.Body)}
	var text strings.Builder
	ended := false
	for {
		data, ev, ok := r.next()
		if !ok {
			return text.String(), ended
		}
		if piece, ok := tc.text(ev); ok {
			text.WriteString(piece)
		}
		if tc.failed(ev) {
			t.Fatalf("error event %s", data)
		}
		ended = ended || tc.end(data, ev)
	}
}

// A client that goes away mid-stream does not cancel the step: it is committed, the client's
// transport retry gets the stored answer, and the session goes on from it.
func TestStreamClientGone(t *testing.T) {
	tc := streamCases[0]
	s := newStreamServer(t, 8000, 0, nil)
	s.model.gated.Store(true)
	resp := s.post(t, tc.path, "gone", tc.body(longSay))
	ctx := <-s.model.held
	r := &eventReader{t: t, br: bufio.NewReader(resp.Body)}
	for {
		if _, ev, ok := r.next(); !ok {
			t.Fatal("no text before the end")
		} else if _, ok := tc.text(ev); ok {
			break
		}
	}
	resp.Body.Close() // the client hangs up in the middle of the answer
	<-s.ln.gone       // the server has seen it
	select {
	case <-ctx.Done():
		t.Fatal("the step was cancelled when its client went away")
	case <-time.After(100 * time.Millisecond):
	}
	s.model.release <- nil
	s.model.gated.Store(false)
	retry := s.post(t, tc.path, "gone", tc.body(longSay), "X-Stainless-Retry-Count", "1")
	text, ended := readStream(t, tc, retry)
	if want := strings.TrimPrefix(longSay, "!say "); text != want || !ended || retry.Header.Get(httpapi.EventHeader) != "retried" {
		t.Fatalf("retry: text %q, terminated %v, event %q; want the stored answer", text, ended, retry.Header.Get(httpapi.EventHeader))
	}
	next := `{"model":"m","stream":true,"messages":[{"role":"user","content":` + quote(longSay) + `},{"role":"assistant","content":` + quote(text) + `},{"role":"user","content":"!say next"}]}`
	resp = s.post(t, tc.path, "gone", next)
	if text, ended := readStream(t, tc, resp); text != "next" || !ended || resp.Header.Get(httpapi.EventHeader) != "continued" {
		t.Errorf("next request: %q, terminated %v, event %q", text, ended, resp.Header.Get(httpapi.EventHeader))
	}
}

// A DELETE that arrives while a streamed step runs waits for it, then removes the session: the
// stream ends whole (its step was committed first) and nothing brings the session back.
func TestStreamDeleteDuringStream(t *testing.T) {
	tc := streamCases[0]
	s := newStreamServer(t, 8000, 0, nil)
	s.model.gated.Store(true)
	resp := s.post(t, tc.path, "doomed", tc.body(longSay))
	<-s.model.held
	r := &eventReader{t: t, br: bufio.NewReader(resp.Body)}
	for {
		if _, ev, ok := r.next(); !ok {
			t.Fatal("no text before the end")
		} else if _, ok := tc.text(ev); ok {
			break
		}
	}
	deleted := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("DELETE", s.URL+"/api/sessions/doomed", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			deleted <- 0
			return
		}
		resp.Body.Close()
		deleted <- resp.StatusCode
	}()
	s.model.release <- nil
	if st := <-deleted; st != http.StatusNoContent {
		t.Fatalf("DELETE during the stream: %d", st)
	}
	var failed, ended bool
	for {
		data, ev, ok := r.next()
		if !ok {
			break
		}
		failed, ended = failed || tc.failed(ev), ended || tc.end(data, ev)
	}
	resp.Body.Close()
	if ended == failed {
		t.Errorf("terminator %v, error event %v: want the stream to end one way", ended, failed)
	}
	for i := 0; i < 2; i++ {
		if st := s.status(t, "GET", "/api/sessions/doomed"); st != http.StatusNotFound {
			t.Fatalf("GET after DELETE: %d, want 404", st)
		}
		if ids := sessionIDs(t, s); strings.Contains(ids, "doomed") {
			t.Fatalf("sessions after DELETE: %s", ids)
		}
		time.Sleep(50 * time.Millisecond) // whatever the stream's end still did
	}
}

func sessionIDs(t *testing.T, s *streamServer) string {
	t.Helper()
	resp, err := http.Get(s.URL + "/api/sessions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// rawStream sends a streamed chat request over a raw TCP connection with a small receive
// buffer, and reads nothing.
func rawStream(t *testing.T, s *streamServer, session, content string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	body := streamCases[0].body(content)
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		httpapi.SessionHeader, session, len(body), body)
	return conn
}

// waitFor polls cond until it holds; the bound only keeps a broken build from hanging.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// bigPad asks for an answer far larger than the socket buffers between the proxy and a client
// that does not read.
const bigPad = "!say big\n!pad 40000"

// A client that sends a streamed request and never reads holds nothing: the step commits, and
// a request that forks the session and a DELETE of it both complete while the answer still
// waits to be written. The stream, read at last, is whole.
func TestStreamSlowReader(t *testing.T) {
	s := newStreamServer(t, 128000, 4096, nil)
	conn := rawStream(t, s, "slow", bigPad)
	waitFor(t, "the step to commit", func() bool { return s.status(t, "GET", "/api/sessions/slow") == http.StatusOK })

	fork := `{"model":"m","messages":[{"role":"user","content":` + quote(bigPad) + `},{"role":"assistant","content":"another answer"},{"role":"user","content":"!say branch"}]}`
	resp := s.post(t, "/v1/chat/completions", "slow", fork)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(httpapi.EventHeader) != "forked" {
		t.Fatalf("fork while the stream is stuck: %d %q %s", resp.StatusCode, resp.Header.Get(httpapi.EventHeader), b)
	}
	if st := s.status(t, "DELETE", "/api/sessions/slow"); st != http.StatusNoContent {
		t.Fatalf("DELETE while the stream is stuck: %d", st)
	}

	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("reading the stream at last: %v", err)
	}
	if !bytes.Contains(got, []byte("data: [DONE]")) {
		t.Fatalf("the stream (%d bytes) did not end with [DONE]", len(got))
	}
	if len(got) < 256<<10 { // the socket buffers hold some 16 KiB
		t.Fatalf("the stream is %d bytes, too small to have filled the buffers", len(got))
	}
	if st := s.status(t, "GET", "/api/sessions/slow"); st != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d", st)
	}
}

// A client that never reads is cut off once a write has waited WriteTimeout; its step was
// committed all the same.
func TestStreamWriteTimeout(t *testing.T) {
	s := newStreamServer(t, 128000, 4096, func(c *httpapi.Config) { c.WriteTimeout = 200 * time.Millisecond })
	conn := rawStream(t, s, "stuck", bigPad)
	waitFor(t, "the stream to be cut off", func() bool { return metric(t, s, "hippocam_stream_cut_offs_total") == "1" })
	if st := s.status(t, "GET", "/api/sessions/stuck"); st != http.StatusOK {
		t.Fatalf("GET session: %d, want the committed session", st)
	}
	got, _ := io.ReadAll(conn)
	if bytes.Contains(got, []byte("[DONE]")) || !bytes.Contains(got, []byte("data: ")) {
		t.Errorf("the cut-off stream (%d bytes) should hold some events and no [DONE]", len(got))
	}
}

// metric returns the value of an unlabelled metric.
func metric(t *testing.T, s *streamServer, name string) string {
	t.Helper()
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return v
		}
	}
	return ""
}

// A Responses answer whose text streamed before it had an id is named by its position: its
// response id continues the conversation (previous_response_id) and its message item can be
// referred to (item_reference).
func TestStreamedResponseIDs(t *testing.T) {
	tc := streamCases[1]
	s := newStreamServer(t, 8000, 0, nil)
	resp := s.post(t, tc.path, "", tc.body("!say first answer"))
	r := &eventReader{t: t, br: bufio.NewReader(resp.Body)}
	var id, item string
	for {
		_, ev, ok := r.next()
		if !ok {
			break
		}
		if ev["type"] == "response.created" {
			id, _ = ev["response"].(map[string]any)["id"].(string)
		}
		if ev["type"] == "response.output_item.added" {
			item, _ = ev["item"].(map[string]any)["id"].(string)
		}
		if ev["type"] == "response.completed" {
			if done, _ := ev["response"].(map[string]any)["id"].(string); done != id {
				t.Fatalf("response.completed names %q, response.created %q", done, id)
			}
		}
	}
	resp.Body.Close()
	if !strings.Contains(id, ".@") || item == "" {
		t.Fatalf("response id %q, item %q: want a position key", id, item)
	}
	next := s.post(t, tc.path, "", `{"model":"m","previous_response_id":"`+id+`","input":"!say second"}`)
	b, _ := io.ReadAll(next.Body)
	next.Body.Close()
	if next.StatusCode != 200 || next.Header.Get(httpapi.EventHeader) != "continued" || !strings.Contains(string(b), "second") {
		t.Fatalf("previous_response_id: %d %q %s", next.StatusCode, next.Header.Get(httpapi.EventHeader), b)
	}
	ref := `{"model":"m","input":[{"role":"user","content":"!say first answer"},{"type":"item_reference","id":"` + item + `"},{"role":"user","content":"!say third"}]}`
	again := s.post(t, tc.path, "", ref)
	b, _ = io.ReadAll(again.Body)
	again.Body.Close()
	if again.StatusCode != 200 || !strings.Contains(string(b), "third") {
		t.Fatalf("item_reference: %d %s", again.StatusCode, b)
	}
}

// A streamed Messages answer opens with message_start reporting the input tokens of the request
// the main model was sent, counted before its text streams (the provider's own count comes
// with message_delta, once the answer is known; the simulated model counts as the engine does).
func TestStreamMessageStartInputTokens(t *testing.T) {
	s := newStreamServer(t, 8000, 0, nil)
	s.model.gated.Store(true)
	resp := s.post(t, "/v1/messages", "start-usage", `{"model":"m","max_tokens":512,"stream":true,"messages":[{"role":"user","content":`+quote(longSay)+`}]}`)
	defer resp.Body.Close()
	<-s.model.held // the text has streamed; the step is not over
	want := s.model.input.Load()
	r := &eventReader{t: t, br: bufio.NewReader(resp.Body)}
	data, ev, ok := r.next()
	if !ok || ev["type"] != "message_start" {
		t.Fatalf("first event %s, want message_start", data)
	}
	usage := ev["message"].(map[string]any)["usage"].(map[string]any)
	if got := usage["input_tokens"]; want == 0 || got != float64(want) {
		t.Errorf("message_start reports input_tokens %v, want the main request's %d: %s", got, want, data)
	}
	s.model.release <- nil
	for {
		data, ev, ok := r.next()
		if !ok {
			t.Fatal("the stream ended without message_delta")
		}
		if ev["type"] != "message_delta" {
			continue
		}
		u := ev["usage"].(map[string]any)
		if got := u["input_tokens"].(float64) + u["cache_read_input_tokens"].(float64); got != float64(want) {
			t.Errorf("message_delta reports %v input tokens, message_start %d: %s", got, want, data)
		}
		break
	}
}
