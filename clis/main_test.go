package clis_test

import (
	"flag"
	"os"
	"testing"

	"github.com/hippocam/hippocam/internal/servetest"
	"github.com/hippocam/hippocam/internal/testenv"
)

// TestMain gives the tests one build of the hippocam binary (servetest.SharedBuild). The CLIs'
// tests mostly wait on the CLIs and on serve, so unless -parallel is given all of their
// conversations run at once, more than the default, GOMAXPROCS, would let run.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.ParallelAtLeast(6)
	os.Exit(hippocamBuild.Run(m))
}

// hippocamBuild is the one build of the hippocam binary the tests share.
var hippocamBuild servetest.SharedBuild

// hippocamBin returns the shared hippocam binary, building it on the first call.
func hippocamBin(t testing.TB) string {
	t.Helper()
	return hippocamBuild.Bin(t)
}
