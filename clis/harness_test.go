package clis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam/internal/servetest"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// cliHarness is the directory of the agent CLIs' locked npm packages (Claude Code, Codex,
// opencode), installed by `npm ci` there; .ci/run does it.
const cliHarness = "testdata"

// cliTimeout bounds one run of a CLI; a run that takes longer is killed and fails its test.
const cliTimeout = 2 * time.Minute

// mustCLI returns the absolute path of the executable at rel in the harness's node_modules after
// checking that the harness's packages are installed at their pinned versions and that the
// executable runs (its native binary, which npm installs from a platform package, is there).
// Without them the test is skipped, unless CI is set: then it fails and says how to install them.
func mustCLI(t *testing.T, name, rel string) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(cliHarness, "node_modules", filepath.FromSlash(rel)))
	if err == nil {
		err = harnessInstalled(cliHarness)
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out []byte
		if out, err = exec.CommandContext(ctx, bin, "--version").CombinedOutput(); err != nil {
			err = fmt.Errorf("%s --version: %v: %s", name, err, clip(string(out), 500))
		}
	}
	if err == nil {
		return bin
	}
	msg := fmt.Sprintf("agent CLI %s: %v (run: cd clis/testdata && npm ci)", name, err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; set CI to make this a failure")
	return ""
}

// exchange is one HTTP request a CLI made to Hippocam and the answer it got.
type exchange struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	Status       int
	RespHeader   http.Header
	Resp         []byte
}

// wireLog is a reverse proxy between a CLI and `hippocam serve` that keeps every exchange, so a
// failing test can say what the CLI sent and what it got back.
type wireLog struct {
	mu  sync.Mutex
	all []exchange
}

// tap returns the URL of a reverse proxy to target that records into w until the test ends.
func (w *wireLog) tap(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		rec := &teeWriter{ResponseWriter: rw}
		rp.ServeHTTP(rec, r)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.all = append(w.all, exchange{r.Method, r.URL.RequestURI(), r.Header.Clone(), body, rec.status, rec.Header().Clone(), rec.buf.Bytes()})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// since returns the exchanges recorded from index i on.
func (w *wireLog) since(i int) []exchange {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]exchange(nil), w.all[min(i, len(w.all)):]...)
}

func (w *wireLog) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.all)
}

// summary is one line per exchange from index i on: route, status, and for a failure its body.
func (w *wireLog) summary(i int) string {
	var b strings.Builder
	for k, x := range w.since(i) {
		fmt.Fprintf(&b, "  %d. %s %s -> %d", i+k+1, x.Method, x.Path, x.Status)
		if x.Status >= 400 {
			fmt.Fprintf(&b, ": %s", clip(string(x.Resp), 600))
		}
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		return "  (no request reached Hippocam)\n"
	}
	return b.String()
}

// save writes every exchange as two files (request, response: start line, headers, body) into
// the directory that HIPPOCAM_CLI_CAPTURE names, under the test's name; nothing without it.
func (w *wireLog) save(t *testing.T) {
	root := os.Getenv("HIPPOCAM_CLI_CAPTURE")
	if root == "" {
		return
	}
	dir := filepath.Join(root, regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("HIPPOCAM_CLI_CAPTURE: %v", err)
		return
	}
	for i, x := range w.since(0) {
		var req, resp bytes.Buffer
		fmt.Fprintf(&req, "%s %s\n", x.Method, x.Path)
		x.Header.Write(&req)
		req.WriteString("\n")
		req.Write(x.Body)
		fmt.Fprintf(&resp, "%d\n", x.Status)
		x.RespHeader.Write(&resp)
		resp.WriteString("\n")
		resp.Write(x.Resp)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d.req.txt", i+1)), req.Bytes(), 0o644)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d.resp.txt", i+1)), resp.Bytes(), 0o644)
	}
}

// teeWriter passes a response on while keeping a copy of it.
type teeWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// cliStack is the simulated model, `hippocam serve` in front of it, and a wireLog in front of
// serve: root is where a CLI is pointed.
type cliStack struct {
	root  string
	serve *serve
	wire  *wireLog
}

// startCLIStack starts a cliStack whose serve gets the flags in extra (e.g. its upstream format).
func startCLIStack(t *testing.T, extra ...string) *cliStack {
	t.Helper()
	upstream := httptest.NewServer(sim.New(tokenizer.MustDefault()).Handler())
	t.Cleanup(upstream.Close)
	p := startServe(t, upstream.URL+"/v1", extra...)
	w := &wireLog{}
	s := &cliStack{root: w.tap(t, p.root), serve: p, wire: w}
	t.Cleanup(func() { w.save(t) })
	return s
}

// serve is a `hippocam serve` process.
type serve struct {
	root string
	log  *servetest.Log
}

