package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/mcp"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sessions"
	"github.com/hippocam/hippocam/tokenizer"
)

// McpCommand serves one tenant's sessions, lessons and clusters over MCP on stdin and stdout
// (package mcp, docs/mcp.md), for an MCP client that starts it as a local server. It opens the
// store hippocam serve uses (--db) and may run beside a serve on the same file: SQLite in WAL
// mode with a busy timeout, every change a version-checked transaction. It proxies nothing and
// runs no consolidation jobs; with learning on it calls the model for routing (get_advisory) and
// runs an outcome's cluster update before it answers (report_outcome); with learning off an
// outcome's update is left queued for serve's workers. Subscribed clients are notified of its
// own changes at once, and of other processes' every --watch.
type McpCommand struct {
	DB     string
	Tenant string
	// Upstream, UpstreamFormat, APIKey and Model name the model the learning layer calls, as
	// for serve; none is needed with learning off.
	Upstream       string
	UpstreamFormat string
	APIKey         string
	Model          string
	Window         int
	Learn          string
	Systems        string
	AdvisoryBudget int
	// Structured as for serve: auto, native or prose.
	Structured string
	// SQLiteSynchronous as for serve.
	SQLiteSynchronous string
	LogJSON           bool
	// Watch is how often the store is read for what other processes (a serve beside) changed,
	// to notify subscribed clients of it; 0 reads it never.
	Watch time.Duration

	// Stdin is read for requests (os.Stdin when nil); Stdout carries nothing but MCP; logs go
	// to Stderr.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	store          hippocam.Store
}

