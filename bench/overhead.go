package bench

// The engine's own overhead (`hippocam bench overhead`): what the proxy adds to a request's
// latency compared with a bare reverse proxy in front of the same upstream, how many requests a
// second it serves to many sessions at once, and how fast RECALL reads one layer of a large
// archive on each store.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/internal/sse"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	_ "modernc.org/sqlite" // the "sqlite" driver, for bulk loads into the store's file
)

// Defaults of the full run; Quick ones where they differ.
const (
	DefaultOverheadSamples         = 200
	DefaultOverheadConcurrency     = 64
	DefaultOverheadSessionRequests = 20
	DefaultRecallArchived          = 1_000_000
	DefaultRecallSamples           = 2000

	QuickOverheadSamples         = 50
	QuickOverheadConcurrency     = 16
	QuickOverheadSessionRequests = 10
	QuickRecallArchived          = 100_000
	QuickRecallSamples           = 1000
)

// DefaultOverheadSizes returns the session lengths, in messages, of the full run.
func DefaultOverheadSizes() []int { return []int{100, 1000, 10_000} }

// QuickOverheadSizes returns the session lengths of a quick run.
func QuickOverheadSizes() []int { return []int{100, 1000} }

// proxyWindow is the engine's window in the proxy measurements: large enough that no session
// of the run comes near pressure, so every request is one plain step (JANUS, then the answer).
const proxyWindow = 1 << 24

// overheadWarmup is the number of untimed request pairs sent before each size's samples.
const overheadWarmup = 3

// OverheadConfig configures RunOverhead. A zero field takes its default, the Quick one when
// Quick is set; a field set explicitly wins over Quick.
type OverheadConfig struct {
	// Sizes are the session lengths, in messages, at which the proxy's latency is measured
	// (default 100, 1,000 and 10,000; quick: 100 and 1,000). Each is rounded up to whole
	// user-and-answer pairs.
	Sizes []int
	// Samples is how many timed requests go through each proxy at each size (default 200;
	// quick: 50).
	Samples int
	// Concurrency is how many sessions send requests at once in the throughput run (default
	// 64; quick: 16), and SessionRequests how many requests each of them sends (default 20;
	// quick: 10), its history growing from nothing.
	Concurrency     int
	SessionRequests int
	// RecallArchived is how many raw messages the RECALL session holds in its archive, beneath
	// three levels of memories (default 1,000,000; quick: 100,000). RecallSamples is how many
	// timed reads of one layer each store gets (default 2,000; quick: 1,000), and how many
	// searches of each rare kind (a tenth as many for a common word).
	RecallArchived int
	RecallSamples  int
	// PostgresDSN names the database for the Postgres RECALL row, measured in a fresh schema
	// that is dropped afterwards. Empty: the row is skipped and the report's notes say so.
	PostgresDSN string
	// Provider is the upstream's latency in the provider run (default 400 ms to first byte,
	// then 80 tokens per second). ProviderSteps is how many steps of the agentic workload it
	// replays (default 60; quick: 12). StartProxy starts the Hippocam it measures (nil: the
	// httpapi server in this process, as the zero-latency rows use).
	Provider      sim.Latency
	ProviderSteps int
	StartProxy    StartProxy
	// ProviderToolTime is how long the replayed agent takes to run its tools before it sends
	// their results (default 0: at once, which leaves consolidation jobs no time to run between
	// steps; an agent's real tools take seconds).
	ProviderToolTime time.Duration
	// ProviderWindow is the proxy's context window W in the provider run (default 16,000, the
	// context benchmark's; at least 6,000); the agentic workload is generated at 16 W, and the
	// run stops early when its steps run out.
	ProviderWindow int
	// ProviderJanus is the JANUS mode of the proxy the provider run measures (serve --janus;
	// "" is the default, beside). StartProxy receives it.
	ProviderJanus string
	// ProviderOnly runs the provider run alone: no zero-latency rows, throughput or RECALL.
	ProviderOnly bool
	// Learn, when set (off, global or routed), makes the provider run time task starts instead
	// of the agentic workload's steps (overhead_learn.go): the first answers of LearnTasks new
	// sessions (default 40; quick: 16), Hippocam learning across tasks in that mode, with
	// RouteWait as its --route-wait (0: its default; negative: unbounded). StartLearningProxy
	// starts that Hippocam (nil: the httpapi server in this process).
	Learn              string
	LearnTasks         int
	RouteWait          time.Duration
	StartLearningProxy StartLearningProxy
	// Quick selects the smaller defaults, for CI.
	Quick bool
	// Progress, when set, is told how far each stage is ("proxy 1000", "throughput hippocam",
	// "recall sqlite load"…). It is never called concurrently.
	Progress func(stage string, done, total int)
}

// withDefaults returns c with its zero fields set.
func (c OverheadConfig) withDefaults() OverheadConfig {
	pick := func(v *int, full, quick int) {
		if *v == 0 {
			*v = full
			if c.Quick {
				*v = quick
			}
		}
	}
	if len(c.Sizes) == 0 {
		c.Sizes = DefaultOverheadSizes()
		if c.Quick {
			c.Sizes = QuickOverheadSizes()
		}
	}
	pick(&c.Samples, DefaultOverheadSamples, QuickOverheadSamples)
	pick(&c.Concurrency, DefaultOverheadConcurrency, QuickOverheadConcurrency)
	pick(&c.SessionRequests, DefaultOverheadSessionRequests, QuickOverheadSessionRequests)
	pick(&c.RecallArchived, DefaultRecallArchived, QuickRecallArchived)
	pick(&c.RecallSamples, DefaultRecallSamples, QuickRecallSamples)
	pick(&c.ProviderSteps, DefaultProviderSteps, QuickProviderSteps)
	pick(&c.LearnTasks, DefaultLearnTaskStarts, QuickLearnTaskStarts)
	pick(&c.ProviderWindow, DefaultProviderWindow, DefaultProviderWindow)
	if c.Provider.Zero() {
		c.Provider = sim.Latency{TTFT: DefaultProviderTTFT, TokensPerSecond: DefaultProviderTokensPerSecond}
	}
	return c
}

// Validate reports the first field out of range as EINVALID. Zero fields stand for their
// defaults.
func (c OverheadConfig) Validate() error {
	for _, n := range c.Sizes {
		if n < 1 {
			return hippocam.Errorf(hippocam.EINVALID, "overhead: session size %d: at least one message", n)
		}
	}
	switch c.Learn {
	case "", "off", "global", "routed":
	default:
		return hippocam.Errorf(hippocam.EINVALID, "overhead: learning mode %q: use off, global or routed", c.Learn)
	}
	if c.Samples < 0 || c.Concurrency < 0 || c.SessionRequests < 0 || c.RecallArchived < 0 || c.RecallSamples < 0 || c.ProviderSteps < 0 || c.LearnTasks < 0 {
		return hippocam.Errorf(hippocam.EINVALID, "overhead: samples, concurrency, requests, steps and archive size must not be negative")
	}
	if c.ProviderWindow != 0 && c.ProviderWindow < 6000 {
		return hippocam.Errorf(hippocam.EINVALID, "overhead: provider window %d is too small for the agentic workload (at least 6000 tokens)", c.ProviderWindow)
	}
	if err := c.Provider.Validate(); err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "overhead: provider %s", hippocam.ErrorMessage(err))
	}
	return nil
}

