package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/sessions"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the server's Prometheus measurements, in a registry of its own (no global
// state): requests and their latency by route, model tokens, calls and cost by call role,
// consolidations, recall calls, forks and failures, the time to a stream's first text and the
// streams cut off by their client.
type Metrics struct {
	reg            *prometheus.Registry
	handler        http.Handler
	requests       *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	tokens         *prometheus.CounterVec
	calls          *prometheus.CounterVec
	cost           *prometheus.CounterVec
	consolidations *prometheus.CounterVec
	recalls        prometheus.Counter
	forks          prometheus.Counter
	events         *prometheus.CounterVec
	failures       *prometheus.CounterVec
	firstText      prometheus.Histogram
	cutOffs        prometheus.Counter
	waits          *prometheus.CounterVec
	verdicts       *prometheus.CounterVec
	verdictWait    prometheus.Histogram
	lag            prometheus.Histogram
	jobs           *prometheus.CounterVec
	consolidJobs   *prometheus.CounterVec
	routing        *prometheus.CounterVec
	advisory       prometheus.Counter
	outcomes       *prometheus.CounterVec
	watched        bool
}

// NewMetrics returns a fresh set of metrics with Go runtime and process collectors.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_http_requests_total",
			Help: "HTTP requests by route and status code."}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hippocam_http_request_duration_seconds",
			Help: "HTTP request latency by route, model calls included.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14)}, []string{"route"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_model_tokens_total",
			Help: "Model tokens by call role and type (input, cached_input, output)."}, []string{"role", "type"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_model_calls_total",
			Help: "Model calls by call role."}, []string{"role"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_model_cost_usd_total",
			Help: "Model cost in USD by call role, with the configured price schedule."}, []string{"role"}),
		consolidations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_consolidations_total",
			Help: "Committed consolidations by kind (intent, prefix)."}, []string{"kind"}),
		recalls: prometheus.NewCounter(prometheus.CounterOpts{Name: "hippocam_recall_calls_total",
			Help: "Recall calls answered inside the proxy."}),
		forks: prometheus.NewCounter(prometheus.CounterOpts{Name: "hippocam_session_forks_total",
			Help: "Histories that diverged from their session and continued in a fork."}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_session_events_total",
			Help: "Proxied requests by how they related to their session (created, continued, retried, regenerated, forked)."}, []string{"event"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_failures_total",
			Help: "Refused and failed requests by cause: invalid, too_large, method, not_found, capacity, conflict, unauthorized, forbidden, timeout, stream_cut, unreachable, internal, upstream_STATUS for a refusal of the upstream (upstream_429, upstream_529, upstream_500…), upstream_overloaded, upstream_rate_limited and upstream_error_event for an error event in its stream."}, []string{"kind"}),
		firstText: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hippocam_stream_first_text_seconds",
			Help: "Time from a streamed request to its first piece of answer text written to the client.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14)}),
		cutOffs: prometheus.NewCounter(prometheus.CounterOpts{Name: "hippocam_stream_cut_offs_total",
			Help: "Streamed answers whose client stopped reading or went away before the end (the step was committed all the same)."}),
	}
	m.waits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_consolidation_waits_total",
		Help: "Steps whose answer waited for consolidation left by earlier steps, each counted once, by why: their context would not have fitted the window without it, and they waited for the job a worker of this process was running (how=running) or ran the work themselves (how=window); the work had been pending for more steps than the lag bound and no job was at it (how=lag); the step regenerated an answer (how=regenerate); the service consolidates before answering (how=inline). Jobs workers run after the answer are not waits (hippocam_consolidation_jobs_total)."}, []string{"how"})
	m.lag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hippocam_consolidation_lag_steps",
		Help: "Steps that answered with consolidation left by earlier steps still pending (its count), by how many steps behind the oldest pending work was, this one included.", Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 32}})
	m.verdicts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_janus_verdicts_total",
		Help: "JANUS verdicts by what the step that took them did: applied (the stack changed), skip, failed (stack unchanged), dropped (the session had moved on; judged again), pending (not in within --janus-wait; applied at a later step). With --janus beside a step takes the verdict its session's previous step left."}, []string{"result"})
	m.verdictWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hippocam_janus_verdict_wait_seconds",
		Help: "Time steps waited for the JANUS verdict their session's previous step left (--janus beside), observed for steps that waited.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14)})
	m.jobs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_jobs_total",
		Help: "Consolidation jobs by outcome: done, or failed (put back in the queue to run again)."}, []string{"outcome"})
	m.consolidJobs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_consolidation_jobs_total",
		Help: "Consolidation jobs workers ran to the end, by result: consolidated (the job did the pending work and committed it), or nothing (a step or an earlier run had done it already)."}, []string{"result"})
	m.routing = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_learn_routing_total",
		Help: "Task starts by routing decision (reuse, create, pinned, global, stateless) and memory system."}, []string{"decision", "system"})
	m.advisory = prometheus.NewCounter(prometheus.CounterOpts{Name: "hippocam_learn_advisory_tokens_total",
		Help: "Tokens of the advisories put into task contexts."})
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hippocam_learn_outcomes_total",
		Help: "Task outcomes by what became of the cluster update: queued, done (?wait=1), none (no cluster), failed."}, []string{"update"})
	reg.MustRegister(m.requests, m.latency, m.tokens, m.calls, m.cost, m.consolidations, m.recalls, m.forks, m.events, m.failures, m.firstText, m.cutOffs, m.waits, m.lag, m.verdicts, m.verdictWait, m.jobs, m.consolidJobs, m.routing, m.advisory, m.outcomes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m
}

