package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCases runs the fixture through the command: a PALIM answer that resolves a relative
// date, writes a unit and numbers another way and carries an identifier over from the context is
// accepted; the same answer with an invented clause, a JANUS answer whose exit condition cannot
// hold and an answer without JSON are refused, each with its reason.
func TestCheckCases(t *testing.T) {
	file := filepath.Join("testdata", "check-cases.json")
	want := map[string]string{ // id -> a problem it must name ("" when accepted)
		"palim-derived":  "",
		"palim-invented": `"3 March 2019"`,
		"janus-skip":     "",
		"janus-never":    `"never" can never hold`,
		"palim-no-json":  "no JSON object",
	}
	verify := func(t *testing.T, results []CheckResult) {
		t.Helper()
		if len(results) != len(want) {
			t.Fatalf("%d results, want %d", len(results), len(want))
		}
		for _, r := range results {
			problem, ok := want[r.ID]
			switch {
			case !ok:
				t.Errorf("unexpected case %q", r.ID)
			case problem == "" && (!r.Accepted || len(r.Problems) > 0):
				t.Errorf("%s refused: %v", r.ID, r.Problems)
			case problem != "" && (r.Accepted || !strings.Contains(strings.Join(r.Problems, "; "), problem)):
				t.Errorf("%s: accepted %v, problems %v; want a refusal naming %s", r.ID, r.Accepted, r.Problems, problem)
			}
		}
	}
	t.Run("Lines", func(t *testing.T) {
		out, errOut, code := runMain(t, "check", file)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var results []CheckResult
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var r CheckResult
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			if r.Problems == nil {
				t.Errorf("%s: problems is null, want a list", r.ID)
			}
			results = append(results, r)
		}
		verify(t, results)
	})
	t.Run("JSON", func(t *testing.T) {
		out, errOut, code := runMain(t, "check", "--json", file)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var doc struct {
			Results []CheckResult `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		verify(t, doc.Results)
	})
	// The same cases in a recording of serve --record: the lines without a case (a main-model
	// call, a failed call) and blank lines are skipped; the results come in the file's order.
	t.Run("Recording", func(t *testing.T) {
		rec := filepath.Join("testdata", "check-recording.jsonl")
		out, errOut, code := runMain(t, "check", "--json", rec)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var doc struct {
			Results []CheckResult `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		verify(t, doc.Results)
		arr, _, _ := runMain(t, "check", "--json", file)
		if out != arr {
			t.Errorf("the recording's results differ from the array's:\n%s\n%s", out, arr)
		}
	})
}

func TestCheckUnreadable(t *testing.T) {
	dir := t.TempDir()
	notArray := filepath.Join(dir, "cases.json")
	if err := os.WriteFile(notArray, []byte(`{"id":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	badLine := filepath.Join(dir, "rec.jsonl")
	if err := os.WriteFile(badLine, []byte(`{"role":"agent","time":"2026-12-05T10:00:00Z"}`+"\n{\"role\":\"janus\", \"case\": \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"Missing":      {"check", filepath.Join(dir, "absent.json")},
		"NotArray":     {"check", notArray},
		"BrokenRecord": {"check", badLine},
		"NoFile":       {"check"},
		"TwoFiles":     {"check", notArray, notArray},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, code := runMain(t, args...); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
		})
	}
}
