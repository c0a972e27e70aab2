package httpapi_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// cutWriter passes on a stream of the simulated model but its end: the usage chunk and [DONE]
// of a chat stream, message_stop of a Messages stream. With abort the connection then breaks
// off; without, the body ends cleanly.
type cutWriter struct {
	http.ResponseWriter
	abort bool
	cut   bool
}

func (c *cutWriter) Write(b []byte) (int, error) {
	if c.cut || bytes.Contains(b, []byte("[DONE]")) || bytes.Contains(b, []byte(`"choices":[],`)) || bytes.Contains(b, []byte("message_stop")) {
		c.cut = true
		if c.abort {
			panic(http.ErrAbortHandler)
		}
		return len(b), nil
	}
	return c.ResponseWriter.Write(b)
}

func (c *cutWriter) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

// cutServer is a proxy whose upstream (of the given format) cuts every streamed main-model
// answer short; retries are off.
func cutServer(t *testing.T, format string, abort bool) *httptest.Server {
	t.Helper()
	h := sim.New(tokenizer.MustDefault()).Handler()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(hippocam.RoleHeader) == string(hippocam.CallAgent) {
			w = &cutWriter{ResponseWriter: w, abort: abort}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	var model hippocam.Model
	var err error
	if format == "openai" {
		cfg := openai.DefaultConfig()
		cfg.BaseURL, cfg.Model, cfg.MaxRetries = up.URL+"/v1", "hippocam-sim", 0
		model, err = openai.New(cfg)
	} else {
		cfg := anthropic.DefaultConfig()
		cfg.BaseURL, cfg.Model, cfg.MaxRetries = up.URL, "hippocam-sim", 0
		model, err = anthropic.New(cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.ForWindow(8000), model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: inmem.New()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

// An upstream stream cut short after the answer's text (its end never came, the body ended or
// the connection broke) ends the client's stream with the format's error event, never its
// clean end; nothing of the round is kept.
func TestStreamUpstreamCut(t *testing.T) {
	say := "!say a first part of the answer that reaches the client\n!call read_file {\"path\":\"a.txt\"}"
	for _, upstream := range []string{"openai", "anthropic"} {
		for _, abort := range []bool{false, true} {
			how := "Closed"
			if abort {
				how = "Broken"
			}
			for _, tc := range streamCases {
				t.Run(upstream+"/"+how+"/"+tc.name, func(t *testing.T) {
					ts := cutServer(t, upstream, abort)
					req, _ := http.NewRequest("POST", ts.URL+tc.path, strings.NewReader(tc.body(say)))
					req.Header.Set(httpapi.SessionHeader, "cut")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					var raw bytes.Buffer
					r := &eventReader{t: t, br: bufio.NewReader(io.TeeReader(resp.Body, &raw))}
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
					if resp.StatusCode != 200 || !sawText || !failed || ended {
						t.Fatalf("status %d, text %v, error event %v, clean end %v; want text then the error event\n%s", resp.StatusCode, sawText, failed, ended, raw.String())
					}
					if tc.name == "Messages" && !strings.Contains(raw.String(), "event: error\n") {
						t.Errorf("no `event: error` line in\n%s", raw.String())
					}
					got, err := http.Get(ts.URL + "/api/sessions/cut")
					if err != nil {
						t.Fatal(err)
					}
					got.Body.Close()
					if got.StatusCode != http.StatusNotFound {
						t.Errorf("GET the session after the cut round: %d, want 404", got.StatusCode)
					}
				})
			}
		}
	}
}

// An error event the upstream sends mid-stream keeps its meaning: an Anthropic upstream's
// overloaded_error after the text reaches a Messages client as event: error of type
// overloaded_error (on which Claude Code backs off as for a 529), and a chat client as an error
// chunk with OpenAI's server_is_overloaded.
func TestStreamUpstreamErrorEvent(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get(hippocam.RoleHeader) != string(hippocam.CallAgent) {
			w.WriteHeader(500)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":3,"output_tokens":0}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Half an"}}`,
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		} {
			io.WriteString(w, "data: "+ev+"\n\n")
		}
	}))
	defer up.Close()
	cfg := anthropic.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.MaxRetries = up.URL, "m", 0
	model, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ecfg := engine.ForWindow(8000)
	e, err := engine.New(ecfg, model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: inmem.New()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	for _, tc := range []struct {
		path, body, want string
	}{
		{"/v1/messages", `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"type":"overloaded_error"`},
		{"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"code":"server_is_overloaded"`},
	} {
		resp, err := http.Post(ts.URL+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Contains(b, []byte("Half an")) || !bytes.Contains(b, []byte(tc.want)) {
			t.Errorf("%s: want the text, then an error event with %s:\n%s", tc.path, tc.want, b)
		}
	}
}
