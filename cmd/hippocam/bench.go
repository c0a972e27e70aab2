package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hippocam/hippocam/bench"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/tokenizer"
)

const benchUsage = `Usage:
  hippocam bench context [--quick] [--json] [--out DIR] [--context-window N] [--seed N]
                         [--policies a,b] [--workloads a,b]
        run generated workloads through every context policy with the simulated model
  hippocam bench overhead [--json] [--quick] [--postgres DSN]
        the proxy's added latency and throughput, and RECALL latency on the stores
`

// BenchCommand runs a benchmark, named by the word after "bench": `context` compares context
// policies on generated workloads (package bench), `overhead` measures the proxy and the stores.
type BenchCommand struct {
	// What is the benchmark: "context" or "overhead".
	What string

	// The flags of `bench overhead`.
	Overhead bench.OverheadConfig

	// The flags of `bench context`.
	Context   bench.Config
	JSON      bool
	Out       string
	Policies  []string // names to run; empty: every policy
	Workloads []string // names to run; empty: every workload

	Stdout, Stderr io.Writer
}

// ParseFlags reads the benchmark's name and its flags.
func (c *BenchCommand) ParseFlags(args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprint(c.Stderr, benchUsage)
			return flag.ErrHelp
		}
		return fmt.Errorf("which benchmark? context or overhead\n\n%s", benchUsage)
	}
	c.What = args[0]
	switch c.What {
	case "context":
		return c.parseContext(args[1:])
	case "overhead":
		return c.parseOverhead(args[1:])
	}
	return fmt.Errorf("unknown benchmark %q: context or overhead", c.What)
}

// parseOverhead reads the flags of `bench overhead`.
func (c *BenchCommand) parseOverhead(args []string) error {
	fs := flag.NewFlagSet("hippocam bench overhead", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.BoolVar(&c.JSON, "json", false, `print {"proxy": […], "throughput": {…}, "recall": […]} instead of Markdown`)
	fs.BoolVar(&c.Overhead.Quick, "quick", false, "small sizes: sessions of 100 and 1k messages, 100k archived messages")
	fs.StringVar(&c.Overhead.PostgresDSN, "postgres", os.Getenv("HIPPOCAM_TEST_POSTGRES"), "Postgres DSN for the RECALL row (env HIPPOCAM_TEST_POSTGRES; empty: skipped); a scratch schema is made and dropped")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return c.Overhead.Validate()
}

// runOverhead measures the proxy and the stores and prints the report.
func (c *BenchCommand) runOverhead(ctx context.Context) error {
	cfg := c.Overhead
	if isTerminal(c.Stderr) {
		cfg.Progress = func(stage string, done, total int) {
			fmt.Fprintf(c.Stderr, "\r%-24s %d/%d", stage, done, total)
			if done == total {
				fmt.Fprintln(c.Stderr)
			}
		}
	}
	rep, err := bench.RunOverhead(ctx, cfg)
	if err != nil {
		return err
	}
	if c.JSON {
		enc := json.NewEncoder(c.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	_, err = io.WriteString(c.Stdout, rep.Markdown())
	return err
}

// parseContext reads the flags of `bench context`.
func (c *BenchCommand) parseContext(args []string) error {
	fs := flag.NewFlagSet("hippocam bench context", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	c.Context = bench.DefaultConfig()
	var policies, workloads string
	fs.BoolVar(&c.Context.Quick, "quick", false, "small workloads, for CI: the whole run takes seconds")
	fs.BoolVar(&c.JSON, "json", false, `print {"results": […], "config": {…}} instead of Markdown tables`)
	fs.StringVar(&c.Out, "out", "", "also write results.json, results.md and SVG plots into this directory")
	fs.IntVar(&c.Context.Window, "context-window", bench.DefaultWindow, "context window W in tokens; workload sizes are multiples of it")
	fs.Int64Var(&c.Context.Seed, "seed", c.Context.Seed, "seed of the workload generators")
	fs.StringVar(&policies, "policies", "", "comma-separated policies to run (default: all)")
	fs.StringVar(&workloads, "workloads", "", "comma-separated workloads to run: agentic, fact-stream, interleaved (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.Policies, c.Workloads = splitNames(policies), splitNames(workloads)
	for _, w := range c.Workloads {
		if w != bench.NameAgentic && w != bench.NameFactStream && w != bench.NameInterleaved {
			return fmt.Errorf("--workloads: unknown workload %q (agentic, fact-stream, interleaved)", w)
		}
	}
	return c.Context.Validate()
}

func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Run runs the benchmark named at ParseFlags.
func (c *BenchCommand) Run(ctx context.Context) error {
	switch c.What {
	case "context":
		return c.runContext(ctx)
	case "overhead":
		return c.runOverhead(ctx)
	}
	return fmt.Errorf("unknown benchmark %q", c.What)
}

// runContext generates the workloads, runs every policy on each with a fresh simulated model
// and prints the report. Runs that fail are reported and make the command fail at the end.
func (c *BenchCommand) runContext(ctx context.Context) error {
	tok, err := tokenizer.Default()
	if err != nil {
		return err
	}
	policies, err := c.selectPolicies()
	if err != nil {
		return err
	}
	var workloads []*bench.Workload
	for _, size := range c.Context.Sizes() {
		if len(c.Workloads) > 0 && !contains(c.Workloads, size.Name) {
			continue
		}
		w, err := bench.Generate(size.Name, c.Context.Seed, size.Tokens, tok)
		if err != nil {
			return err
		}
		workloads = append(workloads, w)
	}
	suite := &bench.Suite{
		Config:    c.Context,
		Workloads: workloads,
		Policies:  policies,
		Env: func() (bench.Env, error) {
			model, err := openai.New(simClient(tok))
			return bench.Env{Model: model, Tok: tok, Window: c.Context.Window, Prices: c.Context.Prices}, err
		},
	}
	if isTerminal(c.Stderr) {
		suite.Progress = c.Stderr
	}
	rep, runErr := suite.Run(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if c.Out != "" {
		paths, err := rep.WriteDir(c.Out)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.Stderr, "wrote %s\n", strings.Join(paths, ", "))
	}
	if c.JSON {
		if err := rep.WriteJSON(c.Stdout); err != nil {
			return err
		}
	} else {
		fmt.Fprint(c.Stdout, rep.Markdown())
	}
	return runErr
}

// selectPolicies returns the policies named by --policies, in report order; every policy when
// none is named.
func (c *BenchCommand) selectPolicies() ([]bench.Policy, error) {
	all := bench.Policies()
	if len(c.Policies) == 0 {
		return all, nil
	}
	var out []bench.Policy
	var names []string
	for _, p := range all {
		names = append(names, p.Name)
		if contains(c.Policies, p.Name) {
			out = append(out, p)
		}
	}
	for _, n := range c.Policies {
		if !contains(names, n) {
			return nil, fmt.Errorf("--policies: unknown policy %q (%s)", n, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// Close releases nothing: the benchmark keeps everything in memory.
func (c *BenchCommand) Close() error { return nil }

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// isTerminal reports whether w is a terminal, where a progress bar redrawn in place makes sense.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