// OverheadReport is the result of RunOverhead, in the JSON shape `hippocam bench overhead
// --json` prints. Latencies are in milliseconds, measured at the client.
type OverheadReport struct {
	Proxy      []OverheadProxy    `json:"proxy"`
	Throughput OverheadThroughput `json:"throughput"`
	Recall     []OverheadRecall   `json:"recall"`
	Search     []OverheadSearch   `json:"search"`
	// Provider is the run at a provider's latency, streamed, over the agentic workload;
	// TaskStarts the same over task starts, in its place with OverheadConfig.Learn.
	Provider   *OverheadProvider   `json:"provider,omitempty"`
	TaskStarts *OverheadTaskStarts `json:"task_starts,omitempty"`
	// Notes say what was skipped and how the figures were taken.
	Notes     []string `json:"notes,omitempty"`
	CPUs      int      `json:"cpus"`
	GoVersion string   `json:"go_version"`
	Seconds   float64  `json:"seconds"`
}

// OverheadProxy compares, at one session length, a chat request through Hippocam with the same
// request through a bare reverse proxy. Upstream times are what the simulated model spent
// serving a request's upstream calls (Hippocam makes two: JANUS and the answer); own times are
// the rest of each request's latency: the proxy itself, loopback hops and the client.
type OverheadProxy struct {
	SessionMessages   int     `json:"session_messages"`
	Samples           int     `json:"samples"`
	P50Ms             float64 `json:"p50_ms"`
	P99Ms             float64 `json:"p99_ms"`
	BareP50Ms         float64 `json:"bare_p50_ms"`
	BareP99Ms         float64 `json:"bare_p99_ms"`
	AddedP50Ms        float64 `json:"added_p50_ms"`
	AddedP99Ms        float64 `json:"added_p99_ms"`
	RatioP50          float64 `json:"ratio_p50"`
	RatioP99          float64 `json:"ratio_p99"`
	UpstreamCalls     float64 `json:"upstream_calls"`
	UpstreamP50Ms     float64 `json:"upstream_p50_ms"`
	BareUpstreamP50Ms float64 `json:"bare_upstream_p50_ms"`
	OwnP50Ms          float64 `json:"own_p50_ms"`
	OwnP99Ms          float64 `json:"own_p99_ms"`
	BareOwnP50Ms      float64 `json:"bare_own_p50_ms"`
	BareOwnP99Ms      float64 `json:"bare_own_p99_ms"`
	RequestBytes      int     `json:"request_bytes"`
	Seconds           float64 `json:"seconds"`
}

// OverheadThroughput is the load run: Sessions sessions sending requests at once, each waiting
// for its answer before the next, through Hippocam and, for comparison, the bare proxy.
type OverheadThroughput struct {
	Sessions              int     `json:"sessions"`
	Requests              int     `json:"requests"`
	Seconds               float64 `json:"seconds"`
	RequestsPerSecond     float64 `json:"requests_per_second"`
	P50Ms                 float64 `json:"p50_ms"`
	P99Ms                 float64 `json:"p99_ms"`
	BareSeconds           float64 `json:"bare_seconds"`
	BareRequestsPerSecond float64 `json:"bare_requests_per_second"`
	BareP50Ms             float64 `json:"bare_p50_ms"`
	BareP99Ms             float64 `json:"bare_p99_ms"`
}

// OverheadRecall is RECALL's latency on one store: Children of a random ref of a session whose
// archive holds Archived raw messages beneath Refs memories.
type OverheadRecall struct {
	Store        string  `json:"store"`
	Archived     int     `json:"archived"`
	Refs         int     `json:"refs"`
	Samples      int     `json:"samples"`
	MeanChildren float64 `json:"mean_children"`
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	LoadSeconds  float64 `json:"load_seconds"`
}

// RunOverhead measures the proxy's added latency at each size, the throughput under concurrent
// sessions, RECALL and search on SQLite and (with a DSN) Postgres, and the provider run (only
// that one with ProviderOnly). Everything runs in this process on loopback; temporary files and
// the Postgres schema are removed before it returns. EINVALID for a bad configuration;
// EUNAVAILABLE when Postgres cannot be reached; otherwise the first failure of a stage, wrapped
// with its name.
func RunOverhead(ctx context.Context, c OverheadConfig) (*OverheadReport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.withDefaults()
	began := time.Now()
	rep := &OverheadReport{CPUs: runtime.GOMAXPROCS(0), GoVersion: runtime.Version()}
	prog := newOverheadProgress(c.Progress)
	if !c.ProviderOnly {
		if err := runZeroLatency(ctx, c, rep, prog); err != nil {
			return nil, err
		}
	}
	if c.Learn != "" {
		ts, err := runTaskStarts(ctx, c, prog)
		if err != nil {
			return nil, fmt.Errorf("overhead: task starts: %w", err)
		}
		rep.TaskStarts = ts
		rep.Notes = append(rep.Notes, fmt.Sprintf("task starts: the first %d tasks of the `bench learn` decision stream of seed 1, each a new session whose first request is sent streamed through both proxies at once; "+
			"the upstream waits %v before its first byte, then produces %g tokens per second; each task is ended by its outcome with ?wait=1 before the next starts", ts.Tasks, c.Provider.TTFT, c.Provider.TokensPerSecond))
		rep.Seconds = roundSeconds(time.Since(began))
		return rep, nil
	}
	p, err := runProvider(ctx, c, prog)
	if err != nil {
		return nil, fmt.Errorf("overhead: provider run: %w", err)
	}
	rep.Provider = p
	rep.Notes = append(rep.Notes, fmt.Sprintf("provider: the first %d steps of the agentic workload (seed 1, %d tokens, W = %d), each sent streamed through both proxies at once; "+
		"the upstream waits %v before its first byte, then produces %g tokens per second; ttfb is the first content byte (text or tool call) at the client",
		p.Steps, 16*c.ProviderWindow, c.ProviderWindow, c.Provider.TTFT, c.Provider.TokensPerSecond))
	rep.Seconds = roundSeconds(time.Since(began))
	return rep, nil
}

