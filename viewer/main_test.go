package viewer_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain stops the Chromium the browser tests share. The browser tests mostly wait (on the
// browser, on the page's requests), so unless -parallel is given they run more of them at once
// than the default, GOMAXPROCS, lets run.
func TestMain(m *testing.M) {
	flag.Parse()
	parallelAtLeast(3)
	code := m.Run()
	stopChromium()
	os.Exit(code)
}

// parallelAtLeast raises -test.parallel to n unless the command line set it.
func parallelAtLeast(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); !set && f != nil && f.Value.(flag.Getter).Get().(int) < n {
		f.Value.Set(fmt.Sprint(n))
	}
}
