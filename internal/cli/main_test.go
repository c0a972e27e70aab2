package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/hippocam/hippocam/internal/servetest"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// TestMain gives the tests that run the built binary (hippocam mcp over stdio, serve killed
// mid-run) one build of it.
func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(hippocamBuild.Run(m))
}

// hippocamBuild is the one build of the hippocam binary the tests share.
var hippocamBuild servetest.SharedBuild

// Main is the product binary's command line, as the tests run it in-process.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	p := &Program{Name: "hippocam", Usage: "usage\n", Commands: ProductCommands()}
	return p.Main(ctx, args, stdout, stderr)
}

// runMain runs Main with args and returns its stdout, stderr and exit status.
func runMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// startSim serves a fresh simulated model on addr, answering at lat's pace, until the test ends
// (the lab's sim command, in-process: tests may link the simulated model, the product may not).
func startSim(t *testing.T, addr string, lat sim.Latency) {
	t.Helper()
	m := sim.New(tokenizer.MustDefault())
	if err := m.SetLatency(lat); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("the simulated model: %v", err)
		}
	})
}

// Without the lab's demo kit, serve --demo is the lab's: the product hands it over, and a
// program that cannot says so.
func TestServeDemoNeedsTheLab(t *testing.T) {
	_, stderr, code := runMain(t, "serve", "--demo")
	if code != 2 || !bytes.Contains([]byte(stderr), []byte(ErrLab.Error())) {
		t.Fatalf("serve --demo without the lab: %d %q", code, stderr)
	}
	var handed []string
	p := &Program{Name: "hippocam", Commands: ProductCommands(), Delegated: []string{"sim"},
		Delegate: func(_ context.Context, args []string, _, _ io.Writer) int { handed = args; return 7 }}
	if code := p.Main(context.Background(), []string{"serve", "--demo", "--addr", "127.0.0.1:0"}, io.Discard, io.Discard); code != 7 || len(handed) != 4 {
		t.Fatalf("serve --demo was not handed over whole: %d %v", code, handed)
	}
	if code := p.Main(context.Background(), []string{"sim", "--bogus"}, io.Discard, io.Discard); code != 7 || handed[0] != "sim" {
		t.Fatalf("sim was not handed over: %d %v", code, handed)
	}
}