// runZeroLatency runs the stages with an upstream that answers at once: the proxy rows, the
// throughput, RECALL and search.
func runZeroLatency(ctx context.Context, c OverheadConfig, rep *OverheadReport, prog *overheadProgress) error {
	rig, err := newProxyRig(ctx)
	if err != nil {
		return fmt.Errorf("overhead: %w", err)
	}
	defer rig.Close()
	for _, size := range c.Sizes {
		row, err := rig.latency(ctx, size, c.Samples, prog)
		if err != nil {
			return fmt.Errorf("overhead: proxy at %d messages: %w", size, err)
		}
		rep.Proxy = append(rep.Proxy, row)
	}
	if rep.Throughput, err = rig.throughput(ctx, c.Concurrency, c.SessionRequests, prog); err != nil {
		return fmt.Errorf("overhead: throughput: %w", err)
	}
	rig.Close()
	row, search, err := recallSQLite(ctx, c.RecallArchived, c.RecallSamples, prog)
	if err != nil {
		return fmt.Errorf("overhead: recall on sqlite: %w", err)
	}
	rep.Recall, rep.Search = append(rep.Recall, row), append(rep.Search, search)
	if c.PostgresDSN == "" {
		rep.Notes = append(rep.Notes, "recall on postgres: skipped, no Postgres DSN given")
	} else {
		row, search, err := recallPostgres(ctx, c.PostgresDSN, c.RecallArchived, c.RecallSamples, prog)
		if err != nil {
			return fmt.Errorf("overhead: recall on postgres: %w", err)
		}
		rep.Recall, rep.Search = append(rep.Recall, row), append(rep.Search, search)
	}
	rep.Notes = append(rep.Notes,
		"proxy: sessions prebuilt in the SQLite store with the transcript the proxy records; each sample resends the whole history plus one user message, bare and Hippocam in alternating order",
		"upstream: the simulated model (sim) on a loopback HTTP server, no added delay; its own serving time is included in both columns",
		"recall: archive bulk-loaded in the stores' schema, then read through the store's Children",
		"search: the same archive, each leaf holding a key of its own and a tag shared by one leaf in 1,000; queries through the store's Search for the latest 9 hits")
	return nil
}

// Markdown renders the report as tables: the zero-latency rows, throughput, RECALL and search
// (when they ran) and the provider run.
func (r *OverheadReport) Markdown() string {
	var b strings.Builder
	if len(r.Proxy) > 0 {
		r.zeroLatencyMarkdown(&b)
	}
	if p := r.Provider; p != nil {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		p.markdown(&b)
	}
	if ts := r.TaskStarts; ts != nil {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		ts.markdown(&b)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n- %s", n)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

func (r *OverheadReport) zeroLatencyMarkdown(b *strings.Builder) {
	b.WriteString("| session messages | Hippocam p50 ms | Hippocam p99 ms | bare p50 ms | bare p99 ms | added p99 ms | p99 ratio |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range r.Proxy {
		fmt.Fprintf(b, "| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f× |\n",
			p.SessionMessages, p.P50Ms, p.P99Ms, p.BareP50Ms, p.BareP99Ms, p.AddedP99Ms, p.RatioP99)
	}
	t := r.Throughput
	b.WriteString("\n| sessions | requests | Hippocam req/s | p50 ms | p99 ms | bare req/s | bare p50 ms | bare p99 ms |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(b, "| %d | %d | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f |\n",
		t.Sessions, t.Requests, t.RequestsPerSecond, t.P50Ms, t.P99Ms, t.BareRequestsPerSecond, t.BareP50Ms, t.BareP99Ms)
	b.WriteString("\n| store | archived | refs | mean children | RECALL p50 ms | RECALL p99 ms |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|\n")
	for _, rc := range r.Recall {
		fmt.Fprintf(b, "| %s | %d | %d | %.1f | %.3f | %.3f |\n", rc.Store, rc.Archived, rc.Refs, rc.MeanChildren, rc.P50Ms, rc.P99Ms)
	}
	b.WriteString("\n| store | archived | index MB | key p50 ms | key p99 ms | tag p50 ms | tag p99 ms | common word p50 ms | common word p99 ms |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Search {
		fmt.Fprintf(b, "| %s | %d | %.1f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", s.Store, s.Archived, float64(s.IndexBytes)/(1<<20),
			s.KeyP50Ms, s.KeyP99Ms, s.TagP50Ms, s.TagP99Ms, s.CommonP50Ms, s.CommonP99Ms)
	}
}

// markdown renders the provider run: time to first byte and total time against the bare proxy,
// with the targets, then what the steps waited for.
func (p *OverheadProvider) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "Provider latency %.0f ms to first byte, %g tokens/s; %d streamed steps of the %s workload, W = %d, the agent's tools taking %.0f ms, JANUS %s:\n\n",
		p.UpstreamTTFTMs, p.UpstreamTokensPerSecond, p.Steps, p.Workload, p.ContextWindow, p.ToolTimeMs, p.Janus)
	b.WriteString("| | Hippocam ms | bare ms | ratio | target |\n|---|---:|---:|---:|---|\n")
	row := func(what string, hip, bare, ratio, target float64) {
		verdict := "—"
		if target > 0 {
			verdict = fmt.Sprintf("≤ %g×: met", target)
			if ratio > target {
				verdict = fmt.Sprintf("≤ %g×: **missed**", target)
			}
		}
		fmt.Fprintf(b, "| %s | %.1f | %.1f | %.2f× | %s |\n", what, hip, bare, ratio, verdict)
	}
	ttfb50 := TargetRatioTTFBP50
	if p.ToolTimeMs == 0 {
		ttfb50 = TargetRatioTTFBP50NoToolTime
	}
	row("time to first byte p50", p.TTFBP50Ms, p.BareTTFBP50Ms, p.RatioTTFBP50, ttfb50)
	row("time to first byte p99", p.TTFBP99Ms, p.BareTTFBP99Ms, p.RatioTTFBP99, TargetRatioTTFBP99)
	row("total p50", p.TotalP50Ms, p.BareTotalP50Ms, p.RatioTotalP50, TargetRatioTotalP50)
	row("total p99", p.TotalP99Ms, p.BareTotalP99Ms, p.RatioTotalP99, 0)
	fmt.Fprintf(b, "\nSteps that waited for consolidation: %.1f %% (%d for a running job, %d ran it themselves); "+
		"consolidation jobs run after the answer: %d; steps that waited for the previous JANUS verdict: %.1f %% (%d); %d consolidations; %.2f upstream calls per step (%s).\n",
		100*p.ShareWaited, p.WaitsRunning, p.WaitsInline, p.ConsolidationJobs, 100*p.ShareVerdictWaited, p.VerdictWaits,
		p.Consolidations, p.UpstreamCallsPerStep, rolesText(p.UpstreamCallsByRole))
}

// rolesText lists call counts by role: the engine's roles in their order (those called), then
// any others by name.
func rolesText(calls map[string]int) string {
	var parts []string
	others := maps.Clone(calls)
	for _, r := range []hippocam.CallRole{hippocam.CallJanus, hippocam.CallAgent, hippocam.CallPrecip, hippocam.CallPalim} {
		if n := calls[string(r)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, n))
		}
		delete(others, string(r))
	}
	if len(others) > 0 {
		parts = append(parts, countsText(others))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// overheadProgress serializes calls to a Progress callback.
type overheadProgress struct {
	mu sync.Mutex
	fn func(stage string, done, total int)
}

func newOverheadProgress(fn func(string, int, int)) *overheadProgress {
	return &overheadProgress{fn: fn}
}

func (p *overheadProgress) report(stage string, done, total int) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fn(stage, done, total)
}

// timings are measured latencies.
type timings []time.Duration

