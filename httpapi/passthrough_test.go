package httpapi_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/tokenizer"
)

// newPassServer returns Hippocam with its other /v1 routes passed through to pt's upstream.
func newPassServer(t *testing.T, pt *httpapi.PassThrough, keys map[string]string) *httptest.Server {
	t.Helper()
	return newPassServerLog(t, pt, keys, nil)
}

// newPassServerLog is newPassServer logging to log (nil: nowhere).
func newPassServerLog(t *testing.T, pt *httpapi.PassThrough, keys map[string]string, log *slog.Logger) *httptest.Server {
	t.Helper()
	model, err := openai.New(openai.Config{BaseURL: pt.BaseURL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.ForWindow(8000), model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: inmem.New(), Upstream: model, PassThrough: pt, Keys: keys, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

// received is what the upstream received.
type received struct {
	method, path, query, body string
	header                    http.Header
}

// A route Hippocam does not serve goes to the upstream as it came (method, path under the base
// URL, query, body, headers), with the client's credentials when Hippocam has no keys and its
// own upstream key in place of a tenant key; the upstream's status, headers and body come back.
func TestPassThrough(t *testing.T) {
	got := make(chan received, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{r.Method, r.URL.Path, r.URL.RawQuery, string(b), r.Header.Clone()}
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	t.Cleanup(up.Close)
	for _, tc := range []struct {
		name      string
		base      string
		anthropic bool
		keys      map[string]string
		path      string
		sent      []string // header pairs the client sends
		wantPath  string
		want      []string // header pairs the upstream must get ("" value: absent)
	}{
		{name: "OKClientKey", base: up.URL + "/v1", path: "/v1/embeddings?user=a", sent: []string{"Authorization", "Bearer client-key", "X-Custom", "c"},
			wantPath: "/v1/embeddings", want: []string{"Authorization", "Bearer client-key", "X-Custom", "c", httpapi.SessionHeader, ""}},
		{name: "OKNoClientKey", base: up.URL + "/openai/v1", path: "/v1/files/file-1/content?x=1", wantPath: "/openai/v1/files/file-1/content",
			want: []string{"Authorization", "Bearer upstream-key"}},
		{name: "OKTenantKey", base: up.URL + "/v1", keys: map[string]string{"tenant-key": "t"}, path: "/v1/moderations?x=1",
			sent: []string{"Authorization", "Bearer tenant-key"}, wantPath: "/v1/moderations", want: []string{"Authorization", "Bearer upstream-key"}},
		{name: "OKAnthropicTenantKey", base: up.URL, anthropic: true, keys: map[string]string{"tenant-key": "t"}, path: "/v1/models/claude-x?x=1",
			sent: []string{"X-Api-Key", "tenant-key"}, wantPath: "/v1/models/claude-x",
			want: []string{"X-Api-Key", "upstream-key", "Anthropic-Version", "2023-06-01", "Authorization", ""}},
		{name: "OKAnthropicClientKey", base: up.URL, anthropic: true, path: "/v1/models/claude-x?x=1",
			sent: []string{"X-Api-Key", "client-key", "Anthropic-Version", "2024-01-01"}, wantPath: "/v1/models/claude-x",
			want: []string{"X-Api-Key", "client-key", "Anthropic-Version", "2024-01-01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newPassServer(t, &httpapi.PassThrough{BaseURL: tc.base, Anthropic: tc.anthropic, APIKey: "upstream-key"}, tc.keys)
			method := http.MethodPost
			if strings.Contains(tc.path, "/models/") {
				method = http.MethodGet
			}
			req, _ := http.NewRequest(method, hs.URL+tc.path, strings.NewReader(`{"input":"x"}`))
			req.Header.Set(httpapi.SessionHeader, "s")
			for i := 0; i+1 < len(tc.sent); i += 2 {
				req.Header.Set(tc.sent[i], tc.sent[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Upstream") != "yes" || string(body) != `{"object":"list","data":[]}` {
				t.Fatalf("reply: %d %v %s", resp.StatusCode, resp.Header, body)
			}
			s := <-got
			wantBody := `{"input":"x"}`
			if method == http.MethodGet {
				wantBody = s.body // a GET's body is the client's business
			}
			if s.method != method || s.path != tc.wantPath || s.query != "x=1" && s.query != "user=a" || s.body != wantBody {
				t.Fatalf("upstream got %s %s?%s %q", s.method, s.path, s.query, s.body)
			}
			for i := 0; i+1 < len(tc.want); i += 2 {
				if v := s.header.Get(tc.want[i]); v != tc.want[i+1] {
					t.Errorf("upstream header %s = %q, want %q", tc.want[i], v, tc.want[i+1])
				}
			}
		})
	}
}

// Bodies stream both ways: the upstream reads the start of the request body and answers its
// first event before the client has sent the rest, and the client reads that event before it
// sends the rest.
func TestPassThroughStreams(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).EnableFullDuplex()
		first := make([]byte, 5)
		if _, err := io.ReadFull(r.Body, first); err != nil {
			t.Errorf("upstream: %v", err)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: got "+string(first)+"\n\n")
		w.(http.Flusher).Flush()
		done := make(chan string, 1)
		go func() { rest, _ := io.ReadAll(r.Body); done <- string(rest) }()
		select {
		case rest := <-done:
			io.WriteString(w, "data: got "+rest+"\n\n")
		case <-time.After(5 * time.Second): // the rest never came: fail, do not hang
			io.WriteString(w, "data: the rest of the body never came\n\n")
		}
	}))
	t.Cleanup(up.Close)
	hs := newPassServer(t, &httpapi.PassThrough{BaseURL: up.URL + "/v1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	go func() { <-ctx.Done(); pw.CloseWithError(ctx.Err()) }() // a stuck body fails the test, not hangs it
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/audio/speech", pr)
	go io.WriteString(pw, "part1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer before the whole body was sent: %v", err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	if err != nil || line != "data: got part1\n" {
		t.Fatalf("first event %q, %v", line, err)
	}
	io.WriteString(pw, "part2")
	pw.Close()
	rest, _ := io.ReadAll(rd)
	if string(rest) != "\ndata: got part2\n\n" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("rest %q (%s)", rest, resp.Header.Get("Content-Type"))
	}
}

// Without a pass-through, or with an upstream that cannot be reached, the route fails in
// OpenAI's error JSON (404 and 502); a path of Hippocam's own routes with another method stays
// a 405.
func TestPassThroughFailures(t *testing.T) {
	s := newServer(t, 8000, nil)
	if r := s.do(t, "POST", "/v1/embeddings", "", "", []byte(`{}`)); r.status != 404 || !strings.Contains(string(r.body), `"error"`) {
		t.Errorf("no pass-through: %d %s, want 404", r.status, r.body)
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	hs := newPassServer(t, &httpapi.PassThrough{BaseURL: dead.URL + "/v1"}, nil)
	for _, c := range []struct {
		method, path string
		status       int
	}{{"POST", "/v1/embeddings", 502}, {"GET", "/v1/chat/completions", 405}, {"GET", "/v1/responses/input_tokens", 405}, {"GET", "/v1/responses/compact", 405}} {
		req, _ := http.NewRequest(c.method, hs.URL+c.path, strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(body), `"error"`) {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, resp.StatusCode, body, c.status)
		}
	}
}

// An upstream's refusal of a passed-through request reaches the client as it came, and is a log
// line like Hippocam's own refusals.
func TestPassThroughRefusalLogged(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"message":"no such file"}}`)
	}))
	t.Cleanup(up.Close)
	logs := &syncBuffer{}
	hs := newPassServerLog(t, &httpapi.PassThrough{BaseURL: up.URL + "/v1"}, nil, slog.New(slog.NewJSONHandler(logs, nil)))
	resp, err := http.Get(hs.URL + "/v1/files/nope")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(body), "no such file") {
		t.Fatalf("got %d %s, want the upstream's 404", resp.StatusCode, body)
	}
	// The line is written once the answer has gone out: give the handler a moment to finish.
	var line string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if line = logs.String(); line != "" {
			break
		}
	}
	if !strings.Contains(line, `"msg":"request refused"`) || !strings.Contains(line, `"cause":"upstream_404"`) ||
		!strings.Contains(line, `"path":"/v1/files/nope"`) || !strings.Contains(line, `"route":"passthrough"`) {
		t.Errorf("log %q: want a refusal line with cause upstream_404, the path and the route", line)
	}
}
