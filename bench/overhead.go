package bench

// The engine's own overhead (`hippocam bench overhead`): what the proxy adds to a request's
// latency compared with a bare reverse proxy in front of the same upstream, how many requests a
// second it serves to many sessions at once, and how fast RECALL reads one layer of a large
// archive on each store.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
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
	if c.Samples < 0 || c.Concurrency < 0 || c.SessionRequests < 0 || c.RecallArchived < 0 || c.RecallSamples < 0 {
		return hippocam.Errorf(hippocam.EINVALID, "overhead: samples, concurrency, requests and archive size must not be negative")
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
// sessions, and RECALL and search on SQLite and (with a DSN) Postgres. Everything runs in this process on
// loopback; temporary files and the Postgres schema are removed before it returns. EINVALID for
// a bad configuration; EUNAVAILABLE when Postgres cannot be reached; otherwise the first
// failure of a stage, wrapped with its name.
func RunOverhead(ctx context.Context, c OverheadConfig) (*OverheadReport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.withDefaults()
	began := time.Now()
	rep := &OverheadReport{CPUs: runtime.GOMAXPROCS(0), GoVersion: runtime.Version()}
	prog := newOverheadProgress(c.Progress)
	rig, err := newProxyRig(ctx)
	if err != nil {
		return nil, fmt.Errorf("overhead: %w", err)
	}
	defer rig.Close()
	for _, size := range c.Sizes {
		row, err := rig.latency(ctx, size, c.Samples, prog)
		if err != nil {
			return nil, fmt.Errorf("overhead: proxy at %d messages: %w", size, err)
		}
		rep.Proxy = append(rep.Proxy, row)
	}
	if rep.Throughput, err = rig.throughput(ctx, c.Concurrency, c.SessionRequests, prog); err != nil {
		return nil, fmt.Errorf("overhead: throughput: %w", err)
	}
	rig.Close()
	row, search, err := recallSQLite(ctx, c.RecallArchived, c.RecallSamples, prog)
	if err != nil {
		return nil, fmt.Errorf("overhead: recall on sqlite: %w", err)
	}
	rep.Recall, rep.Search = append(rep.Recall, row), append(rep.Search, search)
	if c.PostgresDSN == "" {
		rep.Notes = append(rep.Notes, "recall on postgres: skipped, no Postgres DSN given")
	} else {
		row, search, err := recallPostgres(ctx, c.PostgresDSN, c.RecallArchived, c.RecallSamples, prog)
		if err != nil {
			return nil, fmt.Errorf("overhead: recall on postgres: %w", err)
		}
		rep.Recall, rep.Search = append(rep.Recall, row), append(rep.Search, search)
	}
	rep.Notes = append(rep.Notes,
		"proxy: sessions prebuilt in the SQLite store with the transcript the proxy records; each sample resends the whole history plus one user message, bare and Hippocam in alternating order",
		"upstream: the simulated model (sim) on a loopback HTTP server, no added delay; its own serving time is included in both columns",
		"recall: archive bulk-loaded in the stores' schema, then read through the store's Children",
		"search: the same archive, each leaf holding a key of its own and a tag shared by one leaf in 1,000; queries through the store's Search for the latest 9 hits")
	rep.Seconds = roundSeconds(time.Since(began))
	return rep, nil
}

// Markdown renders the report as four tables.
func (r *OverheadReport) Markdown() string {
	var b strings.Builder
	b.WriteString("| session messages | Hippocam p50 ms | Hippocam p99 ms | bare p50 ms | bare p99 ms | added p99 ms | p99 ratio |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range r.Proxy {
		fmt.Fprintf(&b, "| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f× |\n",
			p.SessionMessages, p.P50Ms, p.P99Ms, p.BareP50Ms, p.BareP99Ms, p.AddedP99Ms, p.RatioP99)
	}
	t := r.Throughput
	b.WriteString("\n| sessions | requests | Hippocam req/s | p50 ms | p99 ms | bare req/s | bare p50 ms | bare p99 ms |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| %d | %d | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f |\n",
		t.Sessions, t.Requests, t.RequestsPerSecond, t.P50Ms, t.P99Ms, t.BareRequestsPerSecond, t.BareP50Ms, t.BareP99Ms)
	b.WriteString("\n| store | archived | refs | mean children | RECALL p50 ms | RECALL p99 ms |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|\n")
	for _, rc := range r.Recall {
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.3f | %.3f |\n", rc.Store, rc.Archived, rc.Refs, rc.MeanChildren, rc.P50Ms, rc.P99Ms)
	}
	b.WriteString("\n| store | archived | index MB | key p50 ms | key p99 ms | tag p50 ms | tag p99 ms | common word p50 ms | common word p99 ms |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Search {
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", s.Store, s.Archived, float64(s.IndexBytes)/(1<<20),
			s.KeyP50Ms, s.KeyP99Ms, s.TagP50Ms, s.TagP99Ms, s.CommonP50Ms, s.CommonP99Ms)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n- %s", n)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
	return b.String()
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
