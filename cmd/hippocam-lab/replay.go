package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/replay"
	"github.com/hippocam/hippocam/scenario"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
)

// ReplayCommand runs a scenario through the engine with the simulated model in-process.
type ReplayCommand struct {
	Scenario string
	Window   int
	DB       string
	Session  string
	JSON     bool

	Stdout, Stderr io.Writer
	store          hippocam.Store
}

// ParseFlags reads the replay flags.
func (c *ReplayCommand) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("hippocam replay", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.StringVar(&c.Scenario, "scenario", "", "scenario file (JSON Lines, docs/sim.md)")
	fs.IntVar(&c.Window, "context-window", engine.DefaultWindow, "context window W in tokens; B_min, T_min and Δmin scale with it")
	fs.StringVar(&c.DB, "db", "", "SQLite file to keep the session in (default: in memory)")
	fs.StringVar(&c.Session, "session", "", "session name (default: the scenario's file name; a free variant is taken if it exists)")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON object instead of a summary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.Scenario == "" {
		return fmt.Errorf("--scenario is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return nil
}

// Run replays the scenario and prints the report.
func (c *ReplayCommand) Run(ctx context.Context) error {
	lines, err := scenario.ParseFile(c.Scenario)
	if err != nil {
		return err
	}
	tok, err := tokenizer.Default()
	if err != nil {
		return err
	}
	model, err := openai.New(simClient(tok))
	if err != nil {
		return err
	}
	e, err := engine.New(engine.ForWindow(c.Window), model, tok, nil)
	if err != nil {
		return err
	}
	if c.DB != "" {
		db := sqlite.New(c.DB)
		if err := db.Open(ctx); err != nil {
			return err
		}
		c.store = db
	} else {
		c.store = inmem.New()
	}
	id, err := c.sessionName(ctx)
	if err != nil {
		return err
	}
	rep, err := replay.Run(ctx, e, c.store, "", id, lines)
	if err != nil {
		return err
	}
	if c.JSON {
		enc := json.NewEncoder(c.Stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	}
	printSummary(c.Stdout, c.Scenario, len(lines), rep)
	return nil
}

// sessionName picks the session: the flag, or the scenario's base name, made unique in the store.
func (c *ReplayCommand) sessionName(ctx context.Context) (string, error) {
	if c.Session != "" {
		return c.Session, nil
	}
	base := strings.TrimSuffix(filepath.Base(c.Scenario), filepath.Ext(c.Scenario))
	for i := 1; ; i++ {
		id := base
		if i > 1 {
			id = fmt.Sprintf("%s-%d", base, i)
		}
		_, err := c.store.Session(ctx, "", id)
		if hippocam.ErrorCode(err) == hippocam.ENOTFOUND {
			return id, nil
		} else if err != nil {
			return "", err
		}
	}
}

// Close closes the store.
func (c *ReplayCommand) Close() error {
	if c.store != nil {
		return c.store.Close()
	}
	return nil
}

func printSummary(w io.Writer, file string, lines int, r *replay.Report) {
	fmt.Fprintf(w, "Replayed %s (%d scenario messages) in %d steps, context window W = %d tokens, simulated model.\n\n", file, lines, r.Steps, r.ContextWindow)
	if len(r.Answers) > 0 {
		fmt.Fprintln(w, "Answers to !ask:")
		for i, a := range r.Answers {
			fmt.Fprintf(w, "  %2d. %s\n", i+1, a)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Largest main-model request: %d tokens (%.0f%% of W)\n", r.MaxRequestTokens, 100*float64(r.MaxRequestTokens)/float64(r.ContextWindow))
	fmt.Fprintf(w, "Consolidations: %d intent (PRECIP), %d prefix (PALIM); recall calls: %d\n", r.Consolidations.Intent, r.Consolidations.Prefix, r.RecallCalls)
	fmt.Fprintf(w, "Final context: %d messages, %d tokens; intent stack: %s\n", r.FinalContextMessages, r.FinalContextTokens, stackText(r.Stack))
	fmt.Fprintf(w, "Lossless archive: the final context expands to %d original messages.\n\n", len(r.Expanded))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "role\tcalls\tinput\tcached\toutput\tcost USD\t")
	roles := make([]string, 0, len(r.Usage))
	for role := range r.Usage {
		roles = append(roles, string(role))
	}
	sort.Strings(roles)
	for _, role := range roles {
		u := r.Usage[hippocam.CallRole(role)]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.6f\t\n", role, u.Calls, u.Input, u.CachedInput, u.Output, u.CostUSD)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nEngine time (excluding model calls): %.1f ms\n", r.EngineMillis)
}

func stackText(s []string) string {
	if len(s) == 0 {
		return "(empty)"
	}
	return strings.Join(s, " > ")
}
