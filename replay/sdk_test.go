package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam/internal/servetest"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// nodeHarness is the directory of the official-SDK scripts and their locked npm packages.
const nodeHarness = "../httpapi/testdata/node"

// mustNodeHarness returns the node binary, skipping the test when node or the harness's
// packages, at the versions package.json pins, are missing, unless CI is set: then the test
// fails and says how to install them.
func mustNodeHarness(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing := ""
	if err != nil {
		missing = "node is not on PATH (install Node.js 20 or later)"
	} else if err := harnessInstalled(); err != nil {
		missing = err.Error() + " (run: cd httpapi/testdata/node && npm ci)"
	}
	if missing == "" {
		return node
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("official SDK conformance: %s", missing)
	}
	t.Skipf("official SDK conformance: %s; set CI to make this a failure", missing)
	return ""
}

// harnessInstalled checks that every dependency of the harness's package.json is installed at
// its pinned version.
func harnessInstalled() error {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(nodeHarness, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		return fmt.Errorf("the harness's package.json: %v", err)
	}
	for name, want := range pkg.Dependencies {
		var got struct{ Version string }
		b, err := os.ReadFile(filepath.Join(nodeHarness, "node_modules", filepath.FromSlash(name), "package.json"))
		if err != nil {
			return fmt.Errorf("the harness's package %s is not installed", name)
		}
		if err := json.Unmarshal(b, &got); err != nil || got.Version != want {
			return fmt.Errorf("the harness's package %s is at %q, package.json pins %s", name, got.Version, want)
		}
	}
	return nil
}

