package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hippocam/hippocam/internal/servetest"
)

// labOnly are the packages only the lab binary and tests may link: the benchmarks, the simulated
// model, the scenario replay and the test helpers. Any package of the module whose name ends in
// "test" is a test helper too.
var labOnly = []string{"bench", "bench/learnstream", "sim", "replay", "scenario", "scenarios",
	"storetest", "memory/memorytest", "internal/learntest"}

// The product binary links none of the lab's packages.
func TestProductLinksNoLab(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(pkg, modulePath+"/")
		if !ok {
			continue
		}
		for _, lab := range labOnly {
			if rel == lab {
				t.Errorf("hippocam links %s", pkg)
			}
		}
		if strings.HasSuffix(rel, "test") {
			t.Errorf("hippocam links the test helper %s", pkg)
		}
	}
}

// built is the product and the lab, built once into one directory, as an install puts them.
var built = servetest.SharedBuild{Packages: []string{modulePath + "/cmd/hippocam", modulePath + "/cmd/hippocam-lab"}}

func TestMain(m *testing.M) { os.Exit(built.Run(m)) }

// buildBoth returns the directory holding both binaries.
func buildBoth(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	return filepath.Dir(built.Bin(t))
}

// alone copies the built hippocam into a directory of its own, without hippocam-lab beside it,
// and returns its path.
func alone(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(buildBoth(t), "hippocam"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "hippocam")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// run runs bin with args in dir with PATH set to path, and returns its stdout, stderr and exit
// status.
func run(t *testing.T, dir, path, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "PATH="+path)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// The lab's command lines, given to hippocam, run in the hippocam-lab beside it: their output,
// their usage errors and their exit status come through; the product's own commands stay its.
func TestDelegation(t *testing.T) {
	dir := buildBoth(t)
	bin, outside := filepath.Join(dir, "hippocam"), t.TempDir()
	for _, c := range []struct {
		args   []string
		code   int
		stream string // "out" or "err"
		want   string
	}{
		{[]string{"bench", "-h"}, 0, "err", "hippocam bench context"},
		{[]string{"bench", "speed"}, 2, "err", `hippocam-lab bench: unknown benchmark "speed"`},
		{[]string{"sim", "--ttft-ms", "-1"}, 2, "err", "hippocam-lab sim"},
		{[]string{"learn", "-h"}, 0, "err", "-stream"},
		{[]string{"replay"}, 2, "err", "hippocam-lab replay"},
		{[]string{"serve", "--demo", "--janus", "never"}, 2, "err", "hippocam-lab serve: --janus must be beside or gate"},
		{[]string{"version"}, 0, "out", "hippocam 0.1.0"},
		{[]string{"serve"}, 2, "err", "hippocam serve: --upstream is required"},
	} {
		stdout, stderr, code := run(t, outside, "", bin, c.args...)
		got := map[string]string{"out": stdout, "err": stderr}[c.stream]
		if code != c.code || !strings.Contains(got, c.want) {
			t.Errorf("hippocam %v: exit %d, stdout %q, stderr %q; want %d and %q", c.args, code, stdout, stderr, c.code, c.want)
		}
	}
}

// With no hippocam-lab next to it, on PATH or in a source tree around the working directory,
// hippocam says how to install it and exits 2; on PATH, it is found there.
func TestDelegationNotFound(t *testing.T) {
	dir, bin := buildBoth(t), alone(t)
	_, stderr, code := run(t, t.TempDir(), "", bin, "bench", "-h")
	if code != 2 || !strings.Contains(stderr, "hippocam bench: this command runs in hippocam-lab") || !strings.Contains(stderr, "go install github.com/hippocam/hippocam/cmd/hippocam-lab") {
		t.Errorf("without hippocam-lab: exit %d, %q", code, stderr)
	}
	if _, stderr, code := run(t, t.TempDir(), dir, bin, "bench", "-h"); code != 0 || !strings.Contains(stderr, "hippocam bench context") {
		t.Errorf("hippocam-lab on PATH: exit %d, %q", code, stderr)
	}
}

// In this module's source with no hippocam-lab installed, hippocam builds it from the source,
// as `go run ./cmd/hippocam serve --demo` in a clone needs.
func TestDelegationFromSource(t *testing.T) {
	bin := alone(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	_, stderr, code := run(t, ".", filepath.Dir(goBin), bin, "bench", "speed")
	if code != 2 || !strings.Contains(stderr, `hippocam-lab bench: unknown benchmark "speed"`) {
		t.Errorf("from the source: exit %d, %q", code, stderr)
	}
}

// A termination of hippocam reaches the lab's command it runs, which shuts down as it would
// alone: the simulated model stops and hippocam exits with its status.
func TestDelegationForwardsSignals(t *testing.T) {
	dir := buildBoth(t)
	cmd := exec.Command(filepath.Join(dir, "hippocam"), "sim", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "PATH=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, "simulated model listening") {
		cmd.Process.Kill()
		t.Fatalf("sim did not start: %q %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("hippocam sim after SIGTERM: %v", err)
		}
	case <-ctx.Done():
		cmd.Process.Kill()
		t.Fatal("hippocam sim did not stop on SIGTERM")
	}
}
