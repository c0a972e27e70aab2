package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/postgres"
	"github.com/hippocam/hippocam/record"
	"github.com/hippocam/hippocam/sessions"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
	"github.com/hippocam/hippocam/viewer"
)

// ServeCommand runs the proxy: OpenAI-compatible chat completions with Hippocam memory, the REST
// API, the viewer and metrics.
type ServeCommand struct {
	Addr     string
	DB       string
	Upstream string
	// UpstreamFormat is "openai" (chat completions, any compatible server) or "anthropic".
	UpstreamFormat string
	MaxForks       int
	APIKey         string
	Model          string
	Window         int
	Keys           string
	Demo           bool
	LogJSON        bool
	// WriteTimeout bounds every write of a response, each streamed event included: a client
	// that stops reading is cut off after it. IdleTimeout closes a kept-alive connection that
	// sends no new request. DetachedStepTimeout is how long a step may still run once its
	// client has gone away.
	WriteTimeout        time.Duration
	IdleTimeout         time.Duration
	DetachedStepTimeout time.Duration
	// UpstreamTimeout bounds one attempt at the upstream until its answer starts (a whole
	// answer: the whole exchange; a stream: its headers and first line); UpstreamIdleTimeout
	// bounds each pause of a stream that has begun, which may then run as long as it keeps
	// coming; UpstreamRetries is how many times a failed attempt is repeated.
	UpstreamTimeout     time.Duration
	UpstreamIdleTimeout time.Duration
	UpstreamRetries     int
	// JobLease is how long a consolidation job stays with the worker that claimed it without
	// renewal: a server killed mid-job leaves it to the others (or to itself, restarted) that long.
	JobLease time.Duration
	// ConsolidationLag is the most steps that may answer while consolidation an earlier step
	// left is still pending (engine.Config.MaxLag); 0: every step runs it first.
	ConsolidationLag int
	// Workers run consolidation jobs; InlineConsolidation consolidates before answering
	// instead; Janus is when JANUS runs (beside the main call, or before it: gate).
	Workers             int
	InlineConsolidation bool
	Janus               string
	JanusWait           time.Duration
	// SQLiteSynchronous is SQLite's synchronous setting (FULL, or NORMAL: about twice the
	// commits per second under concurrency, but a power loss may lose the last commits).
	SQLiteSynchronous string
	// Learn is off, global or routed (docs/learning.md); Systems the memory systems offered;
	// AdvisoryBudget the most tokens of an advisory (0: a quarter of W); RouteWait the longest
	// a task's first answer waits for the model router (0 or less: as long as it takes).
	// Structured is how Hippocam's roles ask for their JSON answers: auto, native or prose
	// (hippocam.StructuredMode).
	Structured     string
	Learn          string
	Systems        string
	AdvisoryBudget int
	RouteWait      time.Duration
	// Record is the directory that keeps every exchange with the upstream, a JSON Lines file per
	// session (package record); empty records nothing.
	Record string
	// DemoKit supplies --demo: the simulated upstream and the scenario replayed into it. The lab
	// binary sets it; without it, --demo is ErrLab (the product hands the command to the lab).
	DemoKit *DemoKit

	Stdout, Stderr io.Writer
	Ready          func(addr string) // called once the server listens (tests)
	store          hippocam.Store
	dbSet          bool
}

// DemoKit is what serve --demo runs on instead of a real upstream. It lives in the lab binary,
// so that the product links neither the simulated model nor the scenario replay.
type DemoKit struct {
	// Upstream is the model-client configuration of an in-process simulated model.
	Upstream func(tok hippocam.Tokenizer) openai.Config
	// Replay drives the bundled scenario into the server whose /v1 root is base, as an agent
	// would, with apiKey (empty without --keys), and returns how many steps it replayed.
	Replay func(ctx context.Context, base, apiKey string) (steps int, err error)
}

// demoWindow is the context window of --demo unless one is given.
const demoWindow = 8000

// The server's connection timeouts: the headers of a request must arrive within
// readHeaderTimeout; a kept-alive connection is closed after defaultIdleTimeout without one.
const (
	readHeaderTimeout  = 30 * time.Second
	defaultIdleTimeout = 120 * time.Second
	defaultJobLease    = 30 * time.Second
)