// startServe runs the shared hippocam binary's `hippocam serve` in front of upstream with a
// fresh SQLite store and the flags in extra, until the test ends. The window is large, as a real
// agent's would be: a CLI's framing and tools alone weigh tens of thousands of tokens.
func startServe(t *testing.T, upstream string, extra ...string) *serve {
	t.Helper()
	args := append([]string{"--upstream", upstream, "--context-window", "400000", "--model", "hippocam-sim"}, extra...)
	root, log := servetest.Start(t, hippocamBin(t), servetest.Env("HIPPOCAM_", "OPENAI_", "ANTHROPIC_"), args...)
	return &serve{root: root, log: log}
}

// harnessInstalled checks that every dependency of the npm harness in dir (its package.json) is
// installed at its pinned version.
func harnessInstalled(dir string) error {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		return fmt.Errorf("the harness's package.json: %v", err)
	}
	for name, want := range pkg.Dependencies {
		var got struct{ Version string }
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
		if err != nil {
			return fmt.Errorf("the harness's package %s is not installed", name)
		}
		if err := json.Unmarshal(b, &got); err != nil || got.Version != want {
			return fmt.Errorf("the harness's package %s is at %q, package.json pins %s", name, got.Version, want)
		}
	}
	return nil
}

// cliRun is one run of a CLI: its command line, working directory and environment.
type cliRun struct {
	bin   string
	args  []string
	dir   string
	env   []string
	stdin string
}

// run runs the CLI and returns its stdout, its stderr and its exit error.
func (c cliRun) run() (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, c.args...)
	cmd.Dir, cmd.Env, cmd.Stdin = c.dir, c.env, strings.NewReader(c.stdin)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %s: %w", cliTimeout, err)
	}
	return stdout.String(), stderr.String(), err
}

// cliEnv is a minimal environment for a CLI: the system's PATH, the given HOME and the settings
// in extra. Nothing else of the developer's environment (their keys, base URLs, config dirs)
// reaches the CLI.
func cliEnv(home string, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "TMPDIR=" + os.TempDir()}
	return append(env, extra...)
}

// sessionRow is the part of GET /api/sessions the tests read: kind marks a client's side
// request (a title request, a subagent), group the client conversation the session belongs to.
type sessionRow struct {
	ID        string `json:"id"`
	Messages  int    `json:"messages"`
	UpdatedAt string `json:"updated_at"`
	Kind      string `json:"kind"`
	Group     string `json:"group"`
}

// expandedMessage is the part of GET /api/sessions/{id}/expand the tests read.
type expandedMessage struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	Framing   int    `json:"framing"`
	ToolCalls []struct {
		Name string `json:"name"`
	} `json:"tool_calls"`
}

func (s *cliStack) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get(s.serve.root + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", path, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, b)
	}
}

// sessions returns the serve's sessions by id.
func (s *cliStack) sessions(t *testing.T) map[string]sessionRow {
	t.Helper()
	var list struct{ Sessions []sessionRow }
	s.getJSON(t, "/api/sessions", &list)
	m := map[string]sessionRow{}
	for _, r := range list.Sessions {
		m[r.ID] = r
	}
	return m
}

// expand returns every original message of session id.
func (s *cliStack) expand(t *testing.T, id string) []expandedMessage {
	t.Helper()
	var e struct{ Messages []expandedMessage }
	s.getJSON(t, "/api/sessions/"+url.PathEscape(id)+"/expand", &e)
	return e.Messages
}

// conversation finds the one session that a CLI run created or extended (a session is new or
// changed since before) and whose last message is the assistant's answer want. The sessions of
// the client's side requests (title requests and the like, which GET /api/sessions marks with a
// kind) are allowed beside it, in its client conversation, and returned apart; any other new or
// changed session is an error, since one run must stay one conversation.
func (s *cliStack) conversation(t *testing.T, before map[string]sessionRow, want string) (string, []string, error) {
	t.Helper()
	var main, others []string
	var sides []sessionRow
	group := ""
	for id, r := range s.sessions(t) {
		if b, ok := before[id]; ok && b == r {
			continue
		}
		msgs := s.expand(t, id)
		switch {
		case r.Kind != "":
			sides = append(sides, r)
		case len(msgs) > 0 && msgs[len(msgs)-1].Role == "assistant" && strings.TrimSpace(msgs[len(msgs)-1].Content) == want:
			main, group = append(main, id), r.Group
		default:
			others = append(others, fmt.Sprintf("%s (%d messages, last %s)", id, len(msgs), lastMessage(msgs)))
		}
	}
	var ids []string
	for _, r := range sides {
		ids = append(ids, r.ID)
		if r.Group != group {
			others = append(others, fmt.Sprintf("%s (a %s request of the group %q, not the conversation's %q)", r.ID, r.Kind, r.Group, group))
		}
	}
	if len(main) != 1 || len(others) > 0 {
		return "", ids, fmt.Errorf("want one session ending in the answer %q, got %q, side-request sessions %q and others %q",
			want, main, ids, others)
	}
	return main[0], ids, nil
}

func lastMessage(msgs []expandedMessage) string {
	if len(msgs) == 0 {
		return "none"
	}
	m := msgs[len(msgs)-1]
	return fmt.Sprintf("%s %q", m.Role, clip(m.Content, 120))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
