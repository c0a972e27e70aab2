package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// nodeHarness is the directory of the official-SDK conformance script.
const nodeHarness = "../httpapi/testdata/node"

// mustNodeHarness returns the node binary, skipping the test when node or the harness's
// node_modules is missing, unless CI is set: then the test fails and says how to install them.
func mustNodeHarness(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	var missing string
	if err != nil {
		missing = "node is not on PATH (install Node.js 20 or later)"
	} else if _, err := os.Stat(filepath.Join(nodeHarness, "node_modules", "openai")); err != nil {
		missing = "the harness's dependencies are not installed (run: cd httpapi/testdata/node && npm ci)"
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
	node := mustNodeHarness(t)

	t.Run("OK", func(t *testing.T) {
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