// env returns the environment variable's value, or def.
func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// ParseFlags reads the flags; each has an environment variable as its default.
func (c *ServeCommand) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("hippocam serve", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	window, err := strconv.Atoi(env("HIPPOCAM_CONTEXT_WINDOW", strconv.Itoa(engine.DefaultWindow)))
	if err != nil {
		return fmt.Errorf("HIPPOCAM_CONTEXT_WINDOW: %v", err)
	}
	fs.StringVar(&c.Addr, "addr", env("HIPPOCAM_ADDR", "127.0.0.1:8080"), "listen address (env HIPPOCAM_ADDR)")
	fs.StringVar(&c.DB, "db", env("HIPPOCAM_DB", "hippocam.db"), "SQLite file, or a postgres:// DSN (env HIPPOCAM_DB)")
	fs.StringVar(&c.Upstream, "upstream", env("HIPPOCAM_UPSTREAM", ""), "the model's OpenAI-compatible base URL, e.g. https://api.openai.com/v1 (env HIPPOCAM_UPSTREAM)")
	fs.StringVar(&c.UpstreamFormat, "upstream-format", env("HIPPOCAM_UPSTREAM_FORMAT", "openai"), "the upstream's wire format: openai (chat completions) or anthropic (messages) (env HIPPOCAM_UPSTREAM_FORMAT)")
	fs.IntVar(&c.MaxForks, "max-forks", sessions.DefaultMaxForks, "the most forks one session name may have")
	fs.StringVar(&c.Model, "model", env("HIPPOCAM_MODEL", "gpt-4o-mini"), "model for Hippocam's own calls (JANUS, PRECIP, PALIM) and agents that name none (env HIPPOCAM_MODEL)")
	fs.IntVar(&c.Window, "context-window", window, "context window W in tokens (env HIPPOCAM_CONTEXT_WINDOW)")
	fs.StringVar(&c.Keys, "keys", env("HIPPOCAM_KEYS", ""), "file of 'TENANT KEY' lines; without it, no auth and loopback only (env HIPPOCAM_KEYS)")
	fs.BoolVar(&c.Demo, "demo", false, "use the in-process simulated model as upstream and replay a bundled scenario into session 'demo' (in memory unless --db is given; W = 8000 unless --context-window is given)")
	fs.BoolVar(&c.LogJSON, "log-json", os.Getenv("HIPPOCAM_LOG_JSON") != "", "log JSON lines instead of text (env HIPPOCAM_LOG_JSON)")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", httpapi.DefaultWriteTimeout, "the longest one write of a response may take, each streamed event included; a client that stops reading is cut off after it")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", defaultIdleTimeout, "how long a kept-alive connection may wait for its next request")
	fs.DurationVar(&c.JobLease, "job-lease", defaultJobLease, "how long a claimed consolidation job stays with its worker without renewal (a server killed mid-job leaves it to others that long)")
	fs.IntVar(&c.Workers, "workers", 2, "how many consolidation jobs run at once")
	fs.IntVar(&c.ConsolidationLag, "consolidation-lag", engine.DefaultMaxLag, "the most steps that may answer while consolidation left by an earlier step is still pending (its job not done); the next step runs it first (0: every step does)")
	fs.StringVar(&c.Structured, "structured", env("HIPPOCAM_STRUCTURED", "auto"), "how Hippocam's own calls ask for their JSON answers: auto (the upstream's structured output, the schema in prose for an upstream and model that refuse it), native (structured output only) or prose (env HIPPOCAM_STRUCTURED)")
	fs.StringVar(&c.Learn, "learn", env("HIPPOCAM_LEARN", "off"), "learning across tasks: off, global (one cluster) or routed (the router picks a cluster per task) (env HIPPOCAM_LEARN)")
	fs.StringVar(&c.Systems, "systems", strings.Join(library.Names(), ","), "the memory systems offered to the router, comma-separated")
	fs.StringVar(&c.Record, "record", env("HIPPOCAM_RECORD", ""), "record every exchange with the upstream (the main model's and the components' calls) in DIR/<tenant>/<session>.jsonl, one JSON line per call; `hippocam check` reads these files (env HIPPOCAM_RECORD)")
	fs.IntVar(&c.AdvisoryBudget, "advisory-budget", 0, "the most tokens of a task's advisory (default W/4)")
	fs.DurationVar(&c.RouteWait, "route-wait", sessions.DefaultRouteWait, "--learn routed: the longest a task's first answer waits for the model router, which runs only when no pinned cluster or lexical match of a cluster's scope settles the task; a later decision applies at the session's next request (0: wait as long as the router takes)")
	fs.StringVar(&c.SQLiteSynchronous, "sqlite-synchronous", "FULL", "SQLite's synchronous setting: FULL, or NORMAL (about twice the commits per second with many sessions at once; a power loss may lose the last commits, a crash of the process does not)")
	fs.BoolVar(&c.InlineConsolidation, "inline-consolidation", false, "consolidate (PRECIP, PALIM) before answering, as the paper's step does, instead of in a job after the answer")
	fs.DurationVar(&c.JanusWait, "janus-wait", engine.DefaultJanusWait, "with --janus beside: the longest a step waits for the verdict of its session's previous JANUS call; one not in by then applies at a later step (0: wait for it)")
	fs.StringVar(&c.Janus, "janus", string(engine.JanusBeside), "when JANUS keeps the intent stack: beside (asked at the same time as the main model; its verdict applies from the session's next step, so no answer waits for it) or gate (asked first; the main call waits for its verdict, the paper's order)")
	fs.DurationVar(&c.UpstreamTimeout, "upstream-timeout", openai.DefaultTimeout, "the longest an attempt at the upstream may take until its answer starts (a whole answer: all of it; a stream: its first line)")
	fs.DurationVar(&c.UpstreamIdleTimeout, "upstream-idle-timeout", openai.DefaultIdleTimeout, "the longest pause between two lines of an upstream stream that has begun; a stream that keeps coming is never cut")
	fs.IntVar(&c.UpstreamRetries, "upstream-retries", openai.DefaultMaxRetries, "how many times a failed upstream attempt is repeated (network errors, timeouts, 408, 409, 429, 5xx; a stream only until its text began)")
	fs.DurationVar(&c.DetachedStepTimeout, "detached-step-timeout", httpapi.DefaultDetachedStepTimeout, "how long a step may still run after its client went away (it is then committed, and the client's retry gets it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.Demo && c.DemoKit == nil {
		return fmt.Errorf("--demo: %w", ErrLab)
	}
	if m := engine.JanusMode(c.Janus); m != engine.JanusBeside && m != engine.JanusGate {
		return fmt.Errorf("--janus must be beside or gate, not %q", c.Janus)
	}
	if _, err := hippocam.ParseStructuredMode(c.Structured); err != nil {
		return fmt.Errorf("--structured must be auto, native or prose, not %q", c.Structured)
	}
	if c.Workers < 1 {
		return fmt.Errorf("--workers must be at least 1")
	}
	if c.ConsolidationLag < 0 {
		return fmt.Errorf("--consolidation-lag must be at least 0")
	}
	if c.SQLiteSynchronous = strings.ToUpper(c.SQLiteSynchronous); c.SQLiteSynchronous != "FULL" && c.SQLiteSynchronous != "NORMAL" {
		return fmt.Errorf("--sqlite-synchronous must be FULL or NORMAL")
	}
	windowSet := os.Getenv("HIPPOCAM_CONTEXT_WINDOW") != ""
	fs.Visit(func(f *flag.Flag) {
		c.dbSet = c.dbSet || f.Name == "db"
		windowSet = windowSet || f.Name == "context-window"
	})
	c.dbSet = c.dbSet || os.Getenv("HIPPOCAM_DB") != ""
	if c.Demo && !windowSet {
		c.Window = demoWindow // small, so that the demo folds and the tree has depth
	}
	if c.APIKey, err = upstreamAPIKey(c.UpstreamFormat); err != nil {
		return err
	}
	if c.UpstreamFormat == "anthropic" && c.Upstream == "" && !c.Demo {
		c.Upstream = anthropic.DefaultBaseURL
	}
	if c.Upstream == "" && !c.Demo {
		return fmt.Errorf("--upstream is required (or --demo for the simulated model)")
	}
	if c.WriteTimeout <= 0 || c.IdleTimeout <= 0 || c.DetachedStepTimeout <= 0 || c.JobLease <= 0 {
		return fmt.Errorf("--write-timeout, --idle-timeout, --detached-step-timeout and --job-lease must be positive")
	}
	if c.UpstreamTimeout <= 0 || c.UpstreamIdleTimeout <= 0 || c.UpstreamRetries < 0 {
		return fmt.Errorf("--upstream-timeout and --upstream-idle-timeout must be positive, --upstream-retries at least 0")
	}
	return nil
}