func (m *Metrics) observeRequest(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// observeResult counts what one request of the session service did.
func (m *Metrics) observeResult(res *sessions.Result) {
	m.events.WithLabelValues(string(res.Event)).Inc()
	if l := res.Learning; l != nil {
		m.routing.WithLabelValues(l.Decision, l.System).Inc()
		m.advisory.Add(float64(l.AdvisoryTokens))
	}
	// A step waited once at most: for the running job, or for the pending work it ran itself
	// before answering. One that did not wait may have answered with work still pending: its lag.
	switch {
	case res.Waited:
		m.waits.WithLabelValues("running").Inc()
	case res.Step != nil && res.Step.RanPending:
		how := res.Step.PendingReason
		if how == "" {
			how = engine.PendingInline
		}
		m.waits.WithLabelValues(how).Inc()
	}
	if res.Step != nil && res.Step.Lag > 0 {
		m.lag.Observe(float64(res.Step.Lag))
	}
	if res.Event == sessions.EventForked {
		m.forks.Inc()
	}
	if res.Step != nil {
		m.observeStep(res.Step)
	}
}

// observeJob counts a consolidation job the session service ran: its model calls, its
// consolidations, whether it landed.
func (m *Metrics) observeJob(res *engine.Result, err error) {
	if err != nil {
		m.jobs.WithLabelValues("failed").Inc()
		return
	}
	m.jobs.WithLabelValues("done").Inc()
	if res == nil {
		m.consolidJobs.WithLabelValues("nothing").Inc()
		return
	}
	m.consolidJobs.WithLabelValues("consolidated").Inc()
	m.observeStep(res) // its model calls and consolidations; a job is no step's wait

}

// observeStep counts the model calls and consolidations of a step or of a consolidation job.
func (m *Metrics) observeStep(res *engine.Result) {
	if res.Verdict != "" {
		m.verdicts.WithLabelValues(res.Verdict).Inc()
	}
	if res.VerdictWait > 0 {
		m.verdictWait.Observe(res.VerdictWait.Seconds())
	}
	for role, u := range res.Usage {
		r := string(role)
		m.calls.WithLabelValues(r).Add(float64(u.Calls))
		m.tokens.WithLabelValues(r, "input").Add(float64(u.Input))
		m.tokens.WithLabelValues(r, "cached_input").Add(float64(u.CachedInput))
		m.tokens.WithLabelValues(r, "output").Add(float64(u.Output))
		m.cost.WithLabelValues(r).Add(u.CostUSD)
	}
	m.consolidations.WithLabelValues("intent").Add(float64(res.IntentConsolidations))
	m.consolidations.WithLabelValues("prefix").Add(float64(res.PrefixConsolidations))
	m.recalls.Add(float64(res.RecallCalls))
}

// WatchService exposes the session service's own counters: cluster updates from ended tasks,
// task starts that ran stateless, consolidation jobs done and failed.
func (m *Metrics) WatchService(svc *sessions.Service) {
	if m.watched {
		return // one service per set of metrics
	}
	m.watched = true
	for _, c := range []struct {
		name, help string
		read       func(sessions.Stats) int64
	}{
		{"hippocam_learn_updates_total", "Cluster updates applied from ended tasks.", func(s sessions.Stats) int64 { return s.Learned }},
		{"hippocam_learn_stateless_total", "Routings of tasks that failed (the router gave up, or a model or store error): the step ran without memory, and the task is routed again until it runs stateless.", func(s sessions.Stats) int64 { return s.Stateless }},
		{"hippocam_learn_configured_total", "Numeric clusters configured on their first reuse.", func(s sessions.Stats) int64 { return s.Configured }},
		{"hippocam_learn_configuration_failed_total", "Numeric clusters whose configuration failed for good: they give no numeric advisory.", func(s sessions.Stats) int64 { return s.ConfigFailed }},
		{"hippocam_job_runs_failed_total", "Job runs that failed and were put back in the queue (consolidation and cluster updates).", func(s sessions.Stats) int64 { return s.JobsFailed }},
		{"hippocam_jobs_left_failed_total", "Jobs that kept failing and were left failed in the queue (not due again for a day).", func(s sessions.Stats) int64 { return s.JobsLeftFailed }},
		{"hippocam_jobs_started_total", "Jobs run for the first time (the denominator of the lag).", func(s sessions.Stats) int64 { return s.JobsStarted }},
		{"hippocam_consolidation_jobs_rebased_total", "Consolidation jobs whose session moved on while they made their model calls, their memories carried onto the newer version.", func(s sessions.Stats) int64 { return s.JobsRebased }},
		{"hippocam_consolidation_job_parts_dropped_total", "Memories of rebased consolidation jobs that could not be carried over (their span had changed); their work stays pending or is decided again.", func(s sessions.Stats) int64 { return s.JobPartsDropped }},
	} {
		read := c.read
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help}, func() float64 { return float64(read(svc.Stats())) }))
	}
	for _, ev := range svc.Stats().UpdateEvents {
		system, kind := ev.System, ev.Kind
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: updateEventMetric(system, kind), Help: ev.Help},
			func() float64 { return float64(svc.Stats().UpdateEventCount(system, kind)) }))
	}
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "hippocam_job_lag_seconds_total",
		Help: "Time jobs waited from being queued to their first run, summed (divide by hippocam_jobs_started_total)."}, func() float64 { return svc.Stats().JobLag.Seconds() }))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hippocam_consolidation_lag_steps_max",
		Help: "The most steps any step answered behind the oldest consolidation still pending, since the server started (see hippocam_consolidation_lag_steps)."}, func() float64 { return float64(svc.Stats().MaxLag) }))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hippocam_jobs_queued",
		Help: "Jobs in the store's queue (consolidations and cluster updates; running, due, or left failed), every replica's."}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := svc.QueuedJobs(ctx)
		if err != nil {
			return -1
		}
		return float64(n)
	}))
}

// WatchRecording exports the counts of the recorder of the upstream exchanges (serve --record):
// the lines written, and those lost (a write that failed, a full queue).
func (m *Metrics) WatchRecording(written, lost func() int64) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "hippocam_record_lines_total",
			Help: "Exchanges with the upstream written to the recording (serve --record)."}, func() float64 { return float64(written()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "hippocam_record_lost_total",
			Help: "Exchanges with the upstream the recording lost: a write that failed, or a full queue."}, func() float64 { return float64(lost()) }))
}

// updateEventMetric names the counter of one kind of change a memory system reports about its
// updates (hippocam.UpdateObserver): hippocam_lessons_added_total for the lessons added.
func updateEventMetric(system, kind string) string {
	return "hippocam_" + system + "_" + kind + "_total"
}
