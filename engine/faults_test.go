package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// faultyWire sits between the OpenAI client and the simulated model and breaks the HTTP attempts
// of one role as fault says, by attempt number (from 0): "" passes the attempt on.
type faultyWire struct {
	inner    http.RoundTripper
	role     hippocam.CallRole
	fault    func(n int) string
	mu       sync.Mutex
	attempts int
}

func (f *faultyWire) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get(hippocam.RoleHeader) != string(f.role) {
		return f.inner.RoundTrip(req)
	}
	f.mu.Lock()
	n := f.attempts
	f.attempts++
	f.mu.Unlock()
	answer := func(status int, contentType, body string) *http.Response {
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {contentType}}, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}
	}
	switch f.fault(n) {
	case "html": // a gateway's error page, with status 200
		return answer(200, "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>"), nil
	case "truncated": // the real answer, cut off mid-JSON
		resp, err := f.inner.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return answer(200, "application/json", string(b[:len(b)/2])), nil
	case "400":
		return answer(400, "application/json", `{"error":{"message":"Invalid 'messages': bad request","type":"invalid_request_error"}}`), nil
	case "500":
		return answer(500, "application/json", `{"error":{"message":"overloaded","type":"server_error"}}`), nil
	case "reset":
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return f.inner.RoundTrip(req)
}

func (f *faultyWire) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts
}

// wireSession is a session driven through the OpenAI client over a faulty wire.
type wireSession struct {
	t    *testing.T
	e    *engine.Engine
	st   hippocam.Store
	wire *faultyWire
	log  *bytes.Buffer
}

func newWireSession(t *testing.T, role hippocam.CallRole, fault func(n int) string) *wireSession {
	t.Helper()
	w := &faultyWire{inner: sim.New(tokenizer.MustDefault()).Transport(), role: role, fault: fault}
	client, err := openai.New(openai.Config{BaseURL: "http://sim.test/v1", Model: "sim", MaxRetries: 2,
		MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, HTTPClient: &http.Client{Transport: w}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	e, err := engine.New(gateWindow(8000), client, tokenizer.MustDefault(), slog.New(slog.NewJSONHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return &wireSession{t: t, e: e, st: inmem.New(), wire: w, log: &buf}
}

func (ws *wireSession) user(text string) (*engine.Result, error) {
	return ws.e.Advance(context.Background(), ws.st, "acme", "s1", engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: text}}})
}

func (ws *wireSession) mustUser(text string) *engine.Result {
	ws.t.Helper()
	res, err := ws.user(text)
	if err != nil {
		ws.t.Fatalf("user %q: %v", firstLine(text), err)
	}
	return res
}

func (ws *wireSession) stack() []string {
	ws.t.Helper()
	s, err := ws.st.Session(context.Background(), "acme", "s1")
	if err != nil {
		ws.t.Fatal(err)
	}
	return s.Stack.Labels()
}

// A JANUS call whose answer arrives unreadable (an HTML page with status 200, JSON cut off) is
// asked again by the engine; one refused with a retryable status, or whose connection broke, is
// repeated by the client. Either way the step's directive is applied in that step.
func TestJanusTransientFaults(t *testing.T) {
	for _, fault := range []string{"html", "truncated", "500", "reset"} {
		t.Run(fault, func(t *testing.T) {
			ws := newWireSession(t, hippocam.CallJanus, func(n int) string {
				if n == 0 {
					return fault
				}
				return ""
			})
			res := ws.mustUser("#open Read the exports | both exports are read\n!say reading")
			if res.JanusFailures != 0 || ws.wire.count() != 2 {
				t.Fatalf("JanusFailures = %d after %d attempts; want 0 after 2", res.JanusFailures, ws.wire.count())
			}
			if got := ws.stack(); len(got) != 1 || got[0] != "Read the exports" {
				t.Fatalf("stack %v, want the intent opened in the same step", got)
			}
		})
	}
}

// A JANUS call that still fails (unreadable every time, or refused with a 400, which is not
// retried) leaves the stack unchanged, is counted and logged with tenant and session, and loses
// no directive: the next call reviews the messages the failed one did not, and acts on them
// once.
func TestJanusFailureLosesNoDirective(t *testing.T) {
	for _, tt := range []struct {
		fault    string
		attempts int // JANUS attempts in the failing step
	}{
		{"html", 3},      // the first try and two retries by the engine
		{"truncated", 3}, // likewise
		{"400", 1},       // refused: neither the client nor the engine repeats it
	} {
		t.Run(tt.fault, func(t *testing.T) {
			ws := newWireSession(t, hippocam.CallJanus, func(n int) string {
				if n < tt.attempts {
					return tt.fault
				}
				return ""
			})
			res := ws.mustUser("#open Read the exports | both exports are read\n!say reading")
			if res.Answer.Content != "reading" {
				t.Fatalf("answer %q: the step must answer although JANUS failed", res.Answer.Content)
			}
			if res.JanusFailures != 1 || ws.wire.count() != tt.attempts {
				t.Fatalf("JanusFailures = %d after %d attempts; want 1 after %d", res.JanusFailures, ws.wire.count(), tt.attempts)
			}
			if got := ws.stack(); len(got) != 0 {
				t.Fatalf("stack %v after a failed JANUS call, want it unchanged (empty)", got)
			}
			checkFailureLogged(t, ws.log.String())

			res = ws.mustUser("!say next")
			if got := ws.stack(); len(got) != 1 || got[0] != "Read the exports" {
				t.Fatalf("stack %v: the next JANUS call must act on the directive the failed one missed", got)
			}
			if res.JanusFailures != 0 {
				t.Fatalf("JanusFailures = %d in the recovering step", res.JanusFailures)
			}
			// Acted on once: the directive is not reviewed again.
			res = ws.mustUser("!say again")
			if got := ws.stack(); len(got) != 1 || res.JanusFailures != 0 {
				t.Fatalf("stack %v, JanusFailures %d: the directive was applied twice", got, res.JanusFailures)
			}
		})
	}
}

// checkFailureLogged finds the warning about the failed JANUS call with its tenant and session.
func checkFailureLogged(t *testing.T, log string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if strings.HasPrefix(rec["msg"].(string), "intent maintenance failed") {
			if rec["tenant"] != "acme" || rec["session"] != "s1" || rec["error"] == nil {
				t.Fatalf("failure logged without tenant, session or error: %s", line)
			}
			return
		}
	}
	t.Fatalf("no warning about the failed JANUS call in the log:\n%s", log)
}

