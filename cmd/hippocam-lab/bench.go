package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam/bench"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/internal/cli"
	"github.com/hippocam/hippocam/internal/progress"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

const benchUsage = `Usage:
  hippocam bench context [--quick] [--json] [--out DIR] [--context-window N] [--seed N]
                         [--policies a,b] [--workloads a,b]
        run generated workloads through every context policy with the simulated model
  hippocam bench overhead [--json] [--quick] [--postgres DSN] [--out DIR]
                          [--ttft-ms N] [--tokens-per-second R] [--steps N] [--context-window N]
                          [--provider-only] [--learn off|global|routed [--tasks N] [--route-wait D]]
        the proxy's added latency and throughput, RECALL latency on the stores, and time to
        first byte and total time at a provider's latency against a bare proxy (with --learn:
        of task starts, the first answers of new sessions, learning across tasks)
  hippocam bench learn [--suite decisions|numeric] [--quick] [--json] [--out DIR] [--streams N]
                       [--tasks N] [--seed N] [--attempts N] [--context-window N]
                       [--advisory-budget N] [--conditions a,b] [--write-stream FILE]
        generated task streams under every learning condition: reward, cost by role, memory
        over the stream, routing against the hidden sources; --write-stream only writes the
        stream of --seed as JSON Lines (for hippocam learn --stream)
`

// BenchCommand runs a benchmark, named by the word after "bench": `context` compares context
// policies on generated workloads (package bench), `overhead` measures the proxy and the stores.
type BenchCommand struct {
	// What is the benchmark: "context" or "overhead".
	What string

	// The flags of `bench overhead`.
	Overhead bench.OverheadConfig

	// The flags of `bench learn`; LearnStreamOut, when set, names the file the stream of the
	// first seed is written to instead of running it.
	Learn          bench.LearnConfig
	LearnStreamOut string

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
		return fmt.Errorf("which benchmark? context, overhead or learn\n\n%s", benchUsage)
	}
	c.What = args[0]
	switch c.What {
	case "context":
		return c.parseContext(args[1:])
	case "overhead":
		return c.parseOverhead(args[1:])
	case "learn":
		return c.parseLearn(args[1:])
	}
	return fmt.Errorf("unknown benchmark %q: context, overhead or learn", c.What)
}

