package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/bench/learnstream"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sessions"
)

// The task-start run (`hippocam bench overhead --learn MODE`): what learning across tasks adds
// to a task's first answer at a provider's pace. The tasks of a generated `bench learn` decision
// stream each open a session of their own; the first request of each is sent streamed through
// Hippocam, learning in MODE, and through the bare proxy at the same moment, and the task is
// then ended by its outcome (with ?wait=1, so that the next task finds the clusters it fed).
// Only the first answers are timed: that is where routing and the advisory sit.

// Defaults of the task-start run; Quick ones where they differ.
const (
	DefaultLearnTaskStarts = 40
	QuickLearnTaskStarts   = 16
)

// StartLearningProxy starts a Hippocam proxy as StartProxy does (janus its JANUS mode), learning
// across tasks in mode learn (off, global or routed); routeWait is its --route-wait (0: the
// proxy's default; negative: the first answer waits for the router as long as it takes).
type StartLearningProxy func(ctx context.Context, upstream string, window int, janus, learn string, routeWait time.Duration) (base string, stop func() error, err error)

// OverheadTaskStarts is the task-start run: the first answers of Tasks tasks, each through
// Hippocam (learning in Learn) and the bare proxy at once. TTFB and total are as in the provider
// run; Decisions counts how each first answer recorded its task's routing (pinned, global,
// match, reuse, create, pending, stateless; "off" without learning).
type OverheadTaskStarts struct {
	Learn          string         `json:"learn"`
	RouteWaitMs    float64        `json:"route_wait_ms"`
	Janus          string         `json:"janus"`
	UpstreamTTFTMs float64        `json:"upstream_ttft_ms"`
	Tasks          int            `json:"tasks"`
	TTFBP50Ms      float64        `json:"ttfb_p50_ms"`
	TTFBP99Ms      float64        `json:"ttfb_p99_ms"`
	TTFBMeanMs     float64        `json:"ttfb_mean_ms"`
	BareTTFBP50Ms  float64        `json:"bare_ttfb_p50_ms"`
	BareTTFBP99Ms  float64        `json:"bare_ttfb_p99_ms"`
	BareTTFBMeanMs float64        `json:"bare_ttfb_mean_ms"`
	RatioTTFBP50   float64        `json:"ratio_ttfb_p50"`
	RatioTTFBP99   float64        `json:"ratio_ttfb_p99"`
	RatioTTFBMean  float64        `json:"ratio_ttfb_mean"`
	TotalP50Ms     float64        `json:"total_p50_ms"`
	BareTotalP50Ms float64        `json:"bare_total_p50_ms"`
	RatioTotalP50  float64        `json:"ratio_total_p50"`
	Decisions      map[string]int `json:"decisions"`
	// UpstreamCallsByRole counts Hippocam's upstream calls over the run, outcomes' updates
	// included.
	UpstreamCallsByRole map[string]int `json:"upstream_calls_by_role"`
	Seconds             float64        `json:"seconds"`
}

