// Package servetest runs the hippocam binary's serve command for end-to-end tests, as a user
// would: built from this module, on a free loopback port, with a fresh SQLite store, and stopped
// with an interrupt when the test ends. Only tests import it.
package servetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Log is a bytes.Buffer that a process writes while the test reads it.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// BuildIn builds the commands pkgs (import paths; none: the hippocam product) into dir and
// returns the path of hippocam there. A package whose tests all run the same binaries builds
// them once (SharedBuild).
func BuildIn(dir string, pkgs ...string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go is not on PATH to build hippocam: %v", err)
	}
	if len(pkgs) == 0 {
		pkgs = []string{"github.com/hippocam/hippocam/cmd/hippocam"}
	}
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)
	if out, err := exec.Command(goBin, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	return filepath.Join(dir, "hippocam"), nil
}

// Env is this process's environment without the variables whose names begin with one of
// prefixes: serve reads its settings from HIPPOCAM_* and upstream keys from OPENAI_* and
// ANTHROPIC_*, and none of the developer's may leak into a test.
func Env(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		keep := true
		for _, p := range prefixes {
			keep = keep && !strings.HasPrefix(kv, p)
		}
		if keep {
			env = append(env, kv)
		}
	}
	return env
}

// Start runs `bin serve --addr ADDR --db FILE args...` with env until the test ends, and returns
// its root URL and its log. A port taken between choosing it and serve's listen is tried again
// with another, twice at most.
func Start(t testing.TB, bin string, env []string, args ...string) (string, *Log) {
	t.Helper()
	dir := t.TempDir()
	for try := 0; ; try++ {
		addr := FreeAddr(t)
		root, log := "http://"+addr, &Log{}
		cmd := exec.Command(bin, append([]string{"serve", "--addr", addr, "--db", filepath.Join(dir, fmt.Sprintf("serve%d.db", try))}, args...)...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
		if err := cmd.Start(); err != nil {
			t.Fatalf("start hippocam serve: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if Healthy(root+"/healthz", exited) {
			t.Cleanup(func() {
				cmd.Process.Signal(os.Interrupt)
				select {
				case <-exited:
				case <-time.After(30 * time.Second):
					cmd.Process.Kill()
					<-exited
					t.Errorf("hippocam serve did not shut down in 30 s")
				}
			})
			return root, log
		}
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
		if try == 2 {
			t.Fatalf("hippocam serve did not come up:\n%s", log.String())
		}
	}
}

// Healthy waits up to 20 s for url to answer, reports whether it answered 200, and reports false
// early if the process exits (its exit stays in exited for the caller).
func Healthy(url string, exited chan error) bool {
	for i := 0; i < 400; i++ {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
		select {
		case err := <-exited:
			exited <- err
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// MainFunc is a binary's Main: it runs args until ctx ends and returns the exit status.
type MainFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// StartMain runs main with args in this process until the test ends (then cancels it and expects
// exit status 0), and waits up to 30 s for probe to answer: a loaded CI machine has taken more
// than 5 s to open and migrate a store.
func StartMain(t testing.TB, main MainFunc, probe string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out Log
	go func() { done <- main(ctx, args, &out, &out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("%s exited %d: %s", args[0], code, out.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not shut down", args[0])
		}
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if resp, err := http.Get(probe); err == nil {
			resp.Body.Close()
			return
		}
		select {
		case code := <-done:
			t.Fatalf("%s exited %d early: %s", args[0], code, out.String())
		case <-time.After(25 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not come up", args[0])
}

// SharedBuild is one build of the hippocam binary that all of a package's tests share: the first
// test that asks for it builds it (linking costs seconds) into a directory that Run removes at
// the end.
type SharedBuild struct {
	// Packages are the commands built (BuildIn); none: the hippocam product.
	Packages []string

	dir  string
	once sync.Once
	bin  string
	err  error
}

// Run runs the package's tests with a fresh build directory and returns their exit status; call
// it from TestMain as os.Exit(b.Run(m)).
func (b *SharedBuild) Run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "hippocam-build-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b.dir = dir
	defer os.RemoveAll(dir)
	return m.Run()
}

// Bin returns the shared hippocam binary, building the packages on the first call; the others
// are beside it.
func (b *SharedBuild) Bin(t testing.TB) string {
	t.Helper()
	b.once.Do(func() { b.bin, b.err = BuildIn(b.dir, b.Packages...) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}
