package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// TestDeskConv turns a desk run (claimed requests + answers) into check cases. Scratch, not committed.
func TestDeskConv(t *testing.T) {
	dir := os.Getenv("DESK")
	if dir == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(filepath.Join(dir, "claimed", "*.json"))
	sort.Strings(files)
	var out []map[string]any
	for _, f := range files {
		var e struct {
			ID, Role string
			Body     struct {
				Messages []json.RawMessage `json:"messages"`
			} `json:"body"`
		}
		raw, _ := os.ReadFile(f)
		json.Unmarshal(raw, &e)
		if e.Role != "janus" && e.Role != "palim" && e.Role != "precip" {
			continue
		}
		araw, err := os.ReadFile(filepath.Join(dir, "a", e.ID+".json"))
		if err != nil {
			continue
		}
		var ans struct{ Text string }
		json.Unmarshal(araw, &ans)
		all := e.Body.Messages
		var last struct{ Content string }
		json.Unmarshal(all[len(all)-1], &last)
		shown := all[2 : len(all)-1]
		msgs, err := checkMessages(shown)
		if err != nil {
			t.Fatalf("%s: %v", e.ID, err)
		}
		c := map[string]any{"id": e.ID, "role": e.Role, "messages": shown, "answer": ans.Text}
		instr := last.Content
		switch e.Role {
		case "janus":
			c["stack"] = parseStack(instr)
		default:
			found := -1
			for lo := 0; lo < len(msgs); lo++ {
				sl := engine.SpanLine(msgs, lo, len(msgs))
				if sl != "" && strings.Contains(instr, sl) {
					found = lo
					break
				}
			}
			if found < 0 {
				t.Logf("%s: span not found", e.ID)
				continue
			}
			c["span"] = []int{found, len(msgs) - 1}
			if e.Role == "precip" {
				var st []map[string]string
				for _, line := range strings.Split(instr, "\n") {
					if strings.HasPrefix(line, engine.ChainPrefix) {
						for _, l := range strings.Split(strings.TrimPrefix(line, engine.ChainPrefix), engine.ChainSeparator) {
							st = append(st, map[string]string{"label": l, "done": ""})
						}
					}
				}
				for _, line := range strings.Split(instr, "\n") {
					for i := range st {
						p := "Exit condition of \"" + st[i]["label"] + "\": "
						if strings.HasPrefix(line, p) {
							st[i]["done"] = strings.TrimPrefix(line, p)
						}
					}
				}
				c["stack"] = st
			}
		}
		out = append(out, c)
	}
	b, _ := json.MarshalIndent(out, "", " ")
	os.WriteFile(os.Getenv("OUT"), b, 0o644)
	t.Logf("%d cases", len(out))
	_ = hippocam.CallJanus
}

func parseStack(instr string) []map[string]string {
	var st []map[string]string
	in := false
	for _, line := range strings.Split(instr, "\n") {
		if strings.HasPrefix(line, "Current stack") {
			in = true
			continue
		}
		if !in {
			continue
		}
		tl := strings.TrimSpace(line)
		if !strings.HasPrefix(tl, "- ") {
			break
		}
		tl = strings.TrimPrefix(tl, "- ")
		label, done := tl, ""
		if i := strings.Index(tl, " (done when: "); i >= 0 {
			label, done = tl[:i], strings.TrimSuffix(tl[i+len(" (done when: "):], ")")
		}
		st = append(st, map[string]string{"label": label, "done": done})
	}
	return st
}