// quantileMs returns the q-quantile (nearest rank) in milliseconds, 0 for no timings.
func (ts timings) quantileMs(q float64) float64 {
	if len(ts) == 0 {
		return 0
	}
	s := slices.Clone(ts)
	slices.Sort(s)
	i := max(0, int(math.Ceil(q*float64(len(s))))-1)
	return roundMs(float64(s[i].Nanoseconds()) / 1e6)
}

// roundMs rounds milliseconds to the microsecond.
func roundMs(ms float64) float64 { return math.Round(ms*1000) / 1000 }

// roundSeconds rounds d to the millisecond, in seconds.
func roundSeconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

// latencyRatio returns a/b, or 0 when b is 0.
func latencyRatio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*100) / 100
}

// proxyRig is what the proxy runs measure: the simulated model on a loopback HTTP server,
// Hippocam's proxy (the real httpapi.Server, engine and SQLite store in a temporary directory)
// and a bare httputil.ReverseProxy, both in front of that model.
type proxyRig struct {
	dir    string
	tok    hippocam.Tokenizer
	store  *sqlite.DB
	up     *httptest.Server
	hippo  *httptest.Server
	bare   *httptest.Server
	client *http.Client
	// upCalls and upNanos count the upstream's requests and the time it spent serving them.
	upCalls, upNanos atomic.Int64
	closeOnce        sync.Once
}

// loopbackTransport is the transport of every client of the rig: the default one, keeping as
// many idle connections as the heaviest load needs, so that no side pays for new connections.
func loopbackTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 512
	return t
}

func newProxyRig(ctx context.Context) (_ *proxyRig, err error) {
	tok, err := tokenizer.Default()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hippocam-overhead-")
	if err != nil {
		return nil, err
	}
	r := &proxyRig{dir: dir, tok: tok, client: &http.Client{Transport: loopbackTransport()}}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	model := sim.New(tok).Handler()
	r.up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		t0 := time.Now()
		model.ServeHTTP(w, req)
		r.upNanos.Add(int64(time.Since(t0)))
		r.upCalls.Add(1)
	}))
	mcfg := openai.DefaultConfig()
	mcfg.BaseURL, mcfg.Model, mcfg.MaxRetries = r.up.URL+"/v1", sim.ModelID, 0
	mcfg.HTTPClient = &http.Client{Transport: loopbackTransport()}
	client, err := openai.New(mcfg)
	if err != nil {
		return nil, err
	}
	e, err := engine.New(engine.ForWindow(proxyWindow), client, tok, nil)
	if err != nil {
		return nil, err
	}
	r.store = sqlite.New(filepath.Join(dir, "hippocam.db"))
	if err := r.store.Open(ctx); err != nil {
		return nil, err
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: r.store, Upstream: client, Metrics: httpapi.NewMetrics()})
	if err != nil {
		return nil, err
	}
	r.hippo = httptest.NewServer(srv)
	target, err := url.Parse(r.up.URL)
	if err != nil {
		return nil, err
	}
	bare := httputil.NewSingleHostReverseProxy(target)
	bare.Transport = loopbackTransport()
	r.bare = httptest.NewServer(bare)
	return r, nil
}

// Close stops the servers and removes the store. It may be called more than once.
func (r *proxyRig) Close() {
	r.closeOnce.Do(func() {
		for _, s := range []*httptest.Server{r.hippo, r.bare, r.up} {
			if s != nil {
				s.Close()
			}
		}
		if r.store != nil {
			r.store.Close()
		}
		os.RemoveAll(r.dir)
	})
}

// exchange is one timed request: the answer, the session Hippocam used, the latency at the
// client and the upstream's serving time and calls meanwhile (meaningful only when nothing
// else runs).
type exchange struct {
	answer   wire.ChatMessage
	session  string
	latency  time.Duration
	upstream time.Duration
	upCalls  int64
}

// post sends a chat request body to base under the session name.
func (r *proxyRig) post(ctx context.Context, base, session string, body []byte) (exchange, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return exchange{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(httpapi.SessionHeader, session)
	up0, calls0 := r.upNanos.Load(), r.upCalls.Load()
	t0 := time.Now()
	resp, err := r.client.Do(req)
	if err != nil {
		return exchange{}, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	x := exchange{latency: time.Since(t0), session: resp.Header.Get(httpapi.SessionHeader)}
	x.upstream, x.upCalls = time.Duration(r.upNanos.Load()-up0), r.upCalls.Load()-calls0
	if err != nil {
		return exchange{}, err
	}
	var out wire.ChatResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &out) != nil || len(out.Choices) == 0 {
		return exchange{}, fmt.Errorf("status %d: %.300s", resp.StatusCode, data)
	}
	x.answer = out.Choices[0].Message
	return x, nil
}

// overheadUser is the k-th user message of a measured session: a fact and a directive the
// simulated model answers with "noted k".
func overheadUser(k int) string { return fmt.Sprintf("note_%d := value %d\n!say noted %d", k, k, k) }

// growBatch is how many appends one commit of a prebuilt session holds.
const growBatch = 1000

// growSession stores a session of at least n messages, user messages and answers in turn,
// committed straight to the store in batches, with the transcript the proxy would have
// recorded had every pair gone through it (TranscriptHash chained over the messages; the
// previous count and hash and the id of the last answer, for retries). It returns the history
// as the client resends it.
func (r *proxyRig) growSession(ctx context.Context, name string, n int) ([]wire.ChatMessage, error) {
	s := engine.NewSession("", name, time.Now().UTC())
	if err := r.store.CreateSession(ctx, s); err != nil {
		return nil, err
	}
	history := make([]wire.ChatMessage, 0, n+1)
	var ops []hippocam.Op
	hash, prev := "", ""
	for k := 0; len(history) < n; k++ {
		user := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: overheadUser(k)}
		answer := hippocam.Message{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, Content: fmt.Sprintf("noted %d", k)}
		for _, m := range []*hippocam.Message{&user, &answer} {
			m.ID = s.NextID("m")
			m.Tokens = hippocam.MessageTokens(r.tok, m)
			prev, hash = hash, hippocam.TranscriptHash(hash, m)
			ops = append(ops, hippocam.AppendOp(*m))
			history = append(history, wire.ChatMessage{Role: string(m.Role), Content: wire.StringContent(m.Content)})
		}
		s.AddRound(answer.Tokens)
		s.Transcript = hippocam.Transcript{Count: len(history), Hash: hash, PrevCount: len(history) - 1, PrevHash: prev, Answer: answer.ID}
		if len(ops) >= growBatch || len(history) >= n {
			if err := r.store.Commit(ctx, s, hippocam.Change{From: s.Version, Ops: ops}); err != nil {
				return nil, fmt.Errorf("prebuild: %w", err)
			}
			ops = ops[:0]
		}
	}
	return history, nil
}

