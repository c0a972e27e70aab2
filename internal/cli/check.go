package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
)

// CheckCommand runs recorded component answers through the engine's parsers and validators and
// reports, case by case, whether the engine would accept each.
type CheckCommand struct {
	File string
	JSON bool

	Stdout, Stderr io.Writer
	cases          []checkCase
}

// checkCase is one recorded answer: the request's messages in the chat-completions shape (the
// role prompt and instruction left out), the span PALIM or PRECIP consolidated as inclusive
// indices into them, the stack JANUS judged, and the model's text.
type checkCase struct {
	ID       string            `json:"id"`
	Role     string            `json:"role"`
	Messages []json.RawMessage `json:"messages"`
	Span     []int             `json:"span"`
	Stack    json.RawMessage   `json:"stack"`
	Answer   string            `json:"answer"`
}

// CheckResult is the verdict on one case.
type CheckResult struct {
	ID       string   `json:"id"`
	Accepted bool     `json:"accepted"`
	Problems []string `json:"problems"`
}

// ParseFlags reads the flags and the cases file: a JSON array of cases, or a recording of `serve
// --record` (JSON Lines: the lines that carry a case are checked, the others skipped), told apart
// by the file's first character. A file that cannot be read or is neither is a usage error
// (exit status 2).
func (c *CheckCommand) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("hippocam check", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.BoolVar(&c.JSON, "json", false, `print one JSON object {"results": [...]} instead of one line per case`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("one FILE of cases is required")
	}
	c.File = fs.Arg(0)
	raw, err := os.ReadFile(c.File)
	if err != nil {
		return err
	}
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] == '[' {
		if err := json.Unmarshal(raw, &c.cases); err != nil {
			return fmt.Errorf("%s: not a JSON array of cases: %w", c.File, err)
		}
		return nil
	}
	c.cases, err = recordedCases(raw)
	if err != nil {
		return fmt.Errorf("%s: not a JSON array of cases nor a recording: %w", c.File, err)
	}
	return nil
}

// recordedCases returns the cases of a recording's lines, in order: every line is a recorded
// exchange (a JSON object naming its call's role); blank lines are skipped, and so are exchanges
// without a case (the main model's calls, a failed call).
func recordedCases(raw []byte) ([]checkCase, error) {
	var cases []checkCase
	n := 0
	for len(raw) > 0 {
		n++
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var l struct {
			Role string     `json:"role"`
			Case *checkCase `json:"case"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if l.Role == "" {
			return nil, fmt.Errorf("line %d: not a recorded exchange (no role)", n)
		}
		if l.Case != nil {
			cases = append(cases, *l.Case)
		}
	}
	return cases, nil
}

// Run checks every case and prints the results: one JSON object per line, or with --json one
// object holding them all. Refused answers are results, not failures.
func (c *CheckCommand) Run(context.Context) error {
	results := make([]CheckResult, 0, len(c.cases))
	for i := range c.cases {
		problems := checkOne(&c.cases[i])
		results = append(results, CheckResult{ID: c.cases[i].ID, Accepted: len(problems) == 0, Problems: problems})
	}
	enc := json.NewEncoder(c.Stdout)
	enc.SetEscapeHTML(false)
	if c.JSON {
		return enc.Encode(struct {
			Results []CheckResult `json:"results"`
		}{results})
	}
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// Close does nothing: check holds no resources.
func (c *CheckCommand) Close() error { return nil }

// checkOne returns the problems the engine would find with one case's answer.
func checkOne(k *checkCase) []string {
	msgs, err := checkMessages(k.Messages)
	if err != nil {
		return []string{err.Error()}
	}
	stack, err := checkStack(k.Stack)
	if err != nil {
		return []string{err.Error()}
	}
	role := hippocam.CallRole(k.Role)
	lo := 0
	if role != hippocam.CallJanus {
		if len(k.Span) != 2 || k.Span[1] != len(msgs)-1 || k.Span[0] > k.Span[1] || k.Span[0] < 0 {
			return []string{fmt.Sprintf("span %v: want [first, last] with last the final message (%d)", k.Span, len(msgs)-1)}
		}
		lo = k.Span[0]
	}
	if problems := engine.Check(role, msgs, lo, stack, k.Answer); len(problems) > 0 {
		return problems
	}
	return []string{}
}

// checkMessages reads chat-completions messages as the proxy reads a request's.
func checkMessages(raw []json.RawMessage) ([]hippocam.Message, error) {
	body, err := json.Marshal(struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
	}{"check", raw})
	if err != nil {
		return nil, err
	}
	conv, _, err := wire.ReadChatRequest(body)
	if err != nil {
		return nil, fmt.Errorf("messages: %s", hippocam.ErrorMessage(err))
	}
	return append(conv.Framing, conv.Messages...), nil
}

// checkStack reads a stack given as intents ({"label", "done"}) or as labels, outermost first.
func checkStack(raw json.RawMessage) (hippocam.IntentStack, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var stack hippocam.IntentStack
	if json.Unmarshal(raw, &stack) == nil {
		return stack, nil
	}
	var labels []string
	if err := json.Unmarshal(raw, &labels); err != nil {
		return nil, fmt.Errorf("stack: want a list of intents or labels")
	}
	for _, l := range labels {
		stack = append(stack, hippocam.Intent{Label: l, Done: "it is finished"})
	}
	return stack, nil
}
