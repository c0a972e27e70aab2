package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// handmadeReport has two policies on an agentic workload and a fact stream of three lengths; one
// run failed and one overflowed.
func handmadeReport() *Report {
	res := func(workload, variant, policy string, length, right int, cost float64) *Result {
		r := &Result{Workload: workload, Variant: variant, Policy: policy, LengthTokens: length, Window: 8000, Calls: map[hippocam.CallRole]int{}, NewContentTokens: int64(length)}
		r.Usage = usageOf(map[string][4]float64{"agent": {float64(3 * length), float64(length), 200, cost}})
		for i := range 10 {
			r.UncachedByStep = append(r.UncachedByStep, int64((i+1)*length/5))
		}
		r.Steps = 10
		qs := make([]Question, 4)
		answers := make([]string, 4)
		for i := range qs {
			qs[i] = Question{Key: "k", Want: "k := 1", Stale: []string{"k := 0"}}
			answers[i] = map[bool]string{true: "k := 1", false: "k := 0"}[i < right]
		}
		r.score(qs, answers)
		return r
	}
	full := res(NameAgentic, "128k", "full", 128000, 4, 0.2)
	full.Overflowed, full.OverflowStep, full.MaxRequestTokens = true, 3, 130000
	rep := &Report{Results: []*Result{
		res(NameAgentic, "128k", "hippocam", 128000, 4, 0.1), full,
		res(NameFactStream, "16k", "hippocam", 16000, 4, 0.01), res(NameFactStream, "16k", "full", 16000, 3, 0.02),
		res(NameFactStream, "32k", "hippocam", 32000, 3, 0.02), {Workload: NameFactStream, Variant: "32k", Policy: "full", LengthTokens: 32000, Error: "line 7: boom | bang"},
		res(NameFactStream, "64k", "hippocam", 64000, 2, 0.04), res(NameFactStream, "64k", "full", 64000, 0, 0.05),
	}}
	rep.Config = ReportConfig{Config: DefaultConfig(), Policies: []string{"hippocam", "full"}, Workloads: []WorkloadShape{
		{NameAgentic, "128k", 128000, 400, 4}, {NameFactStream, "16k", 16000, 40, 4}, {NameFactStream, "32k", 32000, 60, 4}, {NameFactStream, "64k", 64000, 90, 4},
	}}
	return rep
}

func TestReportJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := handmadeReport().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []map[string]any `json:"results"`
		Config  map[string]any   `json:"config"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != 8 || doc.Config["context_window"] != float64(DefaultWindow) || doc.Config["policies"] == nil {
		t.Fatalf("%d results, config %v", len(doc.Results), doc.Config)
	}
	for _, field := range []string{"workload", "policy", "length_tokens", "accuracy", "stale", "invented", "missed", "max_request_tokens", "input_tokens", "cached_input_tokens", "uncached_input_tokens", "output_tokens", "new_content_tokens", "cost_usd", "calls", "recall_calls", "overflowed", "engine_ms", "recall_per_question", "window"} {
		if _, ok := doc.Results[0][field]; !ok {
			t.Errorf("results[0] has no %q", field)
		}
	}
	if a := doc.Results[0]["accuracy"].(float64); a < 0 || a > 1 {
		t.Errorf("accuracy %v", a)
	}
	if calls := doc.Results[0]["calls"].(map[string]any); calls["agent"] != float64(1) {
		t.Errorf("calls %v", calls)
	}
}

func TestReportMarkdown(t *testing.T) {
	md := handmadeReport().Markdown()
	for _, want := range []string{
		"## agentic 128k", "## fact-stream 64k",
		"| hippocam | 100% (4/4) |", "130,000 (> W from step 3)", "| full | failed: line 7: boom \\| bang |",
		"| full | 100% | 75% | failed | 0% |", "agent 1",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// every row of a table has as many cells as its header (an escaped pipe is no separator)
	header := 0
	for i, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "|") {
			header = 0
			continue
		}
		n := strings.Count(strings.ReplaceAll(l, "\\|", ""), "|")
		if header == 0 {
			header = n
		} else if n != header {
			t.Errorf("line %d has %d separators, its header %d: %q", i+1, n, header, l)
		}
	}
}

func TestReportWriteDir(t *testing.T) {
	dir := t.TempDir()
	paths, err := handmadeReport().WriteDir(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range paths {
		names[filepath.Base(p)] = true
	}
	for _, n := range []string{"results.json", "results.md", "uncached.svg", "accuracy.svg", "cost.svg"} {
		if !names[n] {
			t.Fatalf("wrote %v, not %s", paths, n)
		}
	}
	js, err := os.ReadFile(filepath.Join(dir, "out", "results.json"))
	if err != nil || !json.Valid(js) {
		t.Fatalf("results.json: %v", err)
	}
}

// svgElements parses an SVG document with encoding/xml and counts its elements by name; it fails
// the test when the document is not well formed or not SVG.
func svgElements(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	count := map[string]int{}
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("malformed SVG: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Space + " " + se.Name.Local
			}
			count[se.Name.Local]++
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Fatalf("root element %q", root)
	}
	return count
}

func TestPlots(t *testing.T) {
	rep := handmadeReport()
	t.Run("Uncached", func(t *testing.T) {
		svg, ok := UncachedPlot(rep.Results, NameAgentic)
		n := svgElements(t, svg)
		if !ok || n["polyline"] != 2 || n["circle"] != 1 || !bytes.Contains(svg, []byte("full: request exceeds W")) {
			t.Fatalf("ok %v, elements %v", ok, n)
		}
	})
	t.Run("Accuracy", func(t *testing.T) {
		svg, ok := AccuracyPlot(rep.Results, NameFactStream)
		n := svgElements(t, svg)
		// hippocam has 3 points, full 2 and one failed run (a cross of two lines).
		if !ok || n["polyline"] != 2 || n["circle"] != 5 || !bytes.Contains(svg, []byte("run failed")) || !bytes.Contains(svg, []byte("64k (8 W)")) {
			t.Fatalf("ok %v, elements %v", ok, n)
		}
	})
	t.Run("Cost", func(t *testing.T) {
		svg, ok := CostPlot(rep.Results, rep.policies())
		n := svgElements(t, svg)
		// four bars and two legend boxes, plus the background; full has a right answer on both.
		if !ok || n["rect"] != 1+4+2 || !bytes.Contains(svg, []byte("fact-stream (all lengths)")) {
			t.Fatalf("ok %v, elements %v", ok, n)
		}
	})
	t.Run("NoData", func(t *testing.T) {
		if _, ok := UncachedPlot(nil, NameAgentic); ok {
			t.Error("uncached plot without results")
		}
		if _, ok := AccuracyPlot(rep.Results, NameInterleaved); ok {
			t.Error("accuracy plot without results")
		}
		if _, ok := CostPlot(nil, nil); ok {
			t.Error("cost plot without results")
		}
	})
	t.Run("Escaping", func(t *testing.T) {
		r := *rep.Results[0]
		r.Policy = `a<b & "c"`
		svg, _ := UncachedPlot([]*Result{&r}, NameAgentic)
		svgElements(t, svg)
	})
}