// latency prebuilds a session of size messages and times samples requests through each proxy,
// alternating which goes first. Each request resends the whole history and one new user
// message; Hippocam's answer joins the history.
func (r *proxyRig) latency(ctx context.Context, size, samples int, prog *overheadProgress) (OverheadProxy, error) {
	began := time.Now()
	stage := fmt.Sprintf("proxy %d", size)
	name := fmt.Sprintf("overhead-%d", size)
	history, err := r.growSession(ctx, name, size)
	if err != nil {
		return OverheadProxy{}, err
	}
	row := OverheadProxy{SessionMessages: len(history), Samples: samples}
	var hip, bare, hipUp, bareUp, hipOwn, bareOwn timings
	var calls int64
	for i := -overheadWarmup; i < samples; i++ {
		msgs := append(history, wire.ChatMessage{Role: "user", Content: wire.StringContent(overheadUser(len(history) / 2))})
		body, err := json.Marshal(wire.ChatRequest{Model: sim.ModelID, Messages: msgs})
		if err != nil {
			return row, err
		}
		h, b, err := r.pair(ctx, name, body, i%2 == 0)
		if err != nil {
			return row, err
		}
		if h.session != name {
			return row, fmt.Errorf("the proxy did not continue the prebuilt session %q but %q: the transcript does not match", name, h.session)
		}
		if i >= 0 {
			hip, bare = append(hip, h.latency), append(bare, b.latency)
			hipUp, bareUp = append(hipUp, h.upstream), append(bareUp, b.upstream)
			hipOwn, bareOwn = append(hipOwn, h.latency-h.upstream), append(bareOwn, b.latency-b.upstream)
			calls += h.upCalls
			row.RequestBytes = len(body)
		}
		history = append(msgs, h.answer)
		if i >= 0 {
			prog.report(stage, i+1, samples)
		}
	}
	if err := r.checkNoFolds(ctx, name); err != nil {
		return row, err
	}
	row.P50Ms, row.P99Ms = hip.quantileMs(0.50), hip.quantileMs(0.99)
	row.BareP50Ms, row.BareP99Ms = bare.quantileMs(0.50), bare.quantileMs(0.99)
	row.AddedP50Ms, row.AddedP99Ms = roundMs(row.P50Ms-row.BareP50Ms), roundMs(row.P99Ms-row.BareP99Ms)
	row.RatioP50, row.RatioP99 = latencyRatio(row.P50Ms, row.BareP50Ms), latencyRatio(row.P99Ms, row.BareP99Ms)
	row.UpstreamP50Ms, row.BareUpstreamP50Ms = hipUp.quantileMs(0.50), bareUp.quantileMs(0.50)
	row.OwnP50Ms, row.OwnP99Ms = hipOwn.quantileMs(0.50), hipOwn.quantileMs(0.99)
	row.BareOwnP50Ms, row.BareOwnP99Ms = bareOwn.quantileMs(0.50), bareOwn.quantileMs(0.99)
	row.UpstreamCalls = float64(calls) / float64(max(1, samples))
	row.Seconds = roundSeconds(time.Since(began))
	return row, nil
}

// pair sends one body through both proxies, the bare one first when bareFirst is set.
func (r *proxyRig) pair(ctx context.Context, name string, body []byte, bareFirst bool) (hip, bare exchange, err error) {
	viaBare := func() error { bare, err = r.post(ctx, r.bare.URL, name, body); return err }
	viaHippocam := func() error { hip, err = r.post(ctx, r.hippo.URL, name, body); return err }
	first, second := viaHippocam, viaBare
	if bareFirst {
		first, second = viaBare, viaHippocam
	}
	if err := first(); err != nil {
		return hip, bare, err
	}
	err = second()
	return hip, bare, err
}

// checkNoFolds fails if the engine consolidated anything in the session: the figures are meant
// for plain steps.
func (r *proxyRig) checkNoFolds(ctx context.Context, name string) error {
	s, err := r.store.Session(ctx, "", name)
	if err != nil {
		return err
	}
	if c := s.Consolidations; c.Intent+c.Prefix > 0 {
		return fmt.Errorf("the session was consolidated (%d intent, %d prefix): the window is too small", c.Intent, c.Prefix)
	}
	return nil
}

// throughput runs sessions concurrent sessions of requests each, first through Hippocam, then
// through the bare proxy.
func (r *proxyRig) throughput(ctx context.Context, sessions, requests int, prog *overheadProgress) (OverheadThroughput, error) {
	t := OverheadThroughput{Sessions: sessions, Requests: sessions * requests}
	lat, took, err := r.load(ctx, r.hippo.URL, "throughput", sessions, requests, prog)
	if err != nil {
		return t, err
	}
	t.Seconds, t.RequestsPerSecond = roundSeconds(took), math.Round(float64(t.Requests)/took.Seconds())
	t.P50Ms, t.P99Ms = lat.quantileMs(0.50), lat.quantileMs(0.99)
	if lat, took, err = r.load(ctx, r.bare.URL, "throughput-bare", sessions, requests, prog); err != nil {
		return t, err
	}
	t.BareSeconds, t.BareRequestsPerSecond = roundSeconds(took), math.Round(float64(t.Requests)/took.Seconds())
	t.BareP50Ms, t.BareP99Ms = lat.quantileMs(0.50), lat.quantileMs(0.99)
	return t, nil
}

// load runs sessions goroutines, each a fresh session sending requests requests one after the
// other, and returns every latency and the wall time of the whole run.
func (r *proxyRig) load(ctx context.Context, base, prefix string, sessions, requests int, prog *overheadProgress) (timings, time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stage := "throughput hippocam"
	if base == r.bare.URL {
		stage = "throughput bare"
	}
	var (
		mu    sync.Mutex
		all   timings
		first error
		done  atomic.Int64
		wg    sync.WaitGroup
	)
	total := sessions * requests
	t0 := time.Now()
	for k := range sessions {
		wg.Go(func() {
			lat, err := r.converse(ctx, base, fmt.Sprintf("%s-%d", prefix, k), requests, func() {
				prog.report(stage, int(done.Add(1)), total)
			})
			mu.Lock()
			defer mu.Unlock()
			all = append(all, lat...)
			if err != nil && first == nil {
				first = err
				cancel()
			}
		})
	}
	wg.Wait()
	return all, time.Since(t0), first
}

// converse sends requests requests in one session, each the whole history so far and a new
// user message, and returns their latencies.
func (r *proxyRig) converse(ctx context.Context, base, name string, requests int, step func()) (timings, error) {
	var history []wire.ChatMessage
	lat := make(timings, 0, requests)
	for k := range requests {
		history = append(history, wire.ChatMessage{Role: "user", Content: wire.StringContent(overheadUser(k))})
		body, err := json.Marshal(wire.ChatRequest{Model: sim.ModelID, Messages: history})
		if err != nil {
			return lat, err
		}
		x, err := r.post(ctx, base, name, body)
		if err != nil {
			return lat, fmt.Errorf("session %s: %w", name, err)
		}
		lat = append(lat, x.latency)
		history = append(history, x.answer)
		step()
	}
	return lat, nil
}

// recallSession is the id of the session the RECALL runs read, in the tenant "".
const recallSession = "recall"

// recallWarmup is the number of untimed reads before a store's samples.
const recallWarmup = 100

// recallLoadBatch is how many rows one bulk-load transaction writes.
const recallLoadBatch = 20_000

// recallLeafContent is an archived raw message's text: about the size of a short tool result.
var recallLeafContent = strings.Repeat("a line of tool output, with ünïcode; ", 12)

