package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every row of the traceability table (prompts.go) points at a section of a prompt that still
// holds its phrase, and every part of appendix B.2 has rows.
func TestPromptRules(t *testing.T) {
	heading := regexp.MustCompile(`(?m)^# (.*)$`)
	sections := map[string]map[string]string{} // file -> heading -> text, white space collapsed
	files, err := filepath.Glob("prompts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("prompts: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		secs := map[string]string{}
		idx := heading.FindAllStringSubmatchIndex(text, -1)
		for i, m := range idx {
			end := len(text)
			if i+1 < len(idx) {
				end = idx[i+1][0]
			}
			secs[text[m[2]:m[3]]] = strings.Join(strings.Fields(text[m[1]:end]), " ")
		}
		sections[filepath.Base(f)] = secs
	}
	parts := map[string]int{}
	for _, r := range promptRules {
		parts[strings.Fields(r.part)[0]]++
		secs, ok := sections[r.file]
		if !ok {
			t.Errorf("%s %q: no prompt file %s", r.part, r.rule, r.file)
			continue
		}
		sec, ok := secs[r.section]
		if !ok {
			t.Errorf("%s %q: %s has no section %q", r.part, r.rule, r.file, r.section)
			continue
		}
		if !strings.Contains(sec, strings.Join(strings.Fields(r.says), " ")) {
			t.Errorf("%s %q: section %q of %s no longer says %q", r.part, r.rule, r.section, r.file, r.says)
		}
	}
	for _, p := range []string{"B.2.1", "B.2.2", "B.2.3", "B.2.4"} {
		if parts[p] == 0 {
			t.Errorf("no rule of %s in the table", p)
		}
	}
}
