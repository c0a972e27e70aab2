package viewer_test

import (
	"flag"
	"os"
	"testing"

	"github.com/hippocam/hippocam/internal/testenv"
)

// TestMain stops the Chromium the browser tests share. The browser tests mostly wait (on the
// browser, on the page's requests), so unless -parallel is given they run more of them at once
// than the default, GOMAXPROCS, lets run.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.ParallelAtLeast(3)
	code := m.Run()
	stopChromium()
	os.Exit(code)
}