// The provider run (`hippocam bench overhead`): the agentic workload's steps replayed,
// streamed, through Hippocam and through the bare proxy at once, in front of one simulated
// upstream that answers at a hosted provider's pace. Every request is timed at the client to its
// first content byte and to its end; the proxy's /metrics say how often a step waited for
// consolidation or made its main call again.

// Defaults of the provider run; Quick ones where they differ.
const (
	DefaultProviderTTFT            = 400 * time.Millisecond
	DefaultProviderTokensPerSecond = 80
	DefaultProviderSteps           = 60
	QuickProviderSteps             = 12
)

// DefaultProviderWindow is the context window of the provider run unless one is given: the
// context benchmark's, so that the agentic workload folds as it does there.
const DefaultProviderWindow = DefaultWindow

// providerSession names the session of the provider run.
const providerSession = "provider"

// StartProxy starts a Hippocam proxy whose upstream is the OpenAI-compatible base URL upstream
// (ending in /v1), with context window window, and returns the proxy's base URL (no /v1) and a
// function that stops it and removes what it stored. janus is its JANUS mode ("": the default).
type StartProxy func(ctx context.Context, upstream string, window int, janus string) (base string, stop func() error, err error)

// The Prometheus series the provider run reads from the proxy's /metrics. A series the proxy
// does not expose counts as 0.
const (
	metricWaits = "hippocam_consolidation_waits_total" // steps whose answer waited for consolidation, by how
	metricJobs  = "hippocam_consolidation_jobs_total"  // consolidation jobs workers ran, by result
	// metricVerdictWaits counts the steps that waited for their session's previous JANUS
	// verdict (--janus beside): the observations of the wait histogram.
	metricVerdictWaits = "hippocam_janus_verdict_wait_seconds_count"
)

// OverheadProvider is the provider run: Steps steps of the agentic workload, each request sent
// streamed through Hippocam and the bare proxy at the same moment. TTFB is the time from sending
// the request to the first byte of the answer's content (text or a tool call) in the stream, total
// the time to the stream's end, both at the client. Ratios are Hippocam's figure over the bare
// proxy's. The counters are the differences of the proxy's /metrics across the run (0 where the
// proxy has no such series); the shares divide them by Steps.
type OverheadProvider struct {
	UpstreamTTFTMs float64 `json:"upstream_ttft_ms"`
	// ToolTimeMs is how long the replayed agent took to run its tools before each tool result.
	ToolTimeMs              float64 `json:"tool_time_ms"`
	UpstreamTokensPerSecond float64 `json:"upstream_tokens_per_second"`
	Workload                string  `json:"workload"`
	ContextWindow           int     `json:"context_window"`
	Steps                   int     `json:"steps"`
	TTFBP50Ms               float64 `json:"ttfb_p50_ms"`
	TTFBP99Ms               float64 `json:"ttfb_p99_ms"`
	TotalP50Ms              float64 `json:"total_p50_ms"`
	TotalP99Ms              float64 `json:"total_p99_ms"`
	BareTTFBP50Ms           float64 `json:"bare_ttfb_p50_ms"`
	BareTTFBP99Ms           float64 `json:"bare_ttfb_p99_ms"`
	BareTotalP50Ms          float64 `json:"bare_total_p50_ms"`
	BareTotalP99Ms          float64 `json:"bare_total_p99_ms"`
	RatioTTFBP50            float64 `json:"ratio_ttfb_p50"`
	RatioTTFBP99            float64 `json:"ratio_ttfb_p99"`
	RatioTotalP50           float64 `json:"ratio_total_p50"`
	RatioTotalP99           float64 `json:"ratio_total_p99"`
	WaitsRunning            int     `json:"consolidation_waits_running"`
	WaitsInline             int     `json:"consolidation_waits_inline"`
	// ConsolidationJobs counts the jobs workers ran after the answer that did pending work;
	// they kept no answer waiting and are not in ShareWaited.
	ConsolidationJobs int `json:"consolidation_jobs"`
	// Janus is the proxy's JANUS mode (serve --janus), and VerdictWaits the steps that waited
	// for the previous step's JANUS verdict (beside), ShareVerdictWaited their share.
	Janus                string         `json:"janus"`
	VerdictWaits         int            `json:"verdict_waits"`
	ShareWaited          float64        `json:"share_waited"`
	ShareVerdictWaited   float64        `json:"share_verdict_waited"`
	Consolidations       int            `json:"consolidations"`
	UpstreamCallsPerStep float64        `json:"upstream_calls_per_step"`
	UpstreamCallsByRole  map[string]int `json:"upstream_calls_by_role"`
	// Requests are the timings of every step, in order, for the plots.
	Requests []OverheadStep `json:"requests"`
	Seconds  float64        `json:"seconds"`
}

// OverheadStep is one step of the provider run: its request's time to first content byte and
// total time through each proxy, in milliseconds.
type OverheadStep struct {
	Step        int     `json:"step"`
	TTFBMs      float64 `json:"ttfb_ms"`
	TotalMs     float64 `json:"total_ms"`
	BareTTFBMs  float64 `json:"bare_ttfb_ms"`
	BareTotalMs float64 `json:"bare_total_ms"`
}

// Targets of the provider run, reported, not asserted: Hippocam's time to first byte within 1.1×
// the bare proxy's at the median and 2× at p99 when the agent's tools take time (1 s), within
// 1.5× at the median when they take none (the next request then comes while the last step's
// JANUS call and consolidation may still run); total p50 within 1.15×.
const (
	TargetRatioTTFBP50           = 1.1
	TargetRatioTTFBP50NoToolTime = 1.5
	TargetRatioTTFBP99           = 2
	TargetRatioTotalP50          = 1.15
)

// providerRig is the provider run's servers: the paced simulated model, Hippocam in front of it
// and the bare proxy.
type providerRig struct {
	up     *httptest.Server
	bare   *httptest.Server
	hippo  string // Hippocam's base URL
	stop   func() error
	client *http.Client
	// calls counts the upstream requests that came from Hippocam (they name their role), by role.
	mu    sync.Mutex
	calls map[string]int
}

func newProviderRig(ctx context.Context, lat sim.Latency, start func(ctx context.Context, upstream string) (string, func() error, error)) (_ *providerRig, err error) {
	tok, err := tokenizer.Default()
	if err != nil {
		return nil, err
	}
	model := sim.New(tok)
	if err := model.SetLatency(lat); err != nil {
		return nil, err
	}
	r := &providerRig{client: &http.Client{Transport: loopbackTransport()}, calls: map[string]int{}}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	h := model.Handler()
	r.up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if role := req.Header.Get(hippocam.RoleHeader); role != "" {
			r.mu.Lock()
			r.calls[role]++
			r.mu.Unlock()
		}
		h.ServeHTTP(w, req)
	}))
	target, err := url.Parse(r.up.URL)
	if err != nil {
		return nil, err
	}
	bare := httputil.NewSingleHostReverseProxy(target)
	bare.Transport, bare.FlushInterval = loopbackTransport(), -1
	r.bare = httptest.NewServer(bare)
	if r.hippo, r.stop, err = start(ctx, r.up.URL+"/v1"); err != nil {
		return nil, fmt.Errorf("start the proxy: %w", err)
	}
	return r, nil
}

