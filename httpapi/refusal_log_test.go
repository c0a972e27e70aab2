package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines returns the JSON log lines written so far.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// Every refused or failed request is one log line (tenant, session, route, status, cause, the
// reason given) and counts in hippocam_failures_total under its cause, whatever the cause:
// unknown routes, bad requests, bad keys, the upstream's refusals, cut streams, timeouts.
func TestFailuresAreLoggedAndCounted(t *testing.T) {
	var mode struct {
		sync.Mutex
		v string
	}
	h := sim.New(tokenizer.MustDefault()).Handler()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode.Lock()
		m := mode.v
		mode.Unlock()
		if r.Header.Get(hippocam.RoleHeader) == string(hippocam.CallAgent) {
			switch m {
			case "429":
				w.WriteHeader(429)
				io.WriteString(w, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
				return
			case "hang":
				io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
				return
			case "cut":
				w = &cutWriter{ResponseWriter: w}
			}
		}
		h.ServeHTTP(w, r)
	}))
	defer up.Close()
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.MaxRetries, cfg.Timeout = up.URL+"/v1", "hippocam-sim", 0, 300*time.Millisecond
	model, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.ForWindow(8000), model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	metrics := httpapi.NewMetrics()
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: inmem.New(), Metrics: metrics, Upstream: model,
		Keys: map[string]string{"key-a": "acme"}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	chat := func(text string, stream bool) string {
		return `{"model":"m","stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,"messages":[{"role":"user","content":` + quote(text) + `}]}`
	}
	for _, tc := range []struct {
		name, mode, method, path, key, body string
		status                              int
		route, cause                        string
	}{
		{"UnknownRoute", "", "POST", "/v1/embeddingz", "key-a", `{}`, 404, "unknown", "not_found"},
		{"WrongMethod", "", "GET", "/v1/chat/completions", "key-a", ``, 405, "unknown", "method"},
		{"BadRequest", "", "POST", "/v1/chat/completions", "key-a", `{"model":`, 400, "chat", "invalid"},
		{"BadKey", "", "POST", "/v1/messages", "nope", `{}`, 401, "messages", "unauthorized"},
		{"Upstream429", "429", "POST", "/v1/chat/completions", "key-a", chat("!say hi", false), 429, "chat", "upstream_429"},
		{"Timeout", "hang", "POST", "/v1/chat/completions", "key-a", chat("!say hi", false), 504, "chat", "timeout"},
		{"StreamCut", "cut", "POST", "/v1/chat/completions", "key-a", chat("!say a long enough answer\n!call f {}", true), 200, "chat", "stream_cut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mode.Lock()
			mode.v = tc.mode
			mode.Unlock()
			before := len(logs.lines(t))
			req, _ := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+tc.key)
			req.Header.Set(httpapi.SessionHeader, "s-"+strings.ToLower(tc.name))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			var got []map[string]any
			for _, l := range logs.lines(t)[before:] {
				if l["msg"] == "request refused" {
					got = append(got, l)
				}
			}
			tenant := "acme"
			if tc.cause == "unauthorized" {
				tenant = ""
			}
			if len(got) != 1 || got[0]["route"] != tc.route || got[0]["cause"] != tc.cause || got[0]["tenant"] != tenant ||
				got[0]["session"] != "s-"+strings.ToLower(tc.name) || got[0]["path"] != tc.path || got[0]["reason"] == "" {
				t.Fatalf("log lines %v; want one for route %s, cause %s", got, tc.route, tc.cause)
			}
			if v := failures(t, ts.URL, "key-a", tc.cause); v != "1" {
				t.Errorf(`hippocam_failures_total{kind=%q} = %q, want 1`, tc.cause, v)
			}
		})
	}
}

// failures reads hippocam_failures_total for one cause.
func failures(t *testing.T, base, key, cause string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `hippocam_failures_total{kind="`+cause+`"} `); ok {
			return v
		}
	}
	return ""
}