// A step that fails after model calls were made returns their usage with the error, so that the
// caller can record what was paid for; the session itself is unchanged.
func TestFailedStepUsage(t *testing.T) {
	// The main model refuses every call: the one started beside JANUS and the one made again
	// after JANUS's guidance.
	var refuse atomic.Bool
	ws := newWireSession(t, hippocam.CallAgent, func(n int) string {
		if refuse.Load() {
			return "400"
		}
		return ""
	})
	ws.mustUser("!say hello")
	refuse.Store(true)
	before, err := ws.st.Session(context.Background(), "acme", "s1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ws.user("#open Read the exports | both exports are read\n!say reading")
	if hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("err = %v, want the main model's 400 as EINVALID", err)
	}
	var se *openai.StatusError
	if !errors.As(err, &se) || se.Status != 400 {
		t.Fatalf("err = %v: the client's StatusError must stay reachable", err)
	}
	u := engine.UsageOf(err)
	if u[hippocam.CallJanus].Calls != 1 || u[hippocam.CallJanus].Input == 0 {
		t.Fatalf("usage of the failed step = %+v, want JANUS's call in it", u)
	}
	after, err := ws.st.Session(context.Background(), "acme", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version || len(after.Stack) != 0 {
		t.Fatal("a failed step changed the session")
	}
	if engine.UsageOf(errors.New("plain")) != nil {
		t.Fatal("UsageOf of an error without usage is not nil")
	}
}

// PRECIP's and PALIM's unreadable answers are asked again like JANUS's: one fault costs no
// consolidation.
func TestConsolidatorTransientFaults(t *testing.T) {
	for _, role := range []hippocam.CallRole{hippocam.CallPrecip, hippocam.CallPalim} {
		for _, fault := range []string{"html", "truncated"} {
			t.Run(string(role)+"/"+fault, func(t *testing.T) {
				ws := newWireSession(t, role, func(n int) string {
					if n == 0 {
						return fault
					}
					return ""
				})
				c := newConversation(t, ws.e)
				runFaultSession(t, c, role)
				s := c.session()
				if ws.wire.count() < 2 || (role == hippocam.CallPrecip && s.Consolidations.Intent != 4) || (role == hippocam.CallPalim && s.Consolidations.Prefix == 0) {
					t.Fatalf("%d attempts, consolidations %+v: the faulty answer was not asked again", ws.wire.count(), s.Consolidations)
				}
				c.checkLossless()
			})
		}
	}
}
