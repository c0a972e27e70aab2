package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/postgres"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/jackc/pgx/v5"
)

// TestRunOverhead runs every stage at a tiny size and checks that each produced sane figures.
// With HIPPOCAM_TEST_POSTGRES set, the Postgres RECALL row is measured too.
func TestRunOverhead(t *testing.T) {
	dsn := os.Getenv("HIPPOCAM_TEST_POSTGRES")
	stages := map[string]bool{}
	var inside atomic.Int32
	cfg := OverheadConfig{Sizes: []int{50}, Samples: 10, Concurrency: 4, SessionRequests: 5, RecallArchived: 5000,
		ProviderSteps: 3, Provider: sim.Latency{TTFT: 5 * time.Millisecond, TokensPerSecond: 10_000},
		PostgresDSN: dsn, Progress: func(stage string, done, total int) {
			if inside.Add(1) != 1 {
				t.Error("Progress was called concurrently")
			}
			defer inside.Add(-1)
			if done < 1 || done > total {
				t.Errorf("stage %q: done %d of %d", stage, done, total)
			}
			stages[stage] = true
		}}
	rep, err := RunOverhead(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sane := func(what string, p50, p99 float64) {
		t.Helper()
		if !(p50 > 0 && p99 >= p50) {
			t.Errorf("%s: p50 %v ms, p99 %v ms", what, p50, p99)
		}
	}
	if len(rep.Proxy) != 1 {
		t.Fatalf("%d proxy rows, want 1", len(rep.Proxy))
	}
	p := rep.Proxy[0]
	if p.SessionMessages != 50 || p.Samples != 10 {
		t.Errorf("proxy row for %d messages, %d samples; want 50 and 10", p.SessionMessages, p.Samples)
	}
	sane("proxy", p.P50Ms, p.P99Ms)
	sane("bare proxy", p.BareP50Ms, p.BareP99Ms)
	// JANUS and the answer, no folds. JANUS runs beside the answer, so the last request's call
	// may still be under way when the counters are read: one call short at most.
	if p.UpstreamCalls > 2 || p.UpstreamCalls < 2-1/float64(p.Samples) {
		t.Errorf("%v upstream calls per Hippocam request, want 2 (JANUS and the answer)", p.UpstreamCalls)
	}
	th := rep.Throughput
	if th.Sessions != 4 || th.Requests != 20 || !(th.RequestsPerSecond > 0) || !(th.BareRequestsPerSecond > 0) {
		t.Errorf("throughput %+v", th)
	}
	sane("throughput", th.P50Ms, th.P99Ms)
	sane("bare throughput", th.BareP50Ms, th.BareP99Ms)
	want := []string{"sqlite"}
	if dsn != "" {
		want = append(want, "postgres")
	} else if !strings.Contains(strings.Join(rep.Notes, "\n"), "postgres: skipped") {
		t.Errorf("notes %q do not say that Postgres was skipped", rep.Notes)
	}
	if len(rep.Recall) != len(want) {
		t.Fatalf("%d recall rows, want %v", len(rep.Recall), want)
	}
	for i, r := range rep.Recall {
		if r.Store != want[i] || r.Archived != 5000 || r.Refs < 5000/50 || r.Samples != DefaultRecallSamples || !(r.MeanChildren >= 10) {
			t.Errorf("recall row %+v", r)
		}
		sane("recall on "+r.Store, r.P50Ms, r.P99Ms)
	}
	if len(rep.Search) != len(want) {
		t.Fatalf("%d search rows, want %v", len(rep.Search), want)
	}
	for i, r := range rep.Search {
		if r.Store != want[i] || r.Archived != 5000 || r.IndexBytes <= 0 || r.Samples != DefaultRecallSamples {
			t.Errorf("search row %+v", r)
		}
		sane("key search on "+r.Store, r.KeyP50Ms, r.KeyP99Ms)
		sane("tag search on "+r.Store, r.TagP50Ms, r.TagP99Ms)
		sane("common-word search on "+r.Store, r.CommonP50Ms, r.CommonP99Ms)
	}
	if rep.Provider == nil || rep.Provider.Steps != 3 {
		t.Errorf("provider run %+v, want 3 steps", rep.Provider)
	}
	for _, s := range []string{"proxy 50", "throughput hippocam", "throughput bare", "recall sqlite load", "recall sqlite", "search sqlite", "provider"} {
		if !stages[s] {
			t.Errorf("no progress for stage %q (saw %v)", s, stages)
		}
	}
	if dsn != "" {
		checkNoSchemaLeft(t, dsn)
	}
	if md := rep.Markdown(); !strings.Contains(md, "| 50 |") || !strings.Contains(md, "| sqlite |") {
		t.Errorf("markdown:\n%s", md)
	}
}

// TestOverheadConfig checks the defaults, Quick and validation.
func TestOverheadConfig(t *testing.T) {
	t.Run("Full", func(t *testing.T) {
		c := OverheadConfig{}.withDefaults()
		if len(c.Sizes) != 3 || c.Sizes[2] != 10_000 || c.Samples != 200 || c.Concurrency != 64 || c.RecallArchived != 1_000_000 ||
			c.ProviderSteps != 60 || c.ProviderWindow != 16000 || c.Provider != (sim.Latency{TTFT: 400 * time.Millisecond, TokensPerSecond: 80}) {
			t.Errorf("%+v", c)
		}
	})
	t.Run("Quick", func(t *testing.T) {
		c := OverheadConfig{Quick: true, Samples: 7}.withDefaults()
		if len(c.Sizes) != 2 || c.Sizes[1] != 1000 || c.Samples != 7 || c.Concurrency != 16 || c.RecallArchived != 100_000 || c.ProviderSteps != 12 {
			t.Errorf("%+v", c)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, c := range []OverheadConfig{{Sizes: []int{0}}, {Samples: -1}, {RecallArchived: -5}, {ProviderSteps: -1},
			{ProviderWindow: 4000}, {Provider: sim.Latency{TTFT: -time.Second}}} {
			if _, err := RunOverhead(context.Background(), c); hippocam.ErrorCode(err) != hippocam.EINVALID {
				t.Errorf("%+v: %v, want EINVALID", c, err)
			}
		}
	})
}

// TestRecallArchiveLossless loads the RECALL archive in bulk and reads it back through the store:
// the expansion of the context yields every leaf once, in order, and the session takes a commit
// afterwards. It guards the bulk loaders against a change of the stores' schema.
func TestRecallArchiveLossless(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "h.db")
		db := sqlite.New(path)
		if err := db.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		checkLossless(t, "sqlite", func(ctx context.Context, leaves int) (hippocam.Store, archiveTree) {
			return loadForTest(t, db, sqliteTestLoader(t, path), leaves)
		})
	})
	t.Run("Postgres", func(t *testing.T) {
		dsn := os.Getenv("HIPPOCAM_TEST_POSTGRES")
		if dsn == "" {
			t.Skip("HIPPOCAM_TEST_POSTGRES is not set")
		}
		ctx := t.Context()
		admin, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close(context.Background())
		schema := "hippocam_bench_test_" + strconv.Itoa(os.Getpid())
		if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE; CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		defer admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		db := postgres.New(schemaDSN(dsn, schema))
		if err := db.Open(ctx); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conn, err := pgx.Connect(ctx, schemaDSN(dsn, schema))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		checkLossless(t, "postgres", func(ctx context.Context, leaves int) (hippocam.Store, archiveTree) {
			return loadForTest(t, db, postgresLoader{conn}, leaves)
		})
	})
}