// parseOverhead reads the flags of `bench overhead`.
func (c *BenchCommand) parseOverhead(args []string) error {
	fs := flag.NewFlagSet("hippocam bench overhead", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.BoolVar(&c.JSON, "json", false, `print {"proxy": […], "throughput": {…}, "recall": […], "provider": {…}} instead of Markdown`)
	fs.BoolVar(&c.Overhead.Quick, "quick", false, "small sizes: sessions of 100 and 1k messages, 100k archived messages, 12 provider steps")
	fs.StringVar(&c.Overhead.PostgresDSN, "postgres", os.Getenv("HIPPOCAM_TEST_POSTGRES"), "Postgres DSN for the RECALL row (env HIPPOCAM_TEST_POSTGRES; empty: skipped); a scratch schema is made and dropped")
	fs.StringVar(&c.Out, "out", "", "also write overhead.json and overhead.md (provider.json and provider.md with --provider-only) and the provider run's plots (provider-ttfb.svg, provider-total.svg) into this directory")
	ttft := fs.Int("ttft-ms", int(bench.DefaultProviderTTFT/time.Millisecond), "provider run: milliseconds the upstream waits before its first byte")
	fs.Float64Var(&c.Overhead.Provider.TokensPerSecond, "tokens-per-second", bench.DefaultProviderTokensPerSecond, "provider run: the upstream's output tokens per second")
	fs.DurationVar(&c.Overhead.ProviderToolTime, "tool-time", 0, "provider run: how long the replayed agent runs its tools before sending their results (0: at once)")
	fs.IntVar(&c.Overhead.ProviderSteps, "steps", 0, fmt.Sprintf("provider run: steps of the agentic workload to replay (default %d; quick: %d; at W = 16000 the whole workload is 399)", bench.DefaultProviderSteps, bench.QuickProviderSteps))
	fs.IntVar(&c.Overhead.ProviderWindow, "context-window", bench.DefaultProviderWindow, "provider run: the proxy's context window W; the workload is generated at 16 W")
	fs.BoolVar(&c.Overhead.ProviderOnly, "provider-only", false, "run only the provider run")
	fs.StringVar(&c.Overhead.ProviderJanus, "janus", string(engine.JanusBeside), "provider run: the proxy's JANUS mode, beside or gate (serve --janus)")
	fs.StringVar(&c.Overhead.Learn, "learn", "", "provider run: time task starts instead of the agentic workload's steps, with Hippocam learning across tasks in this mode (off, global or routed): the first answers of new sessions, each task ended by its outcome")
	fs.IntVar(&c.Overhead.LearnTasks, "tasks", 0, fmt.Sprintf("with --learn: how many tasks start (default %d; quick: %d)", bench.DefaultLearnTaskStarts, bench.QuickLearnTaskStarts))
	fs.DurationVar(&c.Overhead.RouteWait, "route-wait", 0, "with --learn: Hippocam's --route-wait (default: its own; negative: the first answer waits for the router as long as it takes)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.Overhead.Provider.TTFT = time.Duration(*ttft) * time.Millisecond
	if c.Overhead.Provider.Zero() {
		return fmt.Errorf("--ttft-ms and --tokens-per-second: the provider run needs some latency (the zero-latency rows measure the rest)")
	}
	c.Overhead.StartProxy, c.Overhead.StartLearningProxy = startServe, startLearningServe
	return c.Overhead.Validate()
}

// runOverhead measures the proxy and the stores and prints the report.
func (c *BenchCommand) runOverhead(ctx context.Context) error {
	cfg := c.Overhead
	if progress.IsTerminal(c.Stderr) {
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
	if c.Out != "" {
		paths, err := writeOverhead(c.Out, rep)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.Stderr, "wrote %s\n", strings.Join(paths, ", "))
	}
	if c.JSON {
		enc := json.NewEncoder(c.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	_, err = io.WriteString(c.Stdout, rep.Markdown())
	return err
}

// writeOverhead writes the report as overhead.json and overhead.md into dir (provider.json and
// provider.md for a provider-only run, so that it never replaces a full run's figures), with the
// provider run's two plots, and returns the paths written.
func writeOverhead(dir string, rep *bench.OverheadReport) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	base := "overhead"
	switch {
	case len(rep.Proxy) > 0:
	case rep.TaskStarts != nil:
		base = "task-starts-" + rep.TaskStarts.Learn
	default:
		base = "provider"
	}
	files := map[string][]byte{base + ".json": append(js, '\n'), base + ".md": []byte(rep.Markdown())}
	if ttfb, total, ok := bench.ProviderPlots(rep.Provider); ok {
		files["provider-ttfb.svg"], files["provider-total.svg"] = ttfb, total
	}
	var paths []string
	for _, name := range []string{base + ".json", base + ".md", "provider-ttfb.svg", "provider-total.svg"} {
		data, ok := files[name]
		if !ok {
			continue
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// startServe is the provider run's StartProxy: the `serve` command itself, on a free loopback
// port, with a SQLite file in a temporary directory, so that the run measures the proxy exactly
// as it is deployed (its session jobs, streaming and JANUS mode included).
func startServe(ctx context.Context, upstream string, window int, janus string) (string, func() error, error) {
	return cli.StartServe(ctx, io.Discard, nil, "--upstream", upstream, "--upstream-format", "openai",
		"--context-window", strconv.Itoa(window), "--model", sim.ModelID, "--janus", cmp.Or(janus, string(engine.JanusBeside)))
}

// startLearningServe is the task-start run's StartLearningProxy: startServe learning across tasks
// in mode learn, with --route-wait routeWait (0: serve's default; negative: unbounded).
func startLearningServe(ctx context.Context, upstream string, window int, janus, learn string, routeWait time.Duration) (string, func() error, error) {
	args := []string{"--upstream", upstream, "--upstream-format", "openai", "--context-window", strconv.Itoa(window), "--model", sim.ModelID,
		"--janus", cmp.Or(janus, string(engine.JanusBeside)), "--learn", learn}
	switch {
	case routeWait < 0:
		args = append(args, "--route-wait", "0")
	case routeWait > 0:
		args = append(args, "--route-wait", routeWait.String())
	}
	return cli.StartServe(ctx, io.Discard, nil, args...)
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

// Run runs the benchmark named at ParseFlags.
func (c *BenchCommand) Run(ctx context.Context) error {
	switch c.What {
	case "context":
		return c.runContext(ctx)
	case "overhead":
		return c.runOverhead(ctx)
	case "learn":
		return c.runLearn(ctx)
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
		if len(c.Workloads) > 0 && !slices.Contains(c.Workloads, size.Name) {
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
	if progress.IsTerminal(c.Stderr) {
		suite.Progress = c.Stderr
	}
	rep, runErr := suite.Run(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := c.emit(rep); err != nil {
		return err
	}
	return runErr
}

// report is what a bench run produces: files for --out, JSON for --json, Markdown otherwise.
type report interface {
	WriteDir(dir string) ([]string, error)
	WriteJSON(w io.Writer) error
	Markdown() string
}

// emit writes rep where the flags say: into --out (naming the files on stderr), then to stdout
// as JSON or Markdown.
func (c *BenchCommand) emit(rep report) error {
	if c.Out != "" {
		paths, err := rep.WriteDir(c.Out)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.Stderr, "wrote %s\n", strings.Join(paths, ", "))
	}
	if c.JSON {
		return rep.WriteJSON(c.Stdout)
	}
	_, err := fmt.Fprint(c.Stdout, rep.Markdown())
	return err
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
		if slices.Contains(c.Policies, p.Name) {
			out = append(out, p)
		}
	}
	for _, n := range c.Policies {
		if !slices.Contains(names, n) {
			return nil, fmt.Errorf("--policies: unknown policy %q (%s)", n, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// Close releases nothing: the benchmark keeps everything in memory.
func (c *BenchCommand) Close() error { return nil }

// parseLearn reads the flags of `bench learn`.
func (c *BenchCommand) parseLearn(args []string) error {
	fs := flag.NewFlagSet("hippocam bench learn", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	d := bench.DefaultLearnConfig()
	var conditions string
	fs.StringVar(&c.Learn.Suite, "suite", bench.SuiteDecisions, "the kind of task stream: decisions (decisions and facts) or numeric (estimates, curves, entities)")
	fs.StringVar(&c.LearnStreamOut, "write-stream", "", "write the stream of --seed (with --tasks tasks) to this JSON Lines file and run nothing")
	fs.BoolVar(&c.Learn.Quick, "quick", false, fmt.Sprintf("one stream of %d tasks and %d attempts, for CI", bench.QuickLearnTasks, bench.QuickLearnAttempts))
	fs.BoolVar(&c.JSON, "json", false, `print {"config": {…}, "streams": […], "runs": […], "summary": […], "targets": […]} instead of Markdown`)
	fs.StringVar(&c.Out, "out", "", "also write learn.json, learn.md, the plots and the streams (stream-SEED.jsonl) into this directory")
	fs.IntVar(&c.Learn.Streams, "streams", 0, fmt.Sprintf("streams to generate (default %d; quick: %d)", d.Streams, bench.QuickLearnStreams))
	fs.IntVar(&c.Learn.Tasks, "tasks", 0, fmt.Sprintf("tasks per stream (default %d; quick: %d)", d.Tasks, bench.QuickLearnTasks))
	fs.Int64Var(&c.Learn.Seed, "seed", d.Seed, "seed of the first stream; the others follow it")
	fs.IntVar(&c.Learn.Attempts, "attempts", 0, fmt.Sprintf("N, the attempts of best-of-n and lessons (default %d; quick: %d)", d.Attempts, bench.QuickLearnAttempts))
	fs.IntVar(&c.Learn.Window, "context-window", d.Window, "context window W in tokens")
	fs.IntVar(&c.Learn.AdvisoryBudget, "advisory-budget", 0, "tokens an advisory may take (default: W/4)")
	fs.StringVar(&conditions, "conditions", "", "comma-separated conditions to run (default: all; numeric suite: "+strings.Join(bench.NumericConditions, ", ")+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.Learn.Conditions = splitNames(conditions)
	return c.Learn.Validate()
}

// runLearn runs the learning benchmark and prints its report; runs that failed are reported and
// make the command fail at the end.
func (c *BenchCommand) runLearn(ctx context.Context) error {
	cfg := c.Learn
	if c.LearnStreamOut != "" {
		return c.writeLearnStream()
	}
	if progress.IsTerminal(c.Stderr) {
		cfg.Progress = progress.Bar(c.Stderr, "learn")
	}
	rep, runErr := bench.RunLearn(ctx, cfg)
	if rep == nil {
		return runErr
	}
	rep.Commit = bench.BuildRevision()
	if err := c.emit(rep); err != nil {
		return err
	}
	return runErr
}

// writeLearnStream writes the stream `bench learn` would generate from --seed, with --tasks
// tasks (the quick size with --quick), to --write-stream.
func (c *BenchCommand) writeLearnStream() error {
	n := c.Learn.Tasks
	if n == 0 {
		n = bench.DefaultLearnTasks
		if c.Learn.Quick {
			n = bench.QuickLearnTasks
		}
	}
	data, err := bench.LearnStreamData(c.Learn.Suite, c.Learn.Seed, n)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.LearnStreamOut, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(c.Stderr, "wrote %s (%s suite, seed %d, %d tasks)\n", c.LearnStreamOut, c.Learn.Suite, c.Learn.Seed, n)
	return nil
}

// splitNames reads a comma-separated list of names, without empty items.
func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
