package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/eval"
	"github.com/hippocam/hippocam/internal/progress"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/tokenizer"
)

// EvalCommand runs a conversation-memory benchmark (LoCoMo, LongMemEval) against an endpoint
// under the hippocam, full and truncate conditions (docs/eval.md).
type EvalCommand struct {
	Dataset, Format            string
	Upstream, UpstreamFormat   string
	Model, JudgeModel          string
	Conditions                 []string
	Window, Batch, Limit       int
	Parallel                   int
	AnswerTokens               int
	Out, APIKeyEnv, PricesFlag string
	Stdout, Stderr             io.Writer
	prices                     *hippocam.Prices
	progressTerminal           bool
}

// ParseFlags reads the flags of `hippocam eval`.
func (c *EvalCommand) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("hippocam eval", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	conds := fs.String("conditions", strings.Join(eval.Conditions, ","), "the conditions to run, comma-separated: hippocam, full, truncate")
	fs.StringVar(&c.Dataset, "dataset", "", "the dataset file: LoCoMo's locomo10.json or a LongMemEval JSON file")
	fs.StringVar(&c.Format, "format", "", "the dataset's format, locomo or longmemeval (default: told from its fields)")
	fs.StringVar(&c.Upstream, "upstream", "", "the endpoint's base URL, e.g. https://api.openai.com/v1 (for anthropic, default https://api.anthropic.com)")
	fs.StringVar(&c.UpstreamFormat, "upstream-format", "openai", "the endpoint's wire format: openai (chat completions) or anthropic (messages)")
	fs.StringVar(&c.Model, "model", "", "the model that answers")
	fs.StringVar(&c.JudgeModel, "judge-model", "", "the model that grades the answers (default: --model)")
	fs.IntVar(&c.Window, "context-window", 8000, "the context window of the hippocam and truncate conditions, in tokens")
	fs.IntVar(&c.Batch, "batch", 1, "questions asked per request")
	fs.IntVar(&c.Limit, "limit", 0, "ask at most this many questions, in dataset order (0: all)")
	fs.IntVar(&c.Parallel, "parallel", 4, "samples run at once")
	fs.IntVar(&c.AnswerTokens, "answer-tokens", eval.DefaultAnswerTokens, "the most tokens an answer may take, per question")
	fs.StringVar(&c.Out, "out", "eval-results", "the directory of the results")
	fs.StringVar(&c.APIKeyEnv, "api-key-env", "", "the environment variable holding the endpoint's API key (default OPENAI_API_KEY, or ANTHROPIC_API_KEY for --upstream-format anthropic)")
	fs.StringVar(&c.PricesFlag, "prices", "", "USD per million tokens as INPUT,CACHED_INPUT,OUTPUT, or paper for the schedule of the paper that bench uses, to price every call (default: costs stay null)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.UpstreamFormat == "anthropic" && c.Upstream == "" {
		c.Upstream = anthropic.DefaultBaseURL
	}
	switch {
	case c.Dataset == "":
		return fmt.Errorf("--dataset is required")
	case c.Upstream == "":
		return fmt.Errorf("--upstream is required")
	case c.Model == "":
		return fmt.Errorf("--model is required")
	case c.UpstreamFormat != "openai" && c.UpstreamFormat != "anthropic":
		return fmt.Errorf("--upstream-format must be openai or anthropic, not %q", c.UpstreamFormat)
	case c.Format != "" && c.Format != eval.FormatLoCoMo && c.Format != eval.FormatLongMemEval:
		return fmt.Errorf("--format must be locomo or longmemeval, not %q", c.Format)
	case c.Window < 512:
		return fmt.Errorf("--context-window must be at least 512 tokens")
	case c.Batch < 1 || c.Parallel < 1 || c.Limit < 0 || c.AnswerTokens < 1:
		return fmt.Errorf("--batch, --parallel and --answer-tokens must be at least 1, --limit at least 0")
	}
	c.Conditions = splitList(*conds)
	for _, x := range c.Conditions {
		if !slices.Contains(eval.Conditions, x) {
			return fmt.Errorf("--conditions: unknown condition %q (hippocam, full, truncate)", x)
		}
	}
	if len(c.Conditions) == 0 {
		return fmt.Errorf("--conditions names no condition")
	}
	if c.JudgeModel == "" {
		c.JudgeModel = c.Model
	}
	if c.APIKeyEnv == "" {
		c.APIKeyEnv = "OPENAI_API_KEY"
		if c.UpstreamFormat == "anthropic" {
			c.APIKeyEnv = "ANTHROPIC_API_KEY"
		}
	}
	if c.PricesFlag == "paper" {
		p := hippocam.DefaultPrices
		c.prices = &p
	} else if c.PricesFlag != "" {
		parts := strings.Split(c.PricesFlag, ",")
		var v [3]float64
		if len(parts) != 3 {
			return fmt.Errorf("--prices takes three numbers, INPUT,CACHED_INPUT,OUTPUT")
		}
		for i, p := range parts {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || f < 0 {
				return fmt.Errorf("--prices: %q is not a price", p)
			}
			v[i] = f
		}
		c.prices = &hippocam.Prices{Input: v[0], CachedInput: v[1], Output: v[2]}
	}
	c.progressTerminal = progress.IsTerminal(c.Stderr)
	return nil
}

