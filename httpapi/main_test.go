package httpapi

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs the package's tests with every pooled request body overwritten once it is
// released (poisonBodies), so that a test fails if anything kept a piece of one. Benchmarks run
// without: the overwriting would be timed.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		poisonBodies.Store(true)
	}
	os.Exit(m.Run())
}
