package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hippocam/hippocam"
)

// WriteJSON writes r as one JSON object on one line: {"results": […], "config": {…}}.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// Markdown renders r: the run's settings, an overview of accuracy per workload and policy, then
// one table per workload with every figure of every policy.
func (r *Report) Markdown() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "# Context benchmark\n\n")
	fmt.Fprintf(&b, "Simulated model (docs/sim.md), W = %s tokens, seed %d%s. Prices in USD per million tokens: uncached input %g, cached input %g, output %g.\n\n",
		thousands(int64(c.Window)), c.Seed, map[bool]string{true: ", quick sizes"}[c.Quick], c.Prices.Input, c.Prices.CachedInput, c.Prices.Output)
	r.overview(&b)
	for _, shape := range c.Workloads {
		fmt.Fprintf(&b, "\n## %s %s\n\n%s content tokens (%.1f W) in %d messages, %d questions.\n\n",
			shape.Name, shape.Variant, thousands(int64(shape.LengthTokens)), float64(shape.LengthTokens)/float64(max(c.Window, 1)), shape.Messages, shape.Questions)
		b.WriteString("| policy | accuracy | stale | invented | missed | largest request | input | cached input | uncached input | uncached / new content | output | cost USD | USD per right answer | calls | recall calls / question | engine ms |\n")
		b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n")
		for _, res := range r.Results {
			if res.Workload == shape.Name && res.Variant == shape.Variant {
				b.WriteString(res.markdownRow())
			}
		}
	}
	return b.String()
}

// overview is a table of accuracy: one row per policy, one column per workload.
func (r *Report) overview(b *strings.Builder) {
	shapes := r.Config.Workloads
	if len(shapes) == 0 {
		return
	}
	b.WriteString("## Accuracy\n\n| policy |")
	for _, s := range shapes {
		fmt.Fprintf(b, " %s %s |", s.Name, s.Variant)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(shapes)) + "\n")
	for _, p := range r.policies() {
		fmt.Fprintf(b, "| %s |", p)
		for _, s := range shapes {
			cell := "–"
			if res := r.find(s.Name, s.Variant, p); res != nil && res.Error != "" {
				cell = "failed"
			} else if res != nil {
				cell = percent(res.Accuracy)
			}
			fmt.Fprintf(b, " %s |", cell)
		}
		b.WriteString("\n")
	}
}

// policies lists the policies of r in the order they ran.
func (r *Report) policies() []string {
	if len(r.Config.Policies) > 0 {
		return r.Config.Policies
	}
	var out []string
	for _, res := range r.Results {
		if !slices.Contains(out, res.Policy) {
			out = append(out, res.Policy)
		}
	}
	return out
}

func (r *Report) find(workload, variant, policy string) *Result {
	for _, res := range r.Results {
		if res.Workload == workload && res.Variant == variant && res.Policy == policy {
			return res
		}
	}
	return nil
}

// markdownRow is one row of a workload's table.
func (r *Result) markdownRow() string {
	if r.Error != "" {
		return fmt.Sprintf("| %s | failed: %s |%s\n", r.Policy, strings.ReplaceAll(r.Error, "|", "\\|"), strings.Repeat(" |", 14))
	}
	largest := thousands(int64(r.MaxRequestTokens))
	if r.Overflowed {
		largest += fmt.Sprintf(" (> W from step %d)", r.OverflowStep)
	}
	perRight := "–"
	if r.CostPerCorrectUSD != nil {
		perRight = fmt.Sprintf("%.5f", *r.CostPerCorrectUSD)
	}
	return fmt.Sprintf("| %s | %s (%d/%d) | %d | %d | %d | %s | %s | %s | %s | %.2f× | %s | %.4f | %s | %s | %.2f | %.0f |\n",
		r.Policy, percent(r.Accuracy), r.Right, r.Questions, r.Stale, r.Invented, r.Missed, largest,
		thousands(r.InputTokens), thousands(r.CachedInputTokens), thousands(r.UncachedInputTokens), r.UncachedPerNewContent,
		thousands(r.OutputTokens), r.CostUSD, perRight, callsText(r.Calls), r.RecallPerQuestion, r.EngineMillis)
}

// callsText is "agent 70 · janus 65 · precip 20", roles in name order.
func callsText(calls map[hippocam.CallRole]int) string {
	roles := make([]string, 0, len(calls))
	for role := range calls {
		roles = append(roles, string(role))
	}
	sort.Strings(roles)
	parts := make([]string, len(roles))
	for i, role := range roles {
		parts[i] = fmt.Sprintf("%s %d", role, calls[hippocam.CallRole(role)])
	}
	return strings.Join(parts, " · ")
}

func percent(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// thousands writes n with comma separators: 1,234,567.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// WriteDir writes r into dir (created if missing): results.json (indented), results.md and the
// plots that r has data for: uncached.svg (cumulative uncached input over the steps of the
// largest agentic workload), accuracy.svg (accuracy against fact-stream length) and cost.svg
// (cost per right answer). It returns the paths written.
func (r *Report) WriteDir(dir string) ([]string, error) {
	files, err := reportFiles(r, "results", r.Markdown())
	if err != nil {
		return nil, err
	}
	if svg, ok := UncachedPlot(r.Results, NameAgentic); ok {
		files = append(files, file{"uncached.svg", svg})
	}
	if svg, ok := AccuracyPlot(r.Results, NameFactStream); ok {
		files = append(files, file{"accuracy.svg", svg})
	}
	if svg, ok := CostPlot(r.Results, r.policies()); ok {
		files = append(files, file{"cost.svg", svg})
	}
	return writeFiles(dir, files)
}

// file is one file a report writes.
type file struct {
	name string
	data []byte
}

// reportFiles is a report's NAME.json (indented) and NAME.md.
func reportFiles(r any, name, markdown string) ([]file, error) {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode results: %w", err)
	}
	return []file{{name + ".json", append(js, '\n')}, {name + ".md", []byte(markdown)}}, nil
}

// writeFiles writes files into dir (created if missing) and returns their paths.
func writeFiles(dir string, files []file) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return paths, fmt.Errorf("write %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}
