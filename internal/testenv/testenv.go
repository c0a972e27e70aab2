// Package testenv says which of the two test steps a test binary runs in.
//
// The everyday step is the README's `go test ./...`: every behaviour, at a size that keeps the
// whole suite to a few minutes. The long step runs the tests that replay whole benchmarks, kill
// processes mid-write or play sessions of a thousand rounds:
//
//	HIPPOCAM_LONG_TESTS=1 go test -count=1 -run '^TestLong' ./...
//
// .ci/run runs both. A long test is named TestLong… and either calls SkipUnlessLong or sizes
// itself with Long.
package testenv

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// LongEnv is the environment variable that turns the long step on.
const LongEnv = "HIPPOCAM_LONG_TESTS"

// Long reports whether this is the long step: LongEnv is set to anything but "" or "0".
func Long() bool {
	v := os.Getenv(LongEnv)
	return v != "" && v != "0"
}

// SkipUnlessLong skips t in the everyday step and says how to run it.
func SkipUnlessLong(t testing.TB) {
	t.Helper()
	if !Long() {
		t.Skipf("long test: runs in the long step (%s=1 go test -run '^TestLong' ./...; .ci/run does)", LongEnv)
	}
}

// FewerRapidChecks sets the number of cases each rapid property draws to n in the everyday step,
// unless the run gave -rapid.checks itself; the long step keeps rapid's default. Call it from
// TestMain after flag.Parse.
func FewerRapidChecks(n int) {
	f := flag.Lookup("rapid.checks")
	if f == nil || Long() {
		return
	}
	given := false
	flag.Visit(func(v *flag.Flag) { given = given || v.Name == "rapid.checks" })
	if !given {
		_ = f.Value.Set(strconv.Itoa(max(n, 1)))
	}
}

// ParallelAtLeast raises -test.parallel to n unless the command line set it: for packages whose
// tests mostly wait (on child processes, a browser, a database), so that more of them run at
// once than GOMAXPROCS would let. Call it from TestMain after flag.Parse.
func ParallelAtLeast(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); !set && f != nil && f.Value.(flag.Getter).Get().(int) < n {
		_ = f.Value.Set(strconv.Itoa(n))
	}
}
