package replay_test

import (
	"flag"
	"os"
	"testing"

	"github.com/hippocam/hippocam/internal/servetest"
	"github.com/hippocam/hippocam/internal/testenv"
)

// TestMain gives the tests one build of the hippocam binary (servetest.SharedBuild). The
// end-to-end tests mostly wait on child processes (node, the binary), so unless -parallel is
// given more of them run at once than the default, GOMAXPROCS, lets run.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.ParallelAtLeast(4)
	os.Exit(hippocamBuild.Run(m))
}

// hippocamBuild is the one build of the hippocam binary the tests share.
var hippocamBuild servetest.SharedBuild

// hippocamBin returns the shared hippocam binary, building it on the first call.
func hippocamBin(t testing.TB) string {
	t.Helper()
	return hippocamBuild.Bin(t)
}