// checkNoSchemaLeft fails if a schema RunOverhead creates is still in the database.
func checkNoSchemaLeft(t *testing.T, dsn string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var left int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'hippocam\_bench\_1%'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d benchmark schemas left behind (%v)", left, err)
	}
}

func sqliteTestLoader(t *testing.T, path string) sqliteLoader {
	t.Helper()
	raw, err := openSQLiteLoader(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return sqliteLoader{raw}
}

// loadForTest creates the RECALL session in st and bulk-loads an archive of leaves leaves.
func loadForTest(t *testing.T, st hippocam.Store, l archiveLoader, leaves int) (hippocam.Store, archiveTree) {
	t.Helper()
	ctx := t.Context()
	if err := st.CreateSession(ctx, &hippocam.Session{ID: recallSession, Usage: hippocam.Usage{}}); err != nil {
		t.Fatal(err)
	}
	tree, err := generateArchive(leaves, func(rows []archiveRow) error { return l.write(ctx, rows) })
	if err == nil {
		err = l.finish(ctx, tree)
	}
	if err != nil {
		t.Fatal(err)
	}
	return st, tree
}

func checkLossless(t *testing.T, store string, load func(context.Context, int) (hippocam.Store, archiveTree)) {
	t.Helper()
	ctx := t.Context()
	const leaves = 25_000 // more than one load batch
	st, tree := load(ctx, leaves)
	s, err := st.Session(ctx, "", recallSession)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Context) != tree.context || s.Seq != tree.seq || len(s.Context) == 0 {
		t.Fatalf("%s: context of %d (want %d), seq %d (want %d)", store, len(s.Context), tree.context, s.Seq, tree.seq)
	}
	all, err := hippocam.Expand(ctx, hippocam.SessionArchive(st, "", recallSession), s.Context)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != leaves {
		t.Fatalf("%s: the context expands to %d messages, want %d", store, len(all), leaves)
	}
	last := -1
	for i, m := range all {
		n, err := strconv.Atoi(strings.TrimPrefix(m.ID, "m"))
		if err != nil || n <= last || m.Role != hippocam.RoleTool || m.Kind != hippocam.KindRaw || m.Content != leafContent(i) || m.Tokens != 100 {
			t.Fatalf("%s: leaf %+v after m%d", store, m, last)
		}
		last = n
	}
	// The loader filled the search index as commits do: a leaf's key finds that leaf in its
	// layer, and a word of every leaf finds the last ones first.
	for _, i := range []int{0, leaves / 2, leaves - 1} {
		hits, err := st.Search(ctx, "", recallSession, fmt.Sprintf("k%d", i), 10)
		if err != nil || len(hits) != 1 || hits[0].Message.ID != all[i].ID || hits[0].Ref == "" {
			t.Fatalf("%s: search for leaf %d's key: %v, %+v", store, i, err, hits)
		}
	}
	hits, err := st.Search(ctx, "", recallSession, "tool output", 3)
	if err != nil || len(hits) != 3 || hits[0].Message.ID != all[leaves-1].ID || hits[2].Message.ID != all[leaves-3].ID {
		t.Fatalf("%s: search for a common word: %v, %d hits", store, err, len(hits))
	}
	for _, ref := range []string{tree.refs[0], tree.refs[len(tree.refs)-1]} {
		kids, err := st.Children(ctx, "", recallSession, ref)
		if err != nil || len(kids) < 1 || len(kids) > 50 {
			t.Errorf("%s: ref %s has %d children (%v)", store, ref, len(kids), err)
		}
	}
	m := hippocam.Message{ID: s.NextID("m"), Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "one more", Tokens: 3}
	if err := st.Commit(ctx, s, hippocam.Change{From: s.Version, Ops: []hippocam.Op{hippocam.AppendOp(m)}}); err != nil {
		t.Errorf("%s: commit after the bulk load: %v", store, err)
	}
}