// runTaskStarts runs the task-start run.
func runTaskStarts(ctx context.Context, c OverheadConfig, prog *overheadProgress) (*OverheadTaskStarts, error) {
	began := time.Now()
	data, err := LearnStreamData(SuiteDecisions, 1, max(c.LearnTasks, DefaultLearnTasks))
	if err != nil {
		return nil, err
	}
	tasks, err := learnstream.Read(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	tasks = tasks[:min(c.LearnTasks, len(tasks))] // the stream's opening: its families come early
	start := c.StartLearningProxy
	if start == nil {
		start = startInProcessLearningProxy
	}
	rig, err := newProviderRig(ctx, c.Provider, func(ctx context.Context, upstream string) (string, func() error, error) {
		return start(ctx, upstream, c.ProviderWindow, c.ProviderJanus, c.Learn, c.RouteWait)
	})
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	ts := &OverheadTaskStarts{Learn: c.Learn, RouteWaitMs: durationMs(c.RouteWait), Janus: cmp.Or(c.ProviderJanus, string(engine.JanusBeside)),
		UpstreamTTFTMs: float64(c.Provider.TTFT.Milliseconds()), Decisions: map[string]int{}}
	var hip, bare [2]timings
	for i, task := range tasks {
		id := fmt.Sprintf("task-%03d", i+1)
		var history []wire.ChatMessage
		for _, m := range task.Messages {
			history = append(history, wire.ChatMessage{Role: string(m.Role), Content: wire.StringContent(m.Content)})
			if m.Role == hippocam.RoleUser {
				break // the first request: the framing and the first user message
			}
		}
		h, b, err := rig.step(ctx, id, history)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", task.ID, err)
		}
		hip[0], hip[1] = append(hip[0], h.ttfb), append(hip[1], h.total)
		bare[0], bare[1] = append(bare[0], b.ttfb), append(bare[1], b.total)
		decision, err := rig.decision(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", task.ID, err)
		}
		ts.Decisions[decision]++
		if c.Learn != sessions.LearnOff {
			var answer string
			json.Unmarshal(h.answer.Content, &answer) // null for an answer that only calls tools
			feedback := learnstream.Grade(&task, []string{answer}).Feedback
			if feedback == "" {
				feedback = "The task is done."
			}
			if err := rig.outcome(ctx, id, feedback); err != nil {
				return nil, fmt.Errorf("task %s: %w", task.ID, err)
			}
		}
		ts.Tasks++
		prog.report("task starts", ts.Tasks, len(tasks))
	}
	ts.TTFBP50Ms, ts.TTFBP99Ms, ts.TTFBMeanMs = hip[0].quantileMs(0.5), hip[0].quantileMs(0.99), hip[0].meanMs()
	ts.BareTTFBP50Ms, ts.BareTTFBP99Ms, ts.BareTTFBMeanMs = bare[0].quantileMs(0.5), bare[0].quantileMs(0.99), bare[0].meanMs()
	ts.TotalP50Ms, ts.BareTotalP50Ms = hip[1].quantileMs(0.5), bare[1].quantileMs(0.5)
	ts.RatioTTFBP50, ts.RatioTTFBP99 = latencyRatio(ts.TTFBP50Ms, ts.BareTTFBP50Ms), latencyRatio(ts.TTFBP99Ms, ts.BareTTFBP99Ms)
	ts.RatioTTFBMean, ts.RatioTotalP50 = latencyRatio(ts.TTFBMeanMs, ts.BareTTFBMeanMs), latencyRatio(ts.TotalP50Ms, ts.BareTotalP50Ms)
	ts.UpstreamCallsByRole = rig.upstreamCalls()
	ts.Seconds = roundSeconds(time.Since(began))
	return ts, nil
}

// meanMs is the mean in milliseconds, 0 for no timings.
func (ts timings) meanMs() float64 {
	if len(ts) == 0 {
		return 0
	}
	var sum time.Duration
	for _, t := range ts {
		sum += t
	}
	return roundMs(float64(sum.Nanoseconds()) / 1e6 / float64(len(ts)))
}

// decision is the routing decision a session records ("off" when it records none).
func (r *providerRig) decision(ctx context.Context, id string) (string, error) {
	body, err := r.call(ctx, http.MethodGet, "/api/sessions/"+id, nil)
	if err != nil {
		return "", err
	}
	var sess struct {
		Learning *hippocam.TaskLearning `json:"learning"`
	}
	if err := json.Unmarshal(body, &sess); err != nil {
		return "", fmt.Errorf("GET /api/sessions/%s: %v", id, err)
	}
	if sess.Learning == nil {
		return sessions.LearnOff, nil
	}
	return sess.Learning.Decision, nil
}

