package replay_test

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/hippocam/hippocam/internal/servetest"
)

// TestMain builds nothing itself: the first test that runs `hippocam serve` builds the binary,
// once for every test (a build costs seconds of linking), into a directory removed at the end.
// The end-to-end tests mostly wait on child processes (node, the binary), so unless -parallel is
// given more of them run at once than the default, GOMAXPROCS, lets run.
func TestMain(m *testing.M) {
	flag.Parse()
	parallelAtLeast(4)
	dir, err := os.MkdirTemp("", "hippocam-replay-")
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