// TestRunOverheadProvider runs the provider run alone on a few steps at a small latency and
// checks its figures against what the latency implies: both proxies' first content bytes come
// after the upstream's time to first byte, no request ends before its first byte, and the
// quantiles, ratios and shares agree with the per-request timings.
func TestRunOverheadProvider(t *testing.T) {
	const ttft = 60 * time.Millisecond
	var started atomic.Int32
	cfg := OverheadConfig{ProviderOnly: true, ProviderSteps: 6, Provider: sim.Latency{TTFT: ttft, TokensPerSecond: 4000},
		StartProxy: func(ctx context.Context, upstream string, window int, janus string) (string, func() error, error) {
			started.Add(1)
			if window != DefaultProviderWindow || !strings.HasSuffix(upstream, "/v1") {
				t.Errorf("the proxy is started with window %d and upstream %q", window, upstream)
			}
			return startInProcessProxy(ctx, upstream, window, janus)
		}}
	rep, err := RunOverhead(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if started.Load() != 1 || len(rep.Proxy) != 0 || len(rep.Recall) != 0 {
		t.Fatalf("StartProxy called %d times; %d proxy rows and %d recall rows in a provider-only run", started.Load(), len(rep.Proxy), len(rep.Recall))
	}
	p := rep.Provider
	if p == nil || p.Steps != 6 || len(p.Requests) != 6 || p.Workload != NameAgentic || p.UpstreamTTFTMs != 60 || p.UpstreamTokensPerSecond != 4000 {
		t.Fatalf("provider run %+v", p)
	}
	var hip, bare [2]timings
	for i, s := range p.Requests {
		if s.Step != i+1 {
			t.Errorf("request %d is numbered %d", i, s.Step)
		}
		for _, pair := range [][2]float64{{s.TTFBMs, s.TotalMs}, {s.BareTTFBMs, s.BareTotalMs}} {
			if pair[0] < float64(ttft.Milliseconds()) || pair[1] < pair[0] {
				t.Errorf("step %d: first content byte after %v ms, end after %v ms (the upstream alone waits %v)", s.Step, pair[0], pair[1], ttft)
			}
		}
		ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
		hip[0], hip[1] = append(hip[0], ms(s.TTFBMs)), append(hip[1], ms(s.TotalMs))
		bare[0], bare[1] = append(bare[0], ms(s.BareTTFBMs)), append(bare[1], ms(s.BareTotalMs))
	}
	var want OverheadProvider
	want.fill(hip, bare)
	if math.Abs(want.TTFBP50Ms-p.TTFBP50Ms) > 0.01 || math.Abs(want.BareTotalP99Ms-p.BareTotalP99Ms) > 0.01 || p.RatioTTFBP50 != latencyRatio(p.TTFBP50Ms, p.BareTTFBP50Ms) {
		t.Errorf("quantiles %+v do not match the requests' (%+v)", p, want)
	}
	// Every step calls the main model at least once through Hippocam, and JANUS runs beside it.
	if p.UpstreamCallsByRole["agent"] < p.Steps || p.UpstreamCallsByRole["janus"] < 1 || p.UpstreamCallsPerStep < 1 {
		t.Errorf("upstream calls %v (%v per step)", p.UpstreamCallsByRole, p.UpstreamCallsPerStep)
	}
	if p.ShareWaited < 0 || p.ShareWaited > 1 || p.ShareVerdictWaited < 0 || p.ShareVerdictWaited > 1 || p.Janus != "beside" {
		t.Errorf("shares waited %v, for a verdict %v (JANUS %q)", p.ShareWaited, p.ShareVerdictWaited, p.Janus)
	}
	md := rep.Markdown()
	if !strings.Contains(md, "time to first byte p50") || !strings.Contains(md, "≤ 1.5×") {
		t.Errorf("markdown:\n%s", md)
	}
	ttfbSVG, totalSVG, ok := ProviderPlots(p)
	if !ok || !bytes.Contains(ttfbSVG, []byte("Time to first content byte")) || !bytes.Contains(totalSVG, []byte("bare proxy")) || bytes.Count(ttfbSVG, []byte("<circle")) < 2*p.Steps {
		t.Errorf("plots: %t, %d and %d bytes", ok, len(ttfbSVG), len(totalSVG))
	}
}

// TestReadPromText reads a small exposition: labelled and unlabelled series, escapes, comments,
// and sums by label; a series that is absent sums to 0.
func TestReadPromText(t *testing.T) {
	const text = `# HELP hippocam_consolidation_waits_total Steps that waited.
# TYPE hippocam_consolidation_waits_total counter
hippocam_consolidation_waits_total{how="inline"} 3
hippocam_consolidation_waits_total{how="running",tenant="a \"b\""} 2
hippocam_consolidation_waits_total{tenant="x",how="running"} 1.5e+00
hippocam_recall_calls_total 7 1700000000000
`
	s, err := readPromText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, label, value string
		want               float64
	}{
		{metricWaits, "how", "running", 3.5},
		{metricWaits, "how", "inline", 3},
		{metricWaits, "", "", 6.5},
		{"hippocam_recall_calls_total", "", "", 7},
		{metricVerdictWaits, "", "", 0},
	} {
		if got := s.sum(c.name, c.label, c.value); got != c.want {
			t.Errorf("%s{%s=%q}: %v, want %v", c.name, c.label, c.value, got, c.want)
		}
	}
	if s[1].labels["tenant"] != `a "b"` {
		t.Errorf("escaped label read as %q", s[1].labels["tenant"])
	}
	for _, bad := range []string{"novalue", `m{how="x} 1`, `m{how} 1`, "m one"} {
		if _, err := readPromText(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The provider run's share of steps that waited counts the waits the proxy reports, not the
// consolidation jobs its workers ran after the answers (reported apart).
func TestProviderCountsWaitsApartFromJobs(t *testing.T) {
	read := func(text string) promSeries {
		s, err := readPromText(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := read(`hippocam_consolidation_jobs_total{result="consolidated"} 4
hippocam_consolidation_waits_total{how="inline"} 1
`)
	after := read(`hippocam_consolidation_jobs_total{result="consolidated"} 25
hippocam_consolidation_jobs_total{result="nothing"} 3
hippocam_consolidation_waits_total{how="inline"} 2
hippocam_consolidation_waits_total{how="running"} 1
`)
	p := &OverheadProvider{Steps: 40}
	p.count(before, after, map[string]int{})
	if p.WaitsInline != 1 || p.WaitsRunning != 1 || p.ConsolidationJobs != 21 || p.ShareWaited != 0.05 {
		t.Fatalf("waits inline %d, running %d, jobs %d, share waited %v; want 1, 1, 21, 0.05", p.WaitsInline, p.WaitsRunning, p.ConsolidationJobs, p.ShareWaited)
	}
}

// TestRunOverheadTaskStarts times a few task starts with the router on, in process: every task
// is timed once through each proxy, after the upstream's first byte, and records a routing
// decision; the tasks that share a title go to their cluster by a lexical match.
func TestRunOverheadTaskStarts(t *testing.T) {
	const ttft = 20 * time.Millisecond
	cfg := OverheadConfig{ProviderOnly: true, Learn: "routed", LearnTasks: 12, RouteWait: -1, Provider: sim.Latency{TTFT: ttft, TokensPerSecond: 4000}}
	rep, err := RunOverhead(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := rep.TaskStarts
	if rep.Provider != nil || ts == nil || ts.Tasks != 12 || ts.Learn != "routed" {
		t.Fatalf("report: provider %+v, task starts %+v", rep.Provider, ts)
	}
	n := 0
	for _, k := range ts.Decisions {
		n += k
	}
	if n != 12 || ts.Decisions["match"] == 0 || ts.Decisions["create"] == 0 || ts.Decisions["pending"] != 0 {
		t.Fatalf("decisions %v: want 12, some clusters made by the router and some tasks matched to them", ts.Decisions)
	}
	if ts.TTFBP50Ms < 20 || ts.BareTTFBP50Ms < 20 || ts.RatioTTFBP50 <= 0 || ts.UpstreamCallsByRole["router"] != ts.Decisions["create"]+ts.Decisions["reuse"] {
		t.Fatalf("task starts %+v", ts)
	}
	if md := rep.Markdown(); !strings.Contains(md, "Task starts, learning routed") {
		t.Fatalf("markdown:\n%s", md)
	}
}
