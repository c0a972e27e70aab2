package hippocam_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
)

func TestTitle(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"Empty", "", ""},
		{"Spaces", " \n\t\n", ""},
		{"FirstLine", "\n  Fix the login bug  \nthen deploy", "Fix the login bug"},
		{"CRLF", "Fix it\r\nnow", "Fix it"},
		{"Exact", strings.Repeat("a", 80), strings.Repeat("a", 80)},
		{"WordBoundary", strings.Repeat("word ", 20), strings.TrimSpace(strings.Repeat("word ", 16)) + "…"},
		{"NoSpace", strings.Repeat("x", 100), strings.Repeat("x", 79) + "…"},
		{"Unicode", strings.Repeat("é", 100), strings.Repeat("é", 79) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hippocam.Title(tt.text)
			if got != tt.want {
				t.Errorf("Title = %q, want %q", got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > hippocam.TitleRunes {
				t.Errorf("Title has %d characters, more than %d", n, hippocam.TitleRunes)
			}
		})
	}
}
