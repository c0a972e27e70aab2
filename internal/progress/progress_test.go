package progress

import (
	"bytes"
	"strings"
	"testing"
)

// The bar is redrawn only when it or its percentage changes, and its line ends once, when done.
func TestBar(t *testing.T) {
	var b bytes.Buffer
	bar := Bar(&b, "learn")
	bar(0, 200)
	bar(1, 200) // the same bar and percentage: not redrawn
	bar(100, 200)
	bar(200, 200)
	bar(200, 200) // finished: nothing more
	out := b.String()
	if n := strings.Count(out, "\r"); n != 3 {
		t.Errorf("%d redraws, want 3: %q", n, out)
	}
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "200/200\n") {
		t.Errorf("the bar does not end once at 200/200: %q", out)
	}
	if !strings.Contains(out, "[###############...............]  50% 100/200") {
		t.Errorf("half way is not drawn half full: %q", out)
	}
}