// Run loads the dataset, starts the proxy in-process when the hippocam condition runs, runs
// every condition and writes the results.
func (c *EvalCommand) Run(ctx context.Context) error {
	d, err := eval.Load(c.Dataset, c.Format)
	if err != nil {
		return err
	}
	tok, err := tokenizer.Default()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return err
	}
	key := os.Getenv(c.APIKeyEnv)
	direct, err := c.client(c.Upstream, key, nil, c.UpstreamFormat, 0)
	if err != nil {
		return err
	}
	cfg := eval.Config{Conditions: c.Conditions, Model: c.Model, JudgeModel: c.JudgeModel, Window: c.Window, Batch: c.Batch,
		Limit: c.Limit, Parallel: c.Parallel, AnswerTokens: c.AnswerTokens, Prices: c.prices, RunID: time.Now().UTC().Format("20060102T150405"),
		Tok: tok, Direct: direct, Judge: direct}
	if slices.Contains(c.Conditions, eval.CondHippocam) {
		logf, err := os.Create(filepath.Join(c.Out, "serve.log"))
		if err != nil {
			return err
		}
		defer logf.Close()
		root, stop, err := StartServe(ctx, logf, &key, "--upstream", c.Upstream, "--upstream-format", c.UpstreamFormat,
			"--model", c.Model, "--context-window", strconv.Itoa(c.Window), "--learn", "off",
			// Every verdict in before the next step: eval measures what is remembered, not how fast.
			"--janus-wait", "0")
		if err != nil {
			return fmt.Errorf("starting the proxy: %w", err)
		}
		defer stop()
		// The proxy speaks chat completions whatever the endpoint's format; it retries the
		// endpoint itself, and an import of a long history may take a while.
		if cfg.Proxy, err = c.client(root+"/v1", "", eval.SessionTransport{}, "openai", 30*time.Minute); err != nil {
			return err
		}
		cfg.ProxyUsage = func(ctx context.Context, prefix string) (hippocam.Usage, error) { return proxyUsage(ctx, root, prefix) }
	}
	rows, err := os.Create(filepath.Join(c.Out, "results.jsonl"))
	if err != nil {
		return err
	}
	defer rows.Close()
	enc := json.NewEncoder(rows)
	enc.SetEscapeHTML(false)
	cfg.OnRow = func(r eval.Row) error { return enc.Encode(r) }
	cfg.Progress = c.progress()
	n := len(eval.Select(d, c.Limit))
	fmt.Fprintf(c.Stderr, "eval: %s, %d samples, %d questions, conditions %s\n", d.Format, n, questionsOf(eval.Select(d, c.Limit)), strings.Join(c.Conditions, ", "))
	res, runErr := eval.Run(ctx, cfg, d)
	if res == nil {
		return runErr
	}
	if err := rows.Close(); err != nil {
		return err
	}
	// An interrupted run still summarises the rows it graded.
	sum := eval.Summarize(res)
	md := sum.Markdown(res)
	files := map[string][]byte{"summary.md": []byte(md), "scores.svg": sum.Plot(res)}
	js, err := json.MarshalIndent(map[string]any{"run": res, "tallies": sum.Tallies, "totals": sum.Totals}, "", "  ")
	if err != nil {
		return err
	}
	files["summary.json"] = append(js, '\n')
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(c.Out, name), b, 0o644); err != nil {
			return err
		}
	}
	if runErr != nil {
		fmt.Fprintf(c.Stderr, "eval: stopped early; %s summarises the %d rows graded so far\n", c.Out, len(res.Rows))
		return runErr
	}
	fmt.Fprint(c.Stdout, md)
	fmt.Fprintf(c.Stdout, "\nwrote %s (results.jsonl, summary.md, summary.json, scores.svg)\n", c.Out)
	return nil
}