// ParseFlags reads the flags; each has an environment variable as its default, serve's where
// serve has the flag.
func (c *McpCommand) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("hippocam mcp", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	window, err := strconv.Atoi(env("HIPPOCAM_CONTEXT_WINDOW", strconv.Itoa(engine.DefaultWindow)))
	if err != nil {
		return fmt.Errorf("HIPPOCAM_CONTEXT_WINDOW: %v", err)
	}
	fs.StringVar(&c.DB, "db", env("HIPPOCAM_DB", "hippocam.db"), "SQLite file, or a postgres:// DSN: the store hippocam serve uses (env HIPPOCAM_DB)")
	fs.StringVar(&c.Tenant, "tenant", env("HIPPOCAM_TENANT", ""), "the tenant served: a name of serve's --keys file; empty for a serve without keys (env HIPPOCAM_TENANT)")
	fs.StringVar(&c.Upstream, "upstream", env("HIPPOCAM_UPSTREAM", ""), "the model's base URL, for learning (routing, cluster updates); as for serve (env HIPPOCAM_UPSTREAM)")
	fs.StringVar(&c.UpstreamFormat, "upstream-format", env("HIPPOCAM_UPSTREAM_FORMAT", "openai"), "the upstream's wire format: openai or anthropic (env HIPPOCAM_UPSTREAM_FORMAT)")
	fs.StringVar(&c.Model, "model", env("HIPPOCAM_MODEL", "gpt-4o-mini"), "the model the learning layer calls (env HIPPOCAM_MODEL)")
	fs.IntVar(&c.Window, "context-window", window, "context window W in tokens, as serve's: the advisory budget defaults to W/4 (env HIPPOCAM_CONTEXT_WINDOW)")
	fs.StringVar(&c.Learn, "learn", env("HIPPOCAM_LEARN", "off"), "learning across tasks, as serve's: off, global or routed; on, it needs --upstream (env HIPPOCAM_LEARN)")
	fs.StringVar(&c.Systems, "systems", strings.Join(library.Names(), ","), "the memory systems offered to the router, comma-separated, as serve's")
	fs.IntVar(&c.AdvisoryBudget, "advisory-budget", 0, "the most tokens of an advisory (default W/4)")
	fs.StringVar(&c.SQLiteSynchronous, "sqlite-synchronous", "FULL", "SQLite's synchronous setting: FULL or NORMAL, as serve's")
	fs.DurationVar(&c.Watch, "watch", 2*time.Second, "how often to read the store for changes other processes (a serve beside) made, to notify subscribed clients; 0: never")
	fs.BoolVar(&c.LogJSON, "log-json", os.Getenv("HIPPOCAM_LOG_JSON") != "", "log JSON lines to stderr instead of text (env HIPPOCAM_LOG_JSON)")
	fs.StringVar(&c.Structured, "structured", env("HIPPOCAM_STRUCTURED", "auto"), "how the model calls ask for their JSON answers, as serve's: auto, native or prose (env HIPPOCAM_STRUCTURED)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if _, err := hippocam.ParseStructuredMode(c.Structured); err != nil {
		return fmt.Errorf("--structured must be auto, native or prose, not %q", c.Structured)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.SQLiteSynchronous = strings.ToUpper(c.SQLiteSynchronous); c.SQLiteSynchronous != "FULL" && c.SQLiteSynchronous != "NORMAL" {
		return fmt.Errorf("--sqlite-synchronous must be FULL or NORMAL")
	}
	if c.APIKey, err = upstreamAPIKey(c.UpstreamFormat); err != nil {
		return err
	}
	if c.UpstreamFormat == "anthropic" && c.Upstream == "" && c.Learn != sessions.LearnOff {
		c.Upstream = anthropic.DefaultBaseURL
	}
	if c.Learn != sessions.LearnOff && c.Upstream == "" {
		return fmt.Errorf("--learn %s needs --upstream: the router and the memory systems call the model", c.Learn)
	}
	return nil
}

// Run serves MCP on stdin and stdout until stdin ends or ctx does.
func (c *McpCommand) Run(ctx context.Context) error {
	log := newLogger(c.Stderr, c.LogJSON)
	tok, err := tokenizer.Default()
	if err != nil {
		return err
	}
	model, err := c.model(log)
	if err != nil {
		return err
	}
	structured, err := hippocam.ParseStructuredMode(c.Structured)
	if err != nil {
		return err
	}
	ecfg := engine.ForWindow(c.Window)
	ecfg.Structured = structured
	e, err := engine.New(ecfg, model, tok, log)
	if err != nil {
		return err
	}
	if c.store, err = openStore(ctx, c.DB, c.SQLiteSynchronous, log); err != nil {
		return err
	}
	lenv := &learn.Env{Model: model, Tok: tok, ModelName: c.Model, Log: log, Structured: structured}
	var systems []hippocam.MemorySystem
	if c.Learn != sessions.LearnOff {
		if systems, err = library.Library(lenv, splitList(c.Systems)); err != nil {
			return fmt.Errorf("--systems: %w", err)
		}
	}
	// No cache of sessions: serve changes them behind this process's back.
	svc, err := sessions.New(sessions.Config{Engine: e, Store: c.store, Logger: log, CacheMessages: -1,
		Learn: c.Learn, Systems: systems, LearnEnv: lenv, AdvisoryBudget: c.AdvisoryBudget})
	if err != nil {
		return err
	}
	// The MCP server needs the store and the session service alone: no HTTP server is built.
	m, err := mcp.New(mcp.Config{Store: c.store, Sessions: svc, Logger: log, Version: Version, WaitForUpdates: c.Learn != sessions.LearnOff})
	if err != nil {
		return err
	}
	defer m.Close()
	in := c.Stdin
	if in == nil {
		in = os.Stdin
	}
	log.Info("serving MCP on stdio", "store", c.DB, "tenant", c.Tenant, "learn", c.Learn)
	// A misspelt tenant would silently serve an empty memory: say so when it holds nothing.
	if list, err := c.store.Sessions(ctx, c.Tenant); err == nil && len(list) == 0 {
		if clusters, err := c.store.Clusters(ctx, c.Tenant); err == nil && len(clusters) == 0 {
			log.Warn("the tenant holds no session and no cluster in this store: is --tenant the name serve's --keys file gives it?", "tenant", c.Tenant, "store", c.DB)
		}
	}
	if c.Watch > 0 {
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		go m.Watch(wctx, c.Tenant, c.Watch)
	}
	return m.ServeStdio(ctx, c.Tenant, in, c.Stdout)
}

// model is the upstream the learning layer calls, nil without --upstream.
func (c *McpCommand) model(log *slog.Logger) (hippocam.Model, error) {
	if c.Upstream == "" {
		return nil, nil
	}
	if c.UpstreamFormat == "anthropic" {
		acfg := anthropic.DefaultConfig()
		acfg.BaseURL, acfg.APIKey, acfg.Model, acfg.Logger = c.Upstream, c.APIKey, c.Model, log
		return anthropic.New(acfg)
	}
	mcfg := openai.DefaultConfig()
	mcfg.BaseURL, mcfg.APIKey, mcfg.Model, mcfg.Logger = c.Upstream, c.APIKey, c.Model, log
	return openai.New(mcfg)
}

// Close closes the store.
func (c *McpCommand) Close() error {
	if c.store != nil {
		return c.store.Close()
	}
	return nil
}