// Run serves until ctx ends, then shuts down gracefully, letting in-flight requests finish.
func (c *ServeCommand) Run(ctx context.Context) error {
	log := newLogger(c.Stderr, c.LogJSON)
	tok, err := tokenizer.Default()
	if err != nil {
		return err
	}
	mcfg := openai.DefaultConfig()
	mcfg.BaseURL, mcfg.APIKey, mcfg.Model, mcfg.Logger = c.Upstream, c.APIKey, c.Model, log
	mcfg.Timeout, mcfg.IdleTimeout, mcfg.MaxRetries = c.UpstreamTimeout, c.UpstreamIdleTimeout, c.UpstreamRetries
	if c.Demo {
		demo := c.DemoKit.Upstream(tok)
		mcfg.BaseURL, mcfg.Model, mcfg.HTTPClient = demo.BaseURL, demo.Model, demo.HTTPClient
	}
	var rec *record.Recorder
	if c.Record != "" {
		if rec, err = record.Open(c.Record, log); err != nil {
			return err
		}
		defer rec.Close()
		// The transport keeps the bodies the model clients send (never their headers); the
		// pass-through's requests go by it untouched.
		var rt http.RoundTripper
		if mcfg.HTTPClient != nil {
			rt = mcfg.HTTPClient.Transport
		}
		mcfg.HTTPClient = &http.Client{Transport: rec.Transport(rt)}
	}
	model, err := openai.New(mcfg) // also the pass-through of GET /v1/models
	if err != nil {
		return err
	}
	var upstream hippocam.Model = model
	if c.UpstreamFormat == "anthropic" {
		acfg := anthropic.DefaultConfig()
		acfg.BaseURL, acfg.APIKey, acfg.Model, acfg.Logger, acfg.HTTPClient = mcfg.BaseURL, c.APIKey, mcfg.Model, log, mcfg.HTTPClient
		acfg.Timeout, acfg.IdleTimeout, acfg.MaxRetries = c.UpstreamTimeout, c.UpstreamIdleTimeout, c.UpstreamRetries
		if c.Demo {
			acfg.BaseURL = strings.TrimSuffix(mcfg.BaseURL, "/v1")
		}
		if upstream, err = anthropic.New(acfg); err != nil {
			return err
		}
	}
	if rec != nil {
		upstream = rec.Model(upstream)
	}
	ecfg := engine.ForWindow(c.Window)
	ecfg.Janus, ecfg.JanusWait = engine.JanusMode(c.Janus), c.JanusWait
	structured, err := hippocam.ParseStructuredMode(c.Structured)
	if err != nil {
		return err
	}
	ecfg.Structured = structured
	ecfg.MaxLag = c.ConsolidationLag
	e, err := engine.New(ecfg, upstream, tok, log)
	if err != nil {
		return err
	}
	if c.Demo && !c.dbSet {
		c.store, c.DB = inmem.New(), "memory (demo)"
	} else if c.store, err = openStore(ctx, c.DB, c.SQLiteSynchronous, log); err != nil {
		return err
	}
	keys, err := readKeys(c.Keys)
	if err != nil {
		return err
	}
	addr := c.Addr
	if len(keys) == 0 {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("--addr: %v", err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		fmt.Fprintf(c.Stdout, "no --keys given: authentication is off, so Hippocam listens on loopback only (%s)\n", addr)
	}
	metrics := httpapi.NewMetrics()
	lenv := &learn.Env{Model: upstream, Tok: tok, ModelName: c.Model, Log: log, Structured: structured}
	var systems []hippocam.MemorySystem
	if c.Learn != sessions.LearnOff {
		if systems, err = library.Library(lenv, splitList(c.Systems)); err != nil {
			return fmt.Errorf("--systems: %w", err)
		}
	}
	svc, err := sessions.New(sessions.Config{Engine: e, Store: c.store, MaxForks: c.MaxForks, Logger: log, JobLease: c.JobLease,
		Workers: c.Workers, Inline: c.InlineConsolidation, Learn: c.Learn, Systems: systems, LearnEnv: lenv, AdvisoryBudget: c.AdvisoryBudget,
		RouteWait: routeWait(c.RouteWait)})
	if err != nil {
		return err
	}
	if rec != nil {
		// A deleted session is gone from the recordings too.
		defer svc.ObserveChanges(func(ch sessions.Change) {
			if ch.Kind == sessions.SessionDeleted {
				if err := rec.Remove(ch.Tenant, ch.Session); err != nil {
					log.Warn("recording: removing a deleted session's recording failed", "tenant", ch.Tenant, "session", ch.Session, "error", err)
				}
			}
		})()
	}
	// The /v1 routes Hippocam does not serve itself go to the upstream as they came.
	pass := &httpapi.PassThrough{BaseURL: mcfg.BaseURL, Anthropic: c.UpstreamFormat == "anthropic", APIKey: c.APIKey, Client: mcfg.HTTPClient,
		Timeout: c.UpstreamTimeout}
	var recordings httpapi.Recordings
	if rec != nil {
		recordings = rec
		metrics.WatchRecording(rec.Lines, rec.Failures)
	}
	srv, err := httpapi.New(httpapi.Config{Recordings: recordings, Version: Version, Engine: e, Store: c.store, Sessions: svc, Upstream: model, PassThrough: pass, Keys: keys, Viewer: viewer.Handler(), Logger: log, Metrics: metrics,
		WriteTimeout: c.WriteTimeout, DetachedStepTimeout: c.DetachedStepTimeout, UpstreamFormat: upstreamFormatOf(c.UpstreamFormat)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// No ReadTimeout or WriteTimeout on the whole exchange: a streamed answer may take minutes.
	// The handler bounds every write instead (httpapi.Config.WriteTimeout).
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: c.IdleTimeout}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	// The consolidation jobs the steps leave (and those a killed server left) run beside the
	// requests; they stop after the last in-flight request, a job cut short going back to the
	// queue.
	jobs, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJobs()
	jobsDone := make(chan struct{})
	go func() { svc.RunJobs(jobs); close(jobsDone) }()
	defer func() { stopJobs(); <-jobsDone }()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(c.Stdout, "Hippocam is serving %s/v1 (upstream %s, W = %d tokens, store %s)\nviewer: %s/\n", base, mcfg.BaseURL, c.Window, c.DB, base)
	log.Info("serving", "addr", ln.Addr().String(), "upstream", mcfg.BaseURL, "window", c.Window, "tenants", len(keys))
	if c.Ready != nil {
		c.Ready(ln.Addr().String())
	}
	if c.Demo {
		go c.replayDemo(ctx, base, keys)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down; finishing in-flight requests")
	shut, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := hs.Shutdown(shut); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// replayDemo drives the bundled scenario into the server over HTTP, as an agent would, so that
// a newcomer finds a live session in the viewer.
func (c *ServeCommand) replayDemo(ctx context.Context, base string, keys map[string]string) {
	key := ""
	for k := range keys {
		key = k
		break
	}
	steps, err := c.DemoKit.Replay(ctx, base+"/v1", key)
	if err != nil {
		fmt.Fprintf(c.Stderr, "demo replay failed: %v\n", err)
		return
	}
	fmt.Fprintf(c.Stdout, "demo: replayed %d steps into session 'demo'; open %s/ to see its tree\n", steps, base)
}

// Close closes the store.
func (c *ServeCommand) Close() error {
	if c.store != nil {
		return c.store.Close()
	}
	return nil
}

// openStore opens SQLite for a file path and Postgres for a postgres:// DSN.
func openStore(ctx context.Context, db, synchronous string, log *slog.Logger) (hippocam.Store, error) {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		pg := postgres.New(db)
		pg.Log = log
		if err := pg.Open(ctx); err != nil {
			return nil, err
		}
		return pg, nil
	}
	lite := sqlite.New(db)
	lite.Log, lite.Synchronous = log, synchronous
	if err := lite.Open(ctx); err != nil {
		return nil, err
	}
	return lite, nil
}

// readKeys reads a keys file: one "TENANT KEY" per line; blank lines and # comments are skipped.
func readKeys(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--keys: %v", err)
	}
	defer f.Close()
	keys := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("--keys %s line %d: want 'TENANT KEY'", path, n)
		}
		if _, dup := keys[fields[1]]; dup {
			return nil, fmt.Errorf("--keys %s line %d: the key is used twice", path, n)
		}
		keys[fields[1]] = fields[0]
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("--keys %s: no keys in the file", path)
	}
	return keys, nil
}

// splitList reads a comma-separated list, without empty items.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// routeWait is sessions.Config.RouteWait for --route-wait: 0 or less waits as long as the router
// takes (the config's negative), where the config's zero would be its default.
func routeWait(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
