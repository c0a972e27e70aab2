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

func TestPlaceSessions(t *testing.T) {
	info := func(id string, msgs int, c *hippocam.Client) hippocam.SessionInfo {
		return hippocam.SessionInfo{ID: id, Messages: msgs, Client: c}
	}
	list := []hippocam.SessionInfo{
		// Claude Code: a conversation, its quota check, its session namer and two subagents, one
		// started by the other.
		info("cc-sub2", 4, &hippocam.Client{Title: "Find the tests", Conversation: "cc", Agent: "a2", Parent: "a1", Kind: hippocam.ClientSubagent}),
		info("cc-main", 40, &hippocam.Client{Title: "Why does the build fail?", Conversation: "cc"}),
		info("cc-quota", 2, &hippocam.Client{Title: "quota", Conversation: "cc"}),
		info("cc-title", 2, &hippocam.Client{Title: "Why does the build fail?", Conversation: "cc", Kind: hippocam.ClientTitle}),
		info("cc-sub1", 6, &hippocam.Client{Title: "Explore the build", Conversation: "cc", Agent: "a1", Kind: hippocam.ClientSubagent}),
		// opencode without session headers: the title request joins by title.
		info("oc-title", 2, &hippocam.Client{Title: "Rename the flag", Kind: hippocam.ClientTitle}),
		info("oc-main", 8, &hippocam.Client{Title: "Rename the flag"}),
		// A fork joins its origin's group; a session of old has no client record.
		{ID: "oc-main~2", Messages: 5, Client: &hippocam.Client{Title: "Rename the flag"}, Fork: &hippocam.Fork{From: "oc-main", At: 2}},
		info("old", 3, nil),
		// A title request whose conversation is not listed stands alone.
		info("lone-title", 2, &hippocam.Client{Title: "Something else", Kind: hippocam.ClientTitle}),
		// Codex: the main thread, and a spawned one naming the main thread as its parent.
		info("cx-main", 10, &hippocam.Client{Title: "Add a flag", Conversation: "cx"}),
		info("cx-review", 3, &hippocam.Client{Title: "Review", Conversation: "cx", Kind: "review"}),
		info("cx-child", 3, &hippocam.Client{Title: "Do part", Conversation: "cx", Agent: "t2", Parent: "cx", Kind: hippocam.ClientSubagent}),
	}
	want := map[string]hippocam.ClientPlace{
		"cc-sub2":    {Group: "cc", Parent: "cc-sub1"},
		"cc-main":    {Group: "cc"},
		"cc-quota":   {Group: "cc"},
		"cc-title":   {Group: "cc", Parent: "cc-main"},
		"cc-sub1":    {Group: "cc", Parent: "cc-main"},
		"oc-title":   {Group: "oc-main", Parent: "oc-main"},
		"oc-main":    {Group: "oc-main"},
		"oc-main~2":  {Group: "oc-main"},
		"old":        {Group: "old"},
		"lone-title": {Group: "lone-title"},
		"cx-main":    {Group: "cx"},
		"cx-review":  {Group: "cx", Parent: "cx-main"},
		"cx-child":   {Group: "cx", Parent: "cx-main"},
	}
	got := hippocam.PlaceSessions(list)
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: place = %+v, want %+v", id, got[id], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d places, want %d", len(got), len(want))
	}
}
