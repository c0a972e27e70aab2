package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/hippocam/hippocam/bench/learnstream"
	"github.com/hippocam/hippocam/memory/library"
)

// LearnCommand runs a stream of tasks under each learning condition, offline, with the
// simulated model (docs/learning.md).
type LearnCommand struct {
	Stream     string
	Conditions []string
	Attempts   int
	Window     int
	Budget     int
	JSON       bool
	// LessonsOut, when set, receives the lessons file (Markdown, library.ExportLessons) the
	// lessons condition learned, so that it can be read, edited and imported.
	LessonsOut string

	Stdout, Stderr io.Writer
}

// learnReport is `hippocam learn --json`'s output.
type learnReport struct {
	Results []*learnstream.Result `json:"results"`
}

// ParseFlags reads the learn flags.
func (c *LearnCommand) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("hippocam learn", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.StringVar(&c.Stream, "stream", "", "task stream (JSON Lines, docs/sim.md part 2)")
	conditions := fs.String("conditions", strings.Join(learnstream.Conditions(), ","), "conditions to run, comma-separated")
	fs.IntVar(&c.Attempts, "attempts", learnstream.DefaultAttempts, "attempts per task N for best-of-n, lessons and lessons-append-only")
	fs.IntVar(&c.Window, "context-window", learnstream.DefaultWindow, "context window W of every task's session, in tokens")
	fs.IntVar(&c.Budget, "advisory-budget", 0, "most tokens of an advisory and of a hippocam cluster's context (default W/4)")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON object instead of a table")
	fs.StringVar(&c.LessonsOut, "lessons-out", "", "write the lessons the lessons condition learned to this Markdown file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.Stream == "" {
		return fmt.Errorf("--stream is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	seen := map[string]bool{}
	for _, name := range strings.Split(*conditions, ",") {
		if name = strings.TrimSpace(name); name == "" || seen[name] {
			continue
		}
		seen[name] = true
		c.Conditions = append(c.Conditions, name)
	}
	if len(c.Conditions) == 0 {
		return fmt.Errorf("--conditions names no condition")
	}
	for _, name := range c.Conditions {
		if err := c.config(name).Validate(); err != nil {
			return err
		}
	}
	return nil
}

func (c *LearnCommand) config(condition string) learnstream.Config {
	return learnstream.Config{Condition: condition, Attempts: c.Attempts, Window: c.Window, AdvisoryBudget: c.Budget}
}

// Run reads the stream and runs every condition on a fresh store and model (as many at once as
// there are processors; each run is deterministic on its own), then prints the results in the
// order the conditions were given.
func (c *LearnCommand) Run(ctx context.Context) error {
	f, err := os.Open(c.Stream)
	if err != nil {
		return err
	}
	tasks, err := learnstream.Read(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", c.Stream, err)
	}
	results := make([]*learnstream.Result, len(c.Conditions))
	errs := make([]error, len(c.Conditions))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, name := range c.Conditions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i], errs[i] = learnstream.Run(ctx, tasks, c.config(name))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("condition %s: %w", c.Conditions[i], err)
		}
	}
	if c.LessonsOut != "" {
		if err := c.writeLessons(results); err != nil {
			return err
		}
	}
	if c.JSON {
		enc := json.NewEncoder(c.Stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(learnReport{Results: results})
	}
	c.printTable(len(tasks), results)
	return nil
}

// printTable prints one line per condition.
func (c *LearnCommand) printTable(tasks int, results []*learnstream.Result) {
	fmt.Fprintf(c.Stdout, "Ran %s (%d tasks) under %d conditions, simulated model, W = %d tokens, N = %d attempts.\n\n", c.Stream, tasks, len(results), c.Window, c.Attempts)
	tw := tabwriter.NewWriter(c.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "condition\treward\tbest of N\tcost USD\tcalls\tinput tokens\tuncached\toutput\tclusters\tentries\tagreement\t")
	for _, r := range results {
		calls := 0
		for _, n := range r.Calls {
			calls += n
		}
		agreement := "-"
		if r.Routing != nil {
			agreement = fmt.Sprintf("%.2f", r.Routing.Agreement)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.4f\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.Condition, r.MeanReward, r.BestReward, r.CostUSD, calls,
			r.InputTokens, r.UncachedInputTokens, r.OutputTokens, r.Clusters, r.MemoryEntries, agreement)
	}
	tw.Flush()
	fmt.Fprintln(c.Stdout, "\nreward: attempt 1, mean over scored tasks; agreement: share of task pairs the clusters and the hidden sources agree on.")
	c.printSources(results)
}

// printSources prints the reward per hidden source (the stream's families), one column each.
func (c *LearnCommand) printSources(results []*learnstream.Result) {
	var sources []string
	for _, r := range results {
		for src := range r.BySource {
			if !slices.Contains(sources, src) {
				sources = append(sources, src)
			}
		}
	}
	if len(sources) < 2 {
		return
	}
	slices.Sort(sources)
	fmt.Fprintln(c.Stdout, "\nReward per source:")
	tw := tabwriter.NewWriter(c.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "condition\t"+strings.Join(sources, "\t")+"\t")
	for _, r := range results {
		fmt.Fprint(tw, r.Condition+"\t")
		for _, src := range sources {
			if v, ok := r.BySource[src]; ok {
				fmt.Fprintf(tw, "%.3f\t", v)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// Close releases nothing: every run keeps its store in memory.
func (c *LearnCommand) Close() error { return nil }

// writeLessons exports the lessons condition's cluster to LessonsOut.
func (c *LearnCommand) writeLessons(results []*learnstream.Result) error {
	for _, r := range results {
		if r.Condition != "lessons" {
			continue
		}
		for _, cl := range r.ClusterStates {
			if cl.System != library.LessonsSystem {
				continue
			}
			md, err := library.ExportLessons(cl.State)
			if err != nil {
				return err
			}
			return os.WriteFile(c.LessonsOut, md, 0o644)
		}
		return fmt.Errorf("--lessons-out: the lessons condition kept no lessons cluster")
	}
	return fmt.Errorf("--lessons-out needs the lessons condition among --conditions")
}
