package hippocam_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
)

func TestParseSearchQuery(t *testing.T) {
	for _, c := range []struct {
		query string
		want  [][]string
	}{
		{"shop_owner", [][]string{{"shop", "owner"}}},
		{`  Shop-Owner  "Dana"* `, [][]string{{"shop", "owner"}, {"dana"}}},
		{`a"b OR c`, [][]string{{"a", "b"}, {"or"}, {"c"}}},
		{"ÆRØ 日本語 x86_64", [][]string{{"ærø"}, {"日本語"}, {"x86", "64"}}},
		{"ok " + strings.Repeat("z", hippocam.MaxTermBytes+1), [][]string{{"ok"}}},
	} {
		q, err := hippocam.ParseSearchQuery(c.query)
		if err != nil {
			t.Errorf("%q: %v", c.query, err)
			continue
		}
		if !slices.EqualFunc(q.Phrases, c.want, slices.Equal[[]string]) {
			t.Errorf("%q: phrases %q, want %q", c.query, q.Phrases, c.want)
		}
	}
	for _, q := range []string{"", " \t\n", "* - ( ) \"", "\x00\xff", strings.Repeat("w ", hippocam.MaxSearchTerms+1)} {
		if _, err := hippocam.ParseSearchQuery(q); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("%q: err = %v, want %s", q, err, hippocam.EINVALID)
		}
	}
}

func TestSearchQueryMatches(t *testing.T) {
	q, _ := hippocam.ParseSearchQuery("shop_owner dana")
	for text, want := range map[string]bool{
		"The SHOP OWNER is Dana.":           true,
		"dana; shop-owner":                  true,
		"the owner of the shop is Dana":     false,
		"shop owner":                        false,
		"shopowner dana":                    false,
		"shop\n\nowner\t(dana)":             true,
		"invalid \xff shop \xfe owner dana": true,
	} {
		if got := q.Matches(text); got != want {
			t.Errorf("Matches(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestSearchQuerySnippet(t *testing.T) {
	q, _ := hippocam.ParseSearchQuery("needle")
	if got := q.Snippet("a short\ttext\nwith the needle"); got != "a short text with the needle" {
		t.Errorf("short text: %q", got)
	}
	long := strings.Repeat("ünïcödé wörds ", 40) + "the NEEDLE sits here " + strings.Repeat("mörë ", 80)
	got := q.Snippet(long)
	if !utf8.ValidString(got) || !strings.Contains(got, "NEEDLE") || len(got) > 220 || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") {
		t.Errorf("long text: %q", got)
	}
	if got := q.Snippet(strings.Repeat("hay ", 100)); !strings.HasPrefix(got, "hay hay") || !strings.HasSuffix(got, "…") {
		t.Errorf("no match: %q, want the start of the text", got)
	}
}