// sdkSummary is the part of sdk_exchange.mjs's output the tests read.
type sdkSummary struct {
	OK        bool   `json:"ok"`
	SDK       string `json:"sdk"`
	Error     string `json:"error"`
	Exchanges []struct {
		Session  string `json:"session"`
		Streamed bool   `json:"streamed"`
		Steps    []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"steps"`
	} `json:"exchanges"`
}

// runNodeHarness runs sdk_exchange.mjs against baseURL and returns its summary, its stderr and
// its exit error.
func runNodeHarness(t *testing.T, node, baseURL, session string) (sdkSummary, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sdk_exchange.mjs")
	cmd.Dir = nodeHarness
	cmd.Env = append(os.Environ(), "HIPPOCAM_BASE_URL="+baseURL, "HIPPOCAM_SESSION="+session, "HIPPOCAM_API_KEY=k-node")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var s sdkSummary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("sdk_exchange.mjs printed no summary (%v; run error %v)\nstdout:\n%s\nstderr:\n%s", err, runErr, stdout.String(), stderr.String())
	}
	return s, stderr.String(), runErr
}

// TestNodeSDK runs the official openai npm client against the simulated model's HTTP server,
// which answers the !call and !ask directives itself.
func TestNodeSDK(t *testing.T) {
	t.Parallel()
	node := mustNodeHarness(t)

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		srv := newRecordingServer(t)
		s, stderr, err := runNodeHarness(t, node, srv.URL+"/v1", "node")
		if err != nil || !s.OK {
			t.Fatalf("sdk_exchange.mjs failed (%v): %s\nstderr:\n%s", err, s.Error, stderr)
		}
		if !strings.HasPrefix(s.SDK, "openai ") || len(s.Exchanges) != 2 {
			t.Fatalf("summary %+v", s)
		}
		for _, x := range s.Exchanges {
			last := x.Steps[len(x.Steps)-1].Message.Content
			if len(x.Steps) != 3 || last == nil || *last != "temperature := 18" {
				t.Errorf("exchange %s: %+v", x.Session, x.Steps)
			}
		}
		// What went over the wire: the session header through defaultHeaders, the key, the
		// three calls of each exchange, streamed only in the second, each resending the history.
		var got []string
		for i, r := range srv.requests() {
			stream := "plain"
			if r.body.Stream {
				stream = "stream"
			}
			got = append(got, r.header.Get("Hippocam-Session")+"/"+stream)
			if r.header.Get("Authorization") != "Bearer k-node" {
				t.Errorf("request %d: authorization %q", i, r.header.Get("Authorization"))
			}
			if want := []int{1, 3, 5}[i%3]; len(r.body.Messages) != want {
				t.Errorf("request %d carries %d messages, want the whole history of %d", i, len(r.body.Messages), want)
			}
		}
		want := "node-plain/plain node-plain/plain node-plain/plain node-stream/stream node-stream/stream node-stream/stream"
		if strings.Join(got, " ") != want {
			t.Errorf("requests %q, want %q", strings.Join(got, " "), want)
		}
	})

	t.Run("ErrMismatch", func(t *testing.T) {
		t.Parallel()
		// An endpoint that loses the question's key answers "humidity := unknown".
		h := sim.New(tokenizer.MustDefault()).Handler()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			b = bytes.ReplaceAll(b, []byte("!ask temperature"), []byte("!ask humidity"))
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		s, stderr, err := runNodeHarness(t, node, srv.URL+"/v1", "node")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || s.OK {
			t.Fatalf("sdk_exchange.mjs: error %v, ok %v; want exit status 1", err, s.OK)
		}
		if want := `plain step 3 (!ask temperature): answer "humidity := unknown"`; !strings.Contains(stderr, want) || !strings.Contains(s.Error, want) {
			t.Errorf("stderr %q, summary error %q; want them to say %q", stderr, s.Error, want)
		}
	})
}

// sdkVariant is one client script run in one of its variants.
type sdkVariant struct {
	script, variant string
	// api is the format the variant speaks: chat, responses or messages.
	api string
	// byReference marks a client that resends its earlier answers as references to them
	// (Responses item_reference: the AI SDK's default, store: true), which only an endpoint that
	// keeps the conversation, the proxy, can resolve; the stateless simulated model refuses them.
	byReference bool
}

// sdkVariants are every client and format of the harness (its scripts say what each does).
var sdkVariants = []sdkVariant{
	{"openai", "chat-plain", "chat", false},
	{"openai", "chat-stream", "chat", false},
	{"openai", "responses-plain", "responses", false},
	{"openai", "responses-stream", "responses", false},
	{"agents", "run", "responses", false},
	{"agents", "stream", "responses", false},
	{"aisdk", "responses-generate", "responses", true},
	{"aisdk", "responses-stream", "responses", true},
	{"aisdk", "chat-generate", "chat", false},
	{"aisdk", "chat-stream", "chat", false},
	{"langchain", "invoke", "chat", false},
	{"langchain", "stream", "chat", false},
	{"anthropic", "create", "messages", false},
	{"anthropic", "stream", "messages", false},
}

// apiRoutes are the routes of each format under the endpoint's root.
var apiRoutes = map[string]string{"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}

// The answers of the harness's two turns (lib.mjs).
var sdkTexts = []string{"the notes are read", "all done"}

// sdkRun is the JSON line a client script prints.
type sdkRun struct {
	OK       bool              `json:"ok"`
	Client   string            `json:"client"`
	SDKs     map[string]string `json:"sdks"`
	Error    string            `json:"error"`
	Variants []struct {
		Variant  string   `json:"variant"`
		API      string   `json:"api"`
		Session  string   `json:"session"`
		OK       bool     `json:"ok"`
		Texts    []string `json:"texts"`
		Error    string   `json:"error"`
		Requests []struct {
			Path        string  `json:"path"`
			Status      int     `json:"status"`
			SessionUsed *string `json:"session_used"`
		} `json:"requests"`
	} `json:"variants"`
}

// runSDK runs one variant of a client script against the endpoint at root and returns its
// line, its stderr and its exit error. A script that prints no line fails the test.
func runSDK(t *testing.T, node, root, prefix string, v sdkVariant) (sdkRun, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, v.script+".mjs", v.variant)
	cmd.Dir = nodeHarness
	cmd.Env = append(os.Environ(), "HIPPOCAM_BASE_URL="+root, "HIPPOCAM_SESSION="+prefix, "HIPPOCAM_API_KEY=k-sdk", "HIPPOCAM_MODEL=hippocam-sim")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out sdkRun
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%s.mjs %s printed no result line (%v; run error %v)\nstdout:\n%s\nstderr:\n%s", v.script, v.variant, err, runErr, stdout.String(), stderr.String())
	}
	return out, stderr.String(), runErr
}

// simServer serves the simulated model, with rewrite (if any) applied to each request body.
func simServer(t *testing.T, rewrite func([]byte) []byte) *httptest.Server {
	t.Helper()
	h := sim.New(tokenizer.MustDefault()).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rewrite != nil {
			b, _ := io.ReadAll(r.Body)
			b = rewrite(b)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// proxy is a `hippocam serve` process.
type proxy struct {
	root string
	log  *servetest.Log
}

// startProxy builds the hippocam binary and runs `hippocam serve` in front of upstream (an
// OpenAI-compatible base URL) with a fresh SQLite store, until the test ends.
func startProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	root, log := servetest.Start(t, hippocamBin(t), servetest.Env("HIPPOCAM_", "OPENAI_"),
		"--upstream", upstream, "--context-window", "8000", "--model", "hippocam-sim")
	return &proxy{root: root, log: log}
}

// checkRun fails the test unless the script passed its one variant with the turns' answers.
func checkRun(t *testing.T, v sdkVariant, out sdkRun, stderr string, err error, proxyLog func() string) {
	t.Helper()
	if err != nil || !out.OK || len(out.Variants) != 1 || !out.Variants[0].OK {
		msg := fmt.Sprintf("%s.mjs %s failed (%v): %s\nstderr:\n%s", v.script, v.variant, err, out.Error, stderr)
		if proxyLog != nil {
			msg += "\nhippocam serve's log:\n" + proxyLog()
		}
		t.Fatal(msg)
	}
	r := out.Variants[0]
	if r.Variant != v.variant || r.API != v.api || strings.Join(r.Texts, "|") != strings.Join(sdkTexts, "|") {
		t.Fatalf("%s.mjs %s: result %+v, want the %s format and the answers %q", v.script, v.variant, r, v.api, sdkTexts)
	}
	for _, q := range r.Requests {
		if q.Path != apiRoutes[v.api] {
			t.Errorf("%s.mjs %s: a request to %s, want %s", v.script, v.variant, q.Path, apiRoutes[v.api])
		}
	}
}

// checkSession fails the test unless the proxy holds session with the conversation's last answer
// at its end and no fork of it: the client's resent histories continued the session each time.
func checkSession(t *testing.T, root, session string) {
	t.Helper()
	getJSON := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(root + path)
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
	var expand struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	getJSON("/api/sessions/"+session+"/expand", &expand)
	if n := len(expand.Messages); n == 0 || expand.Messages[n-1].Role != "assistant" || expand.Messages[n-1].Content != sdkTexts[1] {
		t.Errorf("session %s: /expand ends with %+v, want the assistant's %q", session, expand.Messages[max(0, n-1):], sdkTexts[1])
	}
	var list struct {
		Sessions []struct{ ID string } `json:"sessions"`
	}
	getJSON("/api/sessions", &list)
	for _, s := range list.Sessions {
		if strings.HasPrefix(s.ID, session+"~") {
			t.Errorf("session %s was forked into %s: a resent history did not extend it", session, s.ID)
		}
	}
}

// TestOfficialSDKs runs every official client of the harness, each format it speaks streamed
// and not, through `hippocam serve` in front of the simulated model, and against the simulated
// model alone. Each holds a two-turn conversation with a tool round trip in a session of its own
// (httpapi/testdata/node/lib.mjs) and checks the answers, that no call of Hippocam's own tools
// reached it, and that the proxy kept one session per conversation, unforked.
func TestOfficialSDKs(t *testing.T) {
	t.Parallel()
	node := mustNodeHarness(t)
	upstream := simServer(t, nil)
	p := startProxy(t, upstream.URL+"/v1")
	for _, target := range []struct {
		name, root string
		proxy      bool
	}{{"proxy", p.root, true}, {"sim", upstream.URL, false}} {
		t.Run(target.name, func(t *testing.T) {
			for _, v := range sdkVariants {
				t.Run(v.script+"/"+v.variant, func(t *testing.T) {
					t.Parallel()
					if v.byReference && !target.proxy {
						t.Skip("the client resends its answers by reference (item_reference), which the stateless simulated model cannot resolve")
					}
					out, stderr, err := runSDK(t, node, target.root, "sdk", v)
					var log func() string
					if target.proxy {
						log = p.log.String
					}
					checkRun(t, v, out, stderr, err, log)
					if target.proxy {
						checkSession(t, target.root, out.Variants[0].Session)
					}
				})
			}
		})
	}
}

// TestOfficialSDKsDetect: each script fails, exit status 1 and the reason on stderr, when the
// endpoint answers wrongly (the first turn's answer rewritten) or lets a call of Hippocam's recall tool
// through (the model made to call recall instead of read_file). The simulated model alone plays
// the broken endpoint.
func TestOfficialSDKsDetect(t *testing.T) {
	t.Parallel()
	node := mustNodeHarness(t)
	for _, c := range []struct {
		name     string
		from, to string
		want     string
	}{
		{"ErrAnswer", "!say the notes are read", "!say the notes are lost", `answer "the notes are lost", want "the notes are read"`},
		{"ErrRecallReachesClient", "!call read_file", "!call recall", `internal tool "recall" reached the client`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := simServer(t, func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(c.from), []byte(c.to)) })
			for _, v := range sdkVariants {
				t.Run(v.script+"/"+v.variant, func(t *testing.T) {
					t.Parallel()
					out, stderr, err := runSDK(t, node, srv.URL, "bad", v)
					var exit *exec.ExitError
					if !errors.As(err, &exit) || exit.ExitCode() != 1 || out.OK {
						t.Fatalf("%s.mjs %s: error %v, ok %v; want exit status 1\nstderr:\n%s", v.script, v.variant, err, out.OK, stderr)
					}
					if !strings.Contains(stderr, c.want) || !strings.Contains(out.Error, c.want) {
						t.Errorf("%s.mjs %s: stderr %q, result error %q; want them to say %q", v.script, v.variant, stderr, out.Error, c.want)
					}
				})
			}
		})
	}
}