func questionsOf(ss []eval.Sample) int {
	n := 0
	for _, s := range ss {
		n += len(s.Questions)
	}
	return n
}

// client is a model client of the endpoint in its format; transport, when set, wraps the
// default one; timeout, when set, replaces the default per-attempt bound, and then no attempt
// is repeated.
func (c *EvalCommand) client(base, key string, transport http.RoundTripper, format string, timeout time.Duration) (hippocam.Model, error) {
	hc := &http.Client{}
	if transport != nil {
		hc.Transport = transport
	}
	if format == "anthropic" {
		cfg := anthropic.DefaultConfig()
		cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.HTTPClient = base, key, c.Model, hc
		return anthropic.New(cfg)
	}
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.HTTPClient = base, key, c.Model, hc
	if timeout > 0 {
		cfg.Timeout, cfg.MaxRetries = timeout, 0
	}
	return openai.New(cfg)
}

// progress draws a bar on a terminal, and otherwise writes a line at every tenth of the run.
func (c *EvalCommand) progress() func(done, total int) {
	if c.progressTerminal {
		return progress.Bar(c.Stderr, "eval")
	}
	last := -1
	return func(done, total int) {
		if total <= 0 {
			return
		}
		if tenth := done * 10 / total; tenth != last {
			last = tenth
			fmt.Fprintf(c.Stderr, "eval: %d/%d (%d%%)\n", done, total, done*100/total)
		}
	}
}

// proxyUsage waits for the proxy's consolidation jobs to finish (up to two minutes), then sums
// the usage of its sessions whose names start with prefix, forks included, by call role.
func proxyUsage(ctx context.Context, root, prefix string) (hippocam.Usage, error) {
	get := func(path string, v any) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, root+path, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
		}
		return json.NewDecoder(resp.Body).Decode(v)
	}
	for wait := 0; wait < 240; wait++ {
		var jobs struct{ Jobs []json.RawMessage }
		if err := get("/api/jobs", &jobs); err != nil {
			return nil, err
		}
		if len(jobs.Jobs) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	var list struct{ Sessions []struct{ ID string } }
	if err := get("/api/sessions", &list); err != nil {
		return nil, err
	}
	total := hippocam.Usage{}
	for _, s := range list.Sessions {
		if !strings.HasPrefix(s.ID, prefix) {
			continue
		}
		var sess struct {
			Usage map[hippocam.CallRole]hippocam.RoleUsage
		}
		if err := get("/api/sessions/"+url.PathEscape(s.ID), &sess); err != nil {
			return nil, err
		}
		total.Merge(sess.Usage)
	}
	return total, nil
}

// Close releases nothing: Run closes what it opens.
func (c *EvalCommand) Close() error { return nil }
