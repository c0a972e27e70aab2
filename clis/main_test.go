package clis_test

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/hippocam/hippocam/internal/servetest"
)

// TestMain gives the tests one build of the hippocam binary, made by the first test that runs
// `hippocam serve` (a build costs seconds of linking) into a directory removed at the end. The
// CLIs' tests mostly wait on the CLIs and on serve, so unless -parallel is given all of their
// conversations run at once, more than the default, GOMAXPROCS, would let run.
func TestMain(m *testing.M) {
	flag.Parse()
	parallelAtLeast(6)
	dir, err := os.MkdirTemp("", "hippocam-clis-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hippocamBuild.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// hippocamBuild is the one build of the hippocam binary the tests share.
var hippocamBuild struct {
	dir  string
	once sync.Once
	bin  string
	err  error
}

// hippocamBin returns the shared hippocam binary, building it on the first call.
func hippocamBin(t testing.TB) string {
	t.Helper()
	hippocamBuild.once.Do(func() { hippocamBuild.bin, hippocamBuild.err = servetest.BuildIn(hippocamBuild.dir) })
	if hippocamBuild.err != nil {
		t.Fatal(hippocamBuild.err)
	}
	return hippocamBuild.bin
}

// parallelAtLeast raises -test.parallel to n unless the command line set it.
func parallelAtLeast(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); !set && f != nil && f.Value.(flag.Getter).Get().(int) < n {
		f.Value.Set(fmt.Sprint(n))
	}
}
