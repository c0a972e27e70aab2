package engine_test

import (
	"flag"
	"os"
	"testing"

	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/internal/testenv"
)

// TestMain runs the package's tests with rapid's properties drawing 20 cases each outside the
// long step (internal/testenv), and with every step checking what it keeps from call to call
// and from step to step (request prefixes, sizes: share.go) against what it would work out
// afresh; a difference panics. Benchmarks run without: the checks would be timed.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.FewerRapidChecks(20)
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		engine.CheckKept(true)
	}
	os.Exit(m.Run())
}
