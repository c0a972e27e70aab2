package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// deskRecordings are recordings (serve --record) of a session of our own run at W = 5000 with a
// real model's answers: a capable chat model stood in as the upstream and answered every request
// Hippocam made (JANUS, PRECIP, PALIM and the main model's final answer) from the request alone
// (docs/realmodel.md tells how). The conversation is a coding agent's day on a small invoicing
// service: tools called, intents opened and closed, facts revised. The first is the current
// build's (PALIM keeping items by reference among them); the second an earlier build's, kept for
// the answers it holds that the engine rightly refused.
var deskRecordings = []string{
	filepath.Join("testdata", "desk-ledgerline.jsonl"),
	filepath.Join("testdata", "desk-ledgerline-run2.jsonl"),
}

// deskRefused lists the cases of the recording the engine rightly refuses, with a word of the
// reason each must give. The stand-in answered one request after another and carried what it had
// read in earlier requests into later answers: a file path, a rule's name, a date, a call that
// the request at hand does not show. A model sees one request; what it names must be there.
var deskRefused = map[string]string{
	"ledgerline/precip/20261205T125401.026120140Z/1": `"r.context"`,
	"ledgerline/palim/20261205T125503.626862663Z/1":  `"fin-118"`,
	"ledgerline/palim/20261205T125656.135840350Z/1":  `"invoice/csv.go"`,
	"ledgerline/palim/20261205T125710.058659021Z/1":  `"api/handlers.go"`,
}

// The real model's answers pass the validators as the engine runs them.
func TestCheckDeskCorpus(t *testing.T) {
	for _, file := range deskRecordings {
		t.Run(filepath.Base(file), func(t *testing.T) { checkDeskCorpus(t, file) })
	}
}

func checkDeskCorpus(t *testing.T, file string) {
	results := checkJSON(t, file)
	roles := map[string]int{}
	for _, c := range deskCases(t, file) {
		roles[c.Role]++
	}
	if roles["janus"] == 0 || roles["palim"] == 0 || roles["precip"] == 0 {
		t.Fatalf("cases per role %v: want JANUS, PALIM and PRECIP answers", roles)
	}
	for _, r := range results {
		reason, refused := deskRefused[r.ID]
		switch {
		case !refused && !r.Accepted:
			t.Errorf("%s refused: %v", r.ID, r.Problems)
		case refused && (r.Accepted || !strings.Contains(strings.Join(r.Problems, "; "), reason)):
			t.Errorf("%s: accepted %v, problems %v; want a refusal naming %q", r.ID, r.Accepted, r.Problems, reason)
		}
	}
}

// The same answers with an invented clause planted in them are refused, each naming it.
func TestCheckDeskCorpusPlanted(t *testing.T) {
	const planted = "On 14 August 2024 Rasmus Vang approved a refund of 7,315 euros for Kestrel Freight."
	var cases []checkCase
	for _, c := range append(deskCases(t, deskRecordings[0]), deskCases(t, deskRecordings[1])...) {
		if _, refused := deskRefused[c.ID]; refused || (c.Role != "palim" && c.Role != "precip") {
			continue
		}
		obj, ok := hippocam.JSONObject(c.Answer)
		if !ok {
			t.Fatalf("%s: no JSON object in %q", c.ID, c.Answer)
		}
		var answer map[string]any
		if err := json.Unmarshal([]byte(obj), &answer); err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		if c.Role == "precip" {
			answer["memory"] = answer["memory"].(string) + "\n" + planted
		} else {
			items, _ := answer["knowledge"].([]any)
			answer["knowledge"] = append(items, map[string]any{"fact": planted, "evaluation": "neutral"})
		}
		b, _ := json.Marshal(answer)
		c.Answer = string(b)
		cases = append(cases, c)
	}
	if len(cases) < 5 {
		t.Fatalf("only %d PALIM and PRECIP answers to plant in", len(cases))
	}
	file := filepath.Join(t.TempDir(), "planted.json")
	raw, _ := json.Marshal(cases)
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	results := checkJSON(t, file)
	for _, r := range results {
		if p := strings.ToLower(strings.Join(r.Problems, "; ")); r.Accepted || !strings.Contains(p, "14 august 2024") || !strings.Contains(p, "rasmus") {
			t.Errorf("%s with the planted clause: accepted %v, problems %v", r.ID, r.Accepted, r.Problems)
		}
	}
}

// deskCases reads the check cases of a recording.
func deskCases(t *testing.T, file string) []checkCase {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []checkCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line struct {
			Case *checkCase `json:"case"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Case != nil {
			cases = append(cases, *line.Case)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// checkJSON runs `check --json` on file and returns its results.
func checkJSON(t *testing.T, file string) []CheckResult {
	t.Helper()
	out, errOut, code := runMain(t, "check", "--json", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Results []CheckResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Results
}