// Close stops the servers.
func (r *providerRig) Close() {
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
	for _, s := range []*httptest.Server{r.bare, r.up} {
		if s != nil {
			s.Close()
		}
	}
}

// inProcessRig is what both in-process proxies of the provider run are built on: the engine
// over an OpenAI client of the upstream, and a SQLite store in a temporary directory.
type inProcessRig struct {
	tok    hippocam.Tokenizer
	client *openai.Client
	engine *engine.Engine
	store  *sqlite.DB
	dir    string
}

// newInProcessRig builds an inProcessRig for upstream, window and JANUS mode, its directory
// named after prefix.
func newInProcessRig(ctx context.Context, upstream string, window int, janus, prefix string) (*inProcessRig, error) {
	tok, err := tokenizer.Default()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	r := &inProcessRig{tok: tok, store: sqlite.New(filepath.Join(dir, "hippocam.db")), dir: dir}
	if err := r.build(ctx, upstream, window, janus); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *inProcessRig) build(ctx context.Context, upstream string, window int, janus string) error {
	if err := r.store.Open(ctx); err != nil {
		return err
	}
	mcfg := openai.DefaultConfig()
	mcfg.BaseURL, mcfg.Model, mcfg.MaxRetries = upstream, sim.ModelID, 0
	mcfg.HTTPClient = &http.Client{Transport: loopbackTransport()}
	var err error
	if r.client, err = openai.New(mcfg); err != nil {
		return err
	}
	ecfg := engine.ForWindow(window)
	ecfg.Janus = engine.JanusMode(janus)
	r.engine, err = engine.New(ecfg, r.client, r.tok, nil)
	return err
}

// close closes the store and removes the directory.
func (r *inProcessRig) close() error {
	err := r.store.Close()
	os.RemoveAll(r.dir)
	return err
}

// startInProcessProxy is the StartProxy of a run that names none: the httpapi server with the
// engine and a SQLite store in a temporary directory, as the zero-latency rows build it.
func startInProcessProxy(ctx context.Context, upstream string, window int, janus string) (string, func() error, error) {
	r, err := newInProcessRig(ctx, upstream, window, janus, "hippocam-provider-")
	if err != nil {
		return "", nil, err
	}
	srv, err := httpapi.New(httpapi.Config{Engine: r.engine, Store: r.store, Upstream: r.client, Metrics: httpapi.NewMetrics()})
	if err != nil {
		r.close()
		return "", nil, err
	}
	hs := httptest.NewServer(srv)
	return hs.URL, func() error {
		hs.Close()
		return r.close()
	}, nil
}

// runProvider replays c.ProviderSteps steps of the agentic workload through both proxies at
// latency c.Provider.
func runProvider(ctx context.Context, c OverheadConfig, prog *overheadProgress) (*OverheadProvider, error) {
	began := time.Now()
	lat, steps := c.Provider, c.ProviderSteps
	tok, err := tokenizer.Default()
	if err != nil {
		return nil, err
	}
	start := c.StartProxy
	if start == nil {
		start = startInProcessProxy
	}
	rig, err := newProviderRig(ctx, lat, func(ctx context.Context, upstream string) (string, func() error, error) {
		return start(ctx, upstream, c.ProviderWindow, c.ProviderJanus)
	})
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	before, err := rig.metrics(ctx)
	if err != nil {
		return nil, err
	}
	w := Agentic(1, 16*c.ProviderWindow, tok)
	p := &OverheadProvider{Janus: cmp.Or(c.ProviderJanus, string(engine.JanusBeside)), UpstreamTTFTMs: float64(lat.TTFT.Milliseconds()), UpstreamTokensPerSecond: lat.TokensPerSecond,
		Workload: w.Name, ContextWindow: c.ProviderWindow, ToolTimeMs: float64(c.ProviderToolTime.Milliseconds())}
	var hip, bare [2]timings // time to first content byte, total
	var history []wire.ChatMessage
	var pending []string
	for _, line := range w.Lines {
		if p.Steps == steps {
			break
		}
		m := wire.ChatMessage{Role: string(line.Role), Content: wire.StringContent(line.Content)}
		if line.Role == hippocam.RoleTool {
			if len(pending) == 0 {
				return nil, fmt.Errorf("workload line %d: a tool result, but the last answer calls no tool", line.Number)
			}
			m.ToolCallID, pending = pending[0], pending[1:]
			if history = append(history, m); len(pending) > 0 {
				continue
			}
			if c.ProviderToolTime > 0 {
				time.Sleep(c.ProviderToolTime) // the agent runs its tools
			}
		} else {
			if len(pending) > 0 {
				return nil, fmt.Errorf("workload line %d: a user message, but %d tool calls wait for results", line.Number, len(pending))
			}
			history = append(history, m)
		}
		h, b, err := rig.step(ctx, providerSession, history)
		if err != nil {
			return nil, fmt.Errorf("step %d (workload line %d): %w", p.Steps+1, line.Number, err)
		}
		p.Steps++
		hip[0], hip[1] = append(hip[0], h.ttfb), append(hip[1], h.total)
		bare[0], bare[1] = append(bare[0], b.ttfb), append(bare[1], b.total)
		p.Requests = append(p.Requests, OverheadStep{Step: p.Steps, TTFBMs: durationMs(h.ttfb), TotalMs: durationMs(h.total),
			BareTTFBMs: durationMs(b.ttfb), BareTotalMs: durationMs(b.total)})
		history = append(history, h.answer)
		pending = pending[:0]
		for _, c := range h.answer.ToolCalls {
			pending = append(pending, c.ID)
		}
		prog.report("provider", p.Steps, steps)
	}
	after, err := rig.metrics(ctx)
	if err != nil {
		return nil, err
	}
	p.fill(hip, bare)
	p.count(before, after, rig.upstreamCalls())
	p.Seconds = roundSeconds(time.Since(began))
	return p, nil
}

// fill sets the quantiles and ratios from the timings of both proxies.
func (p *OverheadProvider) fill(hip, bare [2]timings) {
	p.TTFBP50Ms, p.TTFBP99Ms = hip[0].quantileMs(0.50), hip[0].quantileMs(0.99)
	p.TotalP50Ms, p.TotalP99Ms = hip[1].quantileMs(0.50), hip[1].quantileMs(0.99)
	p.BareTTFBP50Ms, p.BareTTFBP99Ms = bare[0].quantileMs(0.50), bare[0].quantileMs(0.99)
	p.BareTotalP50Ms, p.BareTotalP99Ms = bare[1].quantileMs(0.50), bare[1].quantileMs(0.99)
	p.RatioTTFBP50, p.RatioTTFBP99 = latencyRatio(p.TTFBP50Ms, p.BareTTFBP50Ms), latencyRatio(p.TTFBP99Ms, p.BareTTFBP99Ms)
	p.RatioTotalP50, p.RatioTotalP99 = latencyRatio(p.TotalP50Ms, p.BareTotalP50Ms), latencyRatio(p.TotalP99Ms, p.BareTotalP99Ms)
}