// outcome ends a task, waiting for its cluster's update.
func (r *providerRig) outcome(ctx context.Context, id, feedback string) error {
	b, err := json.Marshal(map[string]string{"feedback": feedback})
	if err != nil {
		return err
	}
	_, err = r.call(ctx, http.MethodPost, "/api/sessions/"+id+"/outcome?wait=1", b)
	return err
}

// call sends a request to Hippocam's API and returns the body of a 2xx answer.
func (r *providerRig) call(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, r.hippo+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: status %d: %.300s", method, path, resp.StatusCode, data)
	}
	return data, nil
}

// startInProcessLearningProxy is the StartLearningProxy of a run that names none: the httpapi
// server over a session service that learns in mode learn, with every memory system offered,
// its workers running, and a SQLite store in a temporary directory.
func startInProcessLearningProxy(ctx context.Context, upstream string, window int, janus, mode string, routeWait time.Duration) (string, func() error, error) {
	r, err := newInProcessRig(ctx, upstream, window, janus, "hippocam-task-starts-")
	if err != nil {
		return "", nil, err
	}
	fail := func(err error) (string, func() error, error) {
		r.close()
		return "", nil, err
	}
	tok, client, e, store := r.tok, r.client, r.engine, r.store
	cfg := sessions.Config{Engine: e, Store: store, Learn: mode, RouteWait: routeWait}
	if mode != sessions.LearnOff {
		cfg.LearnEnv = &learn.Env{Model: client, Tok: tok}
		if cfg.Systems, err = library.Library(cfg.LearnEnv, library.Names()); err != nil {
			return fail(err)
		}
	}
	svc, err := sessions.New(cfg)
	if err != nil {
		return fail(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: store, Sessions: svc, Upstream: client, Metrics: httpapi.NewMetrics()})
	if err != nil {
		return fail(err)
	}
	jctx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	jobs := make(chan struct{})
	go func() { svc.RunJobs(jctx); close(jobs) }()
	hs := httptest.NewServer(srv)
	return hs.URL, func() error {
		hs.Close()
		stopJobs()
		<-jobs
		return r.close()
	}, nil
}

// markdown renders the task-start run.
func (ts *OverheadTaskStarts) markdown(b *strings.Builder) {
	wait := "the proxy's default"
	switch {
	case ts.RouteWaitMs < 0:
		wait = "unbounded"
	case ts.RouteWaitMs > 0:
		wait = fmt.Sprintf("%.0f ms", ts.RouteWaitMs)
	}
	fmt.Fprintf(b, "Task starts, learning %s (route wait %s, JANUS %s), provider latency %.0f ms to first byte: the first answers of %d tasks of a `bench learn` decision stream, each ended by its outcome:\n\n",
		ts.Learn, wait, ts.Janus, ts.UpstreamTTFTMs, ts.Tasks)
	b.WriteString("| | Hippocam ms | bare ms | ratio |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(b, "| first answer's time to first byte p50 | %.1f | %.1f | %.2f× |\n", ts.TTFBP50Ms, ts.BareTTFBP50Ms, ts.RatioTTFBP50)
	fmt.Fprintf(b, "| first answer's time to first byte mean | %.1f | %.1f | %.2f× |\n", ts.TTFBMeanMs, ts.BareTTFBMeanMs, ts.RatioTTFBMean)
	fmt.Fprintf(b, "| first answer's time to first byte p99 | %.1f | %.1f | %.2f× |\n", ts.TTFBP99Ms, ts.BareTTFBP99Ms, ts.RatioTTFBP99)
	fmt.Fprintf(b, "| first answer's total p50 | %.1f | %.1f | %.2f× |\n", ts.TotalP50Ms, ts.BareTotalP50Ms, ts.RatioTotalP50)
	fmt.Fprintf(b, "\nRouting recorded by the first answers: %s; upstream calls (%s).\n", countsText(ts.Decisions), rolesText(ts.UpstreamCallsByRole))
}

// countsText lists counts by name, in name order.
func countsText(counts map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
