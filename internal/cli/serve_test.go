package cli

import (
	"github.com/hippocam/hippocam/internal/servetest"

	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hippocam/hippocam/replay"
	"github.com/hippocam/hippocam/scenario"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

func freeAddr(t *testing.T) string { return servetest.FreeAddr(t) }

// start runs this binary's Main with args until the test ends, and waits for probe to answer.
func start(t *testing.T, probe string, args ...string) {
	t.Helper()
	servetest.StartMain(t, Main, probe, args...)
}

// The real binary's serve in front of the real binary's sim, driven over HTTP by an agent that
// resends its history: tool calls, streamed and plain turns, answers that need recall; /expand
// then holds every message the client saw, in order.
func TestServeEndToEnd(t *testing.T) {
	simAddr, addr := freeAddr(t), freeAddr(t)
	startSim(t, simAddr, sim.Latency{})
	db := filepath.Join(t.TempDir(), "serve.db")
	// --janus-wait 0: each step applies the previous verdict, however loaded the machine, so the
	// answers do not depend on timing.
	start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", db, "--upstream", "http://"+simAddr+"/v1", "--context-window", "8000", "--model", "hippocam-sim", "--janus-wait", "0")
	for _, name := range []string{"refactor", "support"} {
		t.Run(name, func(t *testing.T) {
			file := "../../scenarios/" + name + ".jsonl"
			lines, err := scenario.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := replay.RunHTTP(context.Background(), replay.HTTPConfig{BaseURL: "http://" + addr + "/v1", Session: name, Model: "hippocam-sim", Stream: func(i int) bool { return i%3 == 0 }}, lines)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Streamed == 0 || rep.Streamed == rep.Steps {
				t.Fatalf("%d of %d steps streamed; want a mix", rep.Streamed, rep.Steps)
			}
			want := mustRead(t, strings.TrimSuffix(file, ".jsonl")+".expected")
			if got := strings.Join(rep.Answers, "\n") + "\n"; got != want {
				t.Errorf("answers:\n%s\nwant:\n%s", got, want)
			}
			resp, err := http.Get("http://" + addr + "/api/sessions/" + name + "/expand")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct {
				Messages []struct{ Role, Kind, Content string } `json:"messages"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
			var raw []string
			for _, m := range out.Messages {
				if m.Kind == "raw" {
					raw = append(raw, m.Role+": "+m.Content)
				}
			}
			var seen []string
			for _, m := range rep.Transcript {
				text, _ := m.Text()
				seen = append(seen, m.Role+": "+text)
			}
			if len(raw) != len(seen) {
				t.Fatalf("/expand holds %d messages, the client saw %d", len(raw), len(seen))
			}
			for i := range raw {
				if raw[i] != seen[i] {
					t.Fatalf("message %d differs:\n expand %q\n client %q", i, clip(raw[i]), clip(seen[i]))
				}
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// nodeHarness returns node and the official-SDK harness's directory, failing the test under CI
// and skipping it elsewhere when either is missing (the harness needs `npm ci`).
func nodeHarness(t *testing.T) (node, dir string) {
	t.Helper()
	dir, _ = filepath.Abs("../../httpapi/testdata/node")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "openai"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the SDK harness needs node and `npm ci` in %s: %v", dir, err)
		}
		t.Skipf("official SDK test skipped (%v); run `npm ci` in %s", err, dir)
	}
	return node, dir
}

// The official OpenAI Node SDK, as an ordinary client of the proxy, completes a non-streamed and
// a streamed tool-calling exchange (httpapi/testdata/node/sdk_exchange.mjs), with the answer to
// its question coming through Hippocam's memory.
func TestServeNodeSDK(t *testing.T) {
	node, dir := nodeHarness(t)
	simAddr, addr := freeAddr(t), freeAddr(t)
	startSim(t, simAddr, sim.Latency{})
	start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "sdk.db"), "--upstream", "http://"+simAddr+"/v1", "--context-window", "8000")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sdk_exchange.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HIPPOCAM_BASE_URL=http://"+addr+"/v1", "HIPPOCAM_SESSION=sdk", "HIPPOCAM_MODEL=hippocam-sim")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the SDK exchange failed: %v\n%s", err, out)
	}
	for _, session := range []string{"sdk-plain", "sdk-stream"} {
		resp, err := http.Get("http://" + addr + "/api/sessions/" + session)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("session %s: status %d", session, resp.StatusCode)
		}
	}
}

// Shutdown lets an in-flight request finish and commit.
func TestServeGracefulShutdown(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hippocam-Role") == "agent" {
			time.Sleep(700 * time.Millisecond)
		}
		simHandler.ServeHTTP(w, r)
	}))
	defer slow.Close()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := &ServeCommand{Stdout: io.Discard, Stderr: io.Discard}
	if err := cmd.ParseFlags([]string{"--addr", addr, "--db", filepath.Join(t.TempDir(), "g.db"), "--upstream", slow.URL + "/v1"}); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	cmd.Ready = func(string) { close(ready) }
	done := make(chan error, 1)
	go func() { done <- cmd.Run(ctx) }()
	<-ready
	type result struct {
		status int
		err    error
	}
	res := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"!say still here"}]}`))
		req.Header.Set("Hippocam-Session", "inflight")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			res <- result{err: err}
			return
		}
		resp.Body.Close()
		res <- result{status: resp.StatusCode}
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	r := <-res
	if r.err != nil || r.status != 200 {
		t.Fatalf("in-flight request: %v, status %d", r.err, r.status)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	s, err := cmd.store.Session(context.Background(), "", "inflight")
	if err != nil || s.Transcript.Count != 2 {
		t.Fatalf("the in-flight step was not committed: %v %+v", err, s)
	}
	cmd.Close()
}

var simHandler = sim.New(tokenizer.MustDefault()).Handler()

// The flags that bound slow and idle clients reach the server; zero or negative ones are
// refused.
func TestServeTimeoutFlags(t *testing.T) {
	cmd := &ServeCommand{Stdout: io.Discard, Stderr: io.Discard}
	if err := cmd.ParseFlags([]string{"--upstream", "http://127.0.0.1:1/v1", "--write-timeout", "5s", "--idle-timeout", "7s", "--detached-step-timeout", "9s"}); err != nil {
		t.Fatal(err)
	}
	if cmd.WriteTimeout != 5*time.Second || cmd.IdleTimeout != 7*time.Second || cmd.DetachedStepTimeout != 9*time.Second {
		t.Errorf("timeouts %v %v %v", cmd.WriteTimeout, cmd.IdleTimeout, cmd.DetachedStepTimeout)
	}
	cmd = &ServeCommand{Stdout: io.Discard, Stderr: io.Discard}
	if err := cmd.ParseFlags([]string{"--upstream", "http://127.0.0.1:1/v1"}); err != nil || cmd.WriteTimeout != 60*time.Second || cmd.IdleTimeout != 120*time.Second {
		t.Errorf("defaults: %v, write %v, idle %v", err, cmd.WriteTimeout, cmd.IdleTimeout)
	}
	for _, flag := range []string{"--write-timeout", "--idle-timeout", "--detached-step-timeout"} {
		cmd = &ServeCommand{Stdout: io.Discard, Stderr: io.Discard}
		if err := cmd.ParseFlags([]string{"--upstream", "http://127.0.0.1:1/v1", flag, "0s"}); err == nil {
			t.Errorf("%s 0s was accepted", flag)
		}
	}
}

// In front of a simulated upstream that takes a second to its first token, a
// streamed answer through serve arrives as it is produced, its first content chunk well before
// its last, in each inbound format.
func TestServeStreamsAtTheModelsPace(t *testing.T) {
	const tokensPerSecond, pad = 50, 150 // the answer takes some 3 s to produce after its first token
	simAddr, addr := freeAddr(t), freeAddr(t)
	startSim(t, simAddr, sim.Latency{TTFT: time.Second, TokensPerSecond: tokensPerSecond})
	start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "s.db"),
		"--upstream", "http://"+simAddr+"/v1", "--context-window", "8000", "--model", "hippocam-sim")
	content := fmt.Sprintf("!say streamed at the model's pace\n!pad %d", pad)
	for _, tc := range []struct {
		name, path, body string
		isText           func(data string) bool
	}{
		{"Chat", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":%q}]}`,
			func(d string) bool {
				return strings.Contains(d, `"delta":{"content":"`) && !strings.Contains(d, `"content":""`)
			}},
		{"Responses", "/v1/responses", `{"model":"m","stream":true,"input":%q}`,
			func(d string) bool { return strings.Contains(d, `"type":"response.output_text.delta"`) }},
		{"Messages", "/v1/messages", `{"model":"m","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":%q}]}`,
			func(d string) bool { return strings.Contains(d, `"type":"text_delta"`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body, _ := json.Marshal(content)
			req, _ := http.NewRequest("POST", "http://"+addr+tc.path, strings.NewReader(strings.Replace(tc.body, "%q", string(body), 1)))
			req.Header.Set("Hippocam-Session", "pace-"+tc.name)
			sent := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var first, last time.Time
			chunks := 0
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && tc.isText(data) {
					last = time.Now()
					if chunks == 0 {
						first = last
					}
					chunks++
				}
			}
			if resp.StatusCode != 200 || chunks < 2 {
				t.Fatalf("status %d, %d content chunks", resp.StatusCode, chunks)
			}
			production := time.Duration(pad) * time.Second / tokensPerSecond
			t.Logf("first content chunk after %v, last after %v, %d chunks", first.Sub(sent), last.Sub(sent), chunks)
			if gap := last.Sub(first); gap < production/2 {
				t.Errorf("first and last content chunks %v apart; a stream at the model's pace spreads them over some %v", gap, production)
			}
		})
	}
}

// The upstream's patience is set by flags: --upstream-timeout to an answer's start,
// --upstream-idle-timeout between two lines of a stream, --upstream-retries; bad values are
// refused.
func TestServeUpstreamFlags(t *testing.T) {
	cmd := &ServeCommand{Stdout: io.Discard, Stderr: io.Discard}
	if err := cmd.ParseFlags([]string{"--upstream", "http://127.0.0.1:1/v1"}); err != nil ||
		cmd.UpstreamTimeout != 120*time.Second || cmd.UpstreamIdleTimeout != 120*time.Second || cmd.UpstreamRetries != 3 {
		t.Errorf("defaults: %v, timeout %v, idle %v, retries %d", err, cmd.UpstreamTimeout, cmd.UpstreamIdleTimeout, cmd.UpstreamRetries)
	}
	if cmd.Structured != "auto" {
		t.Errorf("--structured defaults to %q", cmd.Structured)
	}
	for _, bad := range [][]string{{"--upstream-timeout", "0s"}, {"--upstream-idle-timeout", "-1s"}, {"--upstream-retries", "-1"}, {"--structured", "json"}} {
		cmd = &ServeCommand{Stdout: io.Discard, Stderr: io.Discard}
		if err := cmd.ParseFlags(append([]string{"--upstream", "http://127.0.0.1:1/v1"}, bad...)); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}

	// An upstream that never answers the main model: with a 200 ms timeout and one retry the
	// request fails after two attempts with a 504, well within a second, not minutes.
	var agentCalls atomic.Int32
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hippocam-Role") == "agent" {
			agentCalls.Add(1)
			io.Copy(io.Discard, r.Body) // so that the server sees the client hang up
			<-r.Context().Done()
			return
		}
		simHandler.ServeHTTP(w, r)
	}))
	defer hung.Close()
	addr := freeAddr(t)
	start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "u.db"), "--upstream", hung.URL+"/v1",
		"--upstream-timeout", "200ms", "--upstream-retries", "1")
	began := time.Now()
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"!say hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(began); resp.StatusCode != http.StatusGatewayTimeout || took > 3*time.Second || agentCalls.Load() != 2 {
		t.Fatalf("status %d after %v and %d attempts: %s", resp.StatusCode, took, agentCalls.Load(), body)
	}
}