// count sets the counters from the proxy's metrics before and after the run and the upstream
// calls Hippocam made, by role.
func (p *OverheadProvider) count(before, after promSeries, calls map[string]int) {
	delta := func(name, label, value string) int {
		return int(math.Round(after.sum(name, label, value) - before.sum(name, label, value)))
	}
	p.WaitsRunning = delta(metricWaits, "how", "running")
	for _, how := range []string{"inline", "window", "lag", "regenerate"} { // ran the pending work themselves
		p.WaitsInline += delta(metricWaits, "how", how)
	}
	p.ConsolidationJobs = delta(metricJobs, "result", "consolidated")
	p.VerdictWaits = delta(metricVerdictWaits, "", "")
	p.Consolidations = delta("hippocam_consolidations_total", "", "")
	steps := float64(max(1, p.Steps))
	p.ShareWaited = math.Round(float64(p.WaitsRunning+p.WaitsInline)/steps*1000) / 1000
	p.ShareVerdictWaited = math.Round(float64(p.VerdictWaits)/steps*1000) / 1000
	p.UpstreamCallsByRole = calls
	total := 0
	for _, n := range calls {
		total += n
	}
	p.UpstreamCallsPerStep = math.Round(float64(total)/steps*100) / 100
}

// durationMs is d in milliseconds, rounded to the microsecond.
func durationMs(d time.Duration) float64 { return roundMs(float64(d.Nanoseconds()) / 1e6) }

// upstreamCalls returns a copy of the counts of Hippocam's upstream calls by role.
func (r *providerRig) upstreamCalls() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.calls))
	for k, v := range r.calls {
		out[k] = v
	}
	return out
}

// streamed is one timed streamed exchange: the answer as the client keeps it, the time to its
// first content byte and the time to the end of the stream.
type streamed struct {
	answer      wire.ChatMessage
	ttfb, total time.Duration
}

// step sends the history of the named session, streamed, through Hippocam and the bare proxy at
// the same moment.
func (r *providerRig) step(ctx context.Context, session string, history []wire.ChatMessage) (hip, bare streamed, err error) {
	body, err := json.Marshal(wire.ChatRequest{Model: sim.ModelID, Messages: history, Stream: true,
		StreamOptions: &wire.StreamOptions{IncludeUsage: true}})
	if err != nil {
		return hip, bare, err
	}
	var wg sync.WaitGroup
	var bareErr error
	wg.Go(func() { bare, bareErr = r.stream(ctx, r.bare.URL, session, body) })
	hip, err = r.stream(ctx, r.hippo, session, body)
	wg.Wait()
	if err != nil {
		return hip, bare, fmt.Errorf("through Hippocam: %w", err)
	}
	if bareErr != nil {
		return hip, bare, fmt.Errorf("through the bare proxy: %w", bareErr)
	}
	return hip, bare, nil
}

// stream posts a streamed chat request to base and reads the events as they come.
func (r *providerRig) stream(ctx context.Context, base, session string, body []byte) (streamed, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return streamed{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(httpapi.SessionHeader, session)
	t0 := time.Now()
	resp, err := r.client.Do(req)
	if err != nil {
		return streamed{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		return streamed{}, fmt.Errorf("status %d: %.300s", resp.StatusCode, data)
	}
	return readTimedStream(resp.Body, t0)
}

// readTimedStream reads a chat completion's events up to "data: [DONE]", assembling the answer
// (wire.ChunkAssembler, every tool-call delta with its index) and timing, from t0, the first
// event that carries content and the end. An error event or a stream that ends early is an
// error.
func readTimedStream(body io.Reader, t0 time.Time) (streamed, error) {
	var s streamed
	asm := wire.ChunkAssembler{RequireIndex: true}
	sr := sse.NewReader(body)
	for {
		ev, err := sr.Next()
		data := bytes.TrimSpace(ev.Data)
		switch {
		case len(data) == 0:
		case string(data) == "[DONE]":
			s.total = time.Since(t0)
			if s.ttfb == 0 {
				s.ttfb = s.total // an empty answer: its first byte is its end
			}
			s.answer = assembled(&asm)
			return s, nil
		default:
			var ev struct {
				wire.ChatChunk
				Error *wire.ErrorBody `json:"error"`
			}
			if jerr := json.Unmarshal(data, &ev); jerr != nil {
				return s, fmt.Errorf("event %.200s: %v", data, jerr)
			}
			if ev.Error != nil {
				return s, fmt.Errorf("error event: %s", ev.Error.Message)
			}
			for _, ch := range ev.Choices {
				if ch.Delta.Content != nil && *ch.Delta.Content != "" || len(ch.Delta.ToolCalls) > 0 {
					if s.ttfb == 0 {
						s.ttfb = time.Since(t0)
					}
				}
			}
			if aerr := asm.Add(ev.ChatChunk); aerr != nil {
				return s, aerr
			}
		}
		if err == io.EOF {
			return s, fmt.Errorf("the stream ended without data: [DONE]")
		} else if err != nil {
			return s, fmt.Errorf("the stream broke off: %w", err)
		}
	}
}

// assembled is a streamed answer as the client resends it: content null when it only calls
// tools, tool calls in index order, of type function when the stream left the type out.
func assembled(asm *wire.ChunkAssembler) wire.ChatMessage {
	m := asm.Message()
	for i := range m.ToolCalls {
		if m.ToolCalls[i].Type == "" {
			m.ToolCalls[i].Type = "function"
		}
	}
	return m
}

// metrics reads Hippocam's /metrics.
func (r *providerRig) metrics(ctx context.Context) (promSeries, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.hippo+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: status %d", resp.StatusCode)
	}
	return readPromText(resp.Body)
}

// promSeries are the samples of a Prometheus text exposition.
type promSeries []promSample

// promSample is one line of it: a metric name, its labels and its value.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

// sum adds the values of the series of name whose label has the given value ("" label: every
// series of name).
func (s promSeries) sum(name, label, value string) float64 {
	total := 0.0
	for _, x := range s {
		if x.name == name && (label == "" || x.labels[label] == value) {
			total += x.value
		}
	}
	return total
}

// readPromText reads the text exposition format with the Prometheus parser (expfmt): each
// sample of a counter, gauge or untyped family is one promSample, families in name order, a
// family's samples in the order they came. Histograms and summaries, which this report does not
// read, are skipped. A text the parser cannot read is an error.
func readPromText(r io.Reader) (promSeries, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var out promSeries
	for _, name := range slices.Sorted(maps.Keys(families)) {
		for _, m := range families[name].GetMetric() {
			x := promSample{name: name, labels: map[string]string{}}
			switch {
			case m.Counter != nil:
				x.value = m.Counter.GetValue()
			case m.Gauge != nil:
				x.value = m.Gauge.GetValue()
			case m.Untyped != nil:
				x.value = m.Untyped.GetValue()
			default:
				continue
			}
			for _, l := range m.GetLabel() {
				x.labels[l.GetName()] = l.GetValue()
			}
			out = append(out, x)
		}
	}
	return out, nil
}
