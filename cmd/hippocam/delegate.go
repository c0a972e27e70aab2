package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// The lab's commands run in the hippocam-lab binary, so that the product links neither the
// simulated model nor the benchmarks. hippocam runs them by executing hippocam-lab with the same
// arguments, found in this order:
//
//  1. next to this executable (the two are built and installed together);
//  2. on PATH;
//  3. when the working directory lies in this module's source, built from it into a temporary
//     directory, as `go run ./cmd/hippocam-lab` would (so `go run ./cmd/hippocam serve --demo`
//     works in a clone).
//
// Otherwise hippocam exits 2 and says how to install it.

const (
	labName = "hippocam-lab"
	// modulePath is this module's path, as go.mod names it.
	modulePath = "github.com/hippocam/hippocam"
)

// labMissing is the message for a lab command when no hippocam-lab is found.
const labMissing = `hippocam %s: this command runs in hippocam-lab, which is neither next to hippocam nor on PATH.
Install it beside hippocam:
  go install github.com/hippocam/hippocam/cmd/hippocam-lab@latest
or, in a clone of the source:
  go build -o "$(dirname "$(command -v hippocam)")" ./cmd/hippocam-lab
`

// runLab runs hippocam-lab with args and returns its exit status, passing the standard streams
// through and forwarding the interrupts and terminations this process receives.
func runLab(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	bin, cleanup, err := findLab(ctx, stderr)
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		fmt.Fprintf(stderr, "hippocam %s: %v\n", args[0], err)
		return 1
	}
	if bin == "" {
		fmt.Fprintf(stderr, labMissing, args[0])
		return 2
	}
	return execLab(bin, args, stdout, stderr)
}

// findLab returns the hippocam-lab to run: next to this executable, on PATH, or built from the
// module that holds the working directory (cleanup then removes the build). An empty path with
// no error means none was found.
func findLab(ctx context.Context, stderr io.Writer) (bin string, cleanup func(), err error) {
	if self, err := os.Executable(); err == nil {
		// A path with a directory is tried as it is (with Windows' executable suffixes).
		if p, err := exec.LookPath(filepath.Join(filepath.Dir(self), labName)); err == nil {
			return p, nil, nil
		}
	}
	if p, err := exec.LookPath(labName); err == nil {
		return p, nil, nil
	}
	root, ok := moduleRoot()
	if !ok {
		return "", nil, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", nil, nil
	}
	dir, err := os.MkdirTemp("", "hippocam-lab-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	build := exec.CommandContext(ctx, goBin, "build", "-o", dir+string(filepath.Separator), "./cmd/hippocam-lab")
	build.Dir, build.Stdout, build.Stderr = root, stderr, stderr
	if err := build.Run(); err != nil {
		return "", cleanup, fmt.Errorf("building hippocam-lab from %s: %w", root, err)
	}
	bin, err = exec.LookPath(filepath.Join(dir, labName)) // go build named it for this system
	return bin, cleanup, err
}

// execLab runs bin with args until it exits, forwarding the signals that would stop this
// process, and returns its exit status (128 plus the signal's number if a signal ended it).
func execLab(bin string, args []string, stdout, stderr io.Writer) int {
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "hippocam %s: %v\n", args[0], err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			// A terminal's Ctrl-C reaches the child too; it stops once either way.
			cmd.Process.Signal(sig)
		case err := <-done:
			return exitStatus(err, stderr, args[0])
		}
	}
}

// exitStatus is the status of a finished child from its Wait error.
func exitStatus(err error, stderr io.Writer, name string) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	}
	fmt.Fprintf(stderr, "hippocam %s: %v\n", name, err)
	return 1
}

// moduleRoot is the directory of the go.mod of this module that holds the working directory,
// if any does.
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if isThisModule(filepath.Join(dir, "go.mod")) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// isThisModule reports whether the go.mod file at path declares this module.
func isThisModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == modulePath
		}
	}
	return false
}
