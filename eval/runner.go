package eval

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sync"

	"github.com/hippocam/hippocam"
)

// The conditions a run compares.
const (
	// CondHippocam sends the conversation through Hippocam's proxy as an agent would, one
	// session per request, then asks each question in its own fork of that history.
	CondHippocam = "hippocam"
	// CondFull sends the whole conversation and the question straight to the endpoint.
	CondFull = "full"
	// CondTruncate sends only the newest part of the conversation that fits the window.
	CondTruncate = "truncate"
)

// Conditions lists every condition, in report order.
var Conditions = []string{CondHippocam, CondFull, CondTruncate}

// Defaults of Config.
const (
	DefaultAnswerTokens = 512
	ackTokens           = 200
	judgeTokens         = 300
)

// Config is one run.
type Config struct {
	Conditions []string
	// Model answers; JudgeModel grades (Model when empty).
	Model, JudgeModel string
	// Window is the context window of the hippocam and truncate conditions, in tokens.
	Window int
	// Batch is how many questions one request asks (1 when less).
	Batch int
	// Limit caps the questions of the run (0: all), taken in dataset order.
	Limit int
	// Parallel is how many samples run at once (1 when less); each condition finishes before
	// the next begins.
	Parallel int
	// AnswerTokens is the most an answer may take per question (DefaultAnswerTokens when 0).
	AnswerTokens int
	// Prices, when set, price every call; without them costs stay null.
	Prices *hippocam.Prices
	// RunID prefixes the proxy's session names, so that runs sharing a store stay apart.
	RunID string
	Tok   hippocam.Tokenizer

	// Direct is the endpoint itself. Proxy is the same endpoint behind Hippocam: the runner
	// names each request's session with WithSession, which SessionTransport turns into the
	// Hippocam-Session header. Judge grades (usually Direct).
	Direct, Proxy, Judge hippocam.Model
	// ProxyUsage, when set, returns what the proxy's sessions whose names start with prefix
	// consumed, by call role: Hippocam's own calls (JANUS, PRECIP, PALIM) included.
	ProxyUsage func(ctx context.Context, prefix string) (hippocam.Usage, error)

	// OnRow receives each graded row as soon as it is done; Progress the units done of the
	// total (a unit is one ingested session or one answered question). Neither is called
	// concurrently.
	OnRow    func(Row) error
	Progress func(done, total int)
}

// Row is the result of one question under one condition.
type Row struct {
	Condition  string `json:"condition"`
	Sample     string `json:"sample"`
	QuestionID string `json:"question_id"`
	Question   string `json:"question"`
	Category   string `json:"category"`
	Gold       string `json:"gold"`
	Answer     string `json:"answer"`
	Verdict    string `json:"verdict"`
	Reason     string `json:"reason,omitempty"`
	Error      string `json:"error,omitempty"`
	// Batch is how many questions shared the request that answered this one; its usage is
	// split evenly among them.
	Batch             int      `json:"batch"`
	InputTokens       int      `json:"input_tokens"`
	CachedInputTokens int      `json:"cached_input_tokens"`
	OutputTokens      int      `json:"output_tokens"`
	CostUSD           *float64 `json:"cost_usd"`
	JudgeInputTokens  int      `json:"judge_input_tokens"`
	JudgeOutputTokens int      `json:"judge_output_tokens"`
	JudgeCostUSD      *float64 `json:"judge_cost_usd"`
}

// CondUsage is what one condition consumed besides its rows' answers.
type CondUsage struct {
	// Ingest is the calls that fed the conversation to the proxy (hippocam only), as the
	// client saw them.
	Ingest hippocam.RoleUsage `json:"ingest"`
	// Proxy is everything the proxy's sessions of the run consumed, by role: ingest, answers
	// and Hippocam's own calls (hippocam only, when the proxy reports it).
	Proxy hippocam.Usage `json:"proxy,omitempty"`
}

// Result is a whole run.
type Result struct {
	Format   string               `json:"format"`
	Model    string               `json:"model"`
	Judge    string               `json:"judge_model"`
	Window   int                  `json:"context_window"`
	Batch    int                  `json:"batch"`
	Excluded map[string]int       `json:"excluded,omitempty"`
	Rows     []Row                `json:"-"`
	Usage    map[string]CondUsage `json:"usage"`
	priced   bool
	prices   hippocam.Prices
}

type sessionKey struct{}

// WithSession names the proxy session a request through Config.Proxy belongs to.
func WithSession(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, sessionKey{}, name)
}

// SessionTransport sets the Hippocam-Session header of every request whose context was named
// with WithSession.
type SessionTransport struct{ Base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t SessionTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if name, ok := r.Context().Value(sessionKey{}).(string); ok && name != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Hippocam-Session", name)
	}
	return base.RoundTrip(r)
}

// Select applies the limit: the first limit questions in dataset order (all when limit ≤ 0),
// dropping the samples left without a question.
func Select(d *Dataset, limit int) []Sample {
	var out []Sample
	left := limit
	for _, s := range d.Samples {
		if limit > 0 {
			if left <= 0 {
				break
			}
			if len(s.Questions) > left {
				s.Questions = s.Questions[:left]
			}
			left -= len(s.Questions)
		}
		if len(s.Questions) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// Run runs every condition of cfg over the dataset's selected questions.
func Run(ctx context.Context, cfg Config, d *Dataset) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	samples := Select(d, cfg.Limit)
	res := &Result{Format: d.Format, Model: cfg.Model, Judge: cfg.JudgeModel, Window: cfg.Window, Batch: cfg.Batch,
		Excluded: d.Excluded, Usage: map[string]CondUsage{}, priced: cfg.Prices != nil}
	if cfg.Prices != nil {
		res.prices = *cfg.Prices
	}
	total := 0
	for _, c := range cfg.Conditions {
		for _, s := range samples {
			total += len(s.Questions)
			if c == CondHippocam {
				total += len(s.Sessions)
			}
		}
	}
	r := &runner{cfg: cfg, res: res, total: total}
	for _, c := range cfg.Conditions {
		u := CondUsage{}
		rows, err := r.condition(ctx, c, samples, &u)
		for _, rs := range rows {
			res.Rows = append(res.Rows, rs...)
		}
		if err != nil {
			return res, err
		}
		if c == CondHippocam && cfg.ProxyUsage != nil {
			pu, err := cfg.ProxyUsage(ctx, r.sessionPrefix())
			if err != nil {
				return res, fmt.Errorf("the proxy's usage: %w", err)
			}
			u.Proxy = pu
		}
		res.Usage[c] = u
	}
	return res, nil
}

// check refuses a run that cannot start and fills in the defaults.
func (cfg *Config) check() error {
	if len(cfg.Conditions) == 0 {
		return fmt.Errorf("no condition to run")
	}
	for _, c := range cfg.Conditions {
		switch c {
		case CondHippocam:
			if cfg.Proxy == nil {
				return fmt.Errorf("the hippocam condition needs the proxy")
			}
		case CondFull, CondTruncate:
		default:
			return fmt.Errorf("unknown condition %q (hippocam, full, truncate)", c)
		}
	}
	if cfg.Direct == nil || cfg.Judge == nil || cfg.Tok == nil {
		return fmt.Errorf("the run needs the endpoint, the judge and a tokenizer")
	}
	if cfg.Window < 512 {
		return fmt.Errorf("the context window must be at least 512 tokens")
	}
	if cfg.Batch < 1 {
		cfg.Batch = 1
	}
	if cfg.Parallel < 1 {
		cfg.Parallel = 1
	}
	if cfg.AnswerTokens <= 0 {
		cfg.AnswerTokens = DefaultAnswerTokens
	}
	if cfg.JudgeModel == "" {
		cfg.JudgeModel = cfg.Model
	}
	return nil
}

type runner struct {
	cfg Config
	res *Result
	// mu guards what the samples running side by side share: the progress count, OnRow and
	// the usage of the condition.
	mu          sync.Mutex
	done, total int
}

// condition runs every sample under one condition, cfg.Parallel of them at a time, and returns
// their rows in sample order. The first error stops the samples not yet started and cancels
// the others.
func (r *runner) condition(ctx context.Context, cond string, samples []Sample, u *CondUsage) ([][]Row, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rows := make([][]Row, len(samples))
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for w := 0; w < min(r.cfg.Parallel, len(samples)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var err error
				if rows[i], err = r.sample(ctx, cond, samples[i], u); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
	for i := range samples {
		select {
		case next <- i:
			continue
		case <-ctx.Done():
		}
		break
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return rows, first
}

// step counts one unit done.
func (r *runner) step() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.done, r.total)
	}
}

// emit hands on one graded row and counts it.
func (r *runner) emit(row Row) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.done, r.total)
	}
	if r.cfg.OnRow != nil {
		return r.cfg.OnRow(row)
	}
	return nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// sessionPrefix starts the name of every proxy session of the run.
func (r *runner) sessionPrefix() string {
	return "eval-" + unsafeName.ReplaceAllString(r.cfg.RunID, "_") + "-"
}

// sample runs one sample under one condition: ingest (hippocam), then its questions, batch by
// batch.
func (r *runner) sample(ctx context.Context, cond string, s Sample, u *CondUsage) ([]Row, error) {
	history := []hippocam.Message{{Role: hippocam.RoleSystem, Content: agentSystem}}
	var model hippocam.Model = r.cfg.Direct
	var ingestErr error
	if cond == CondHippocam {
		model = r.cfg.Proxy
		name := r.sessionPrefix() + unsafeName.ReplaceAllString(s.ID, "_")
		ctx = WithSession(ctx, name)
		for i, sess := range s.Sessions {
			history = append(history, sessionMessage(sess, i, len(s.Sessions)))
			if ingestErr == nil {
				resp, err := model.Complete(ctx, &hippocam.Request{Role: hippocam.CallAgent, Model: r.cfg.Model, Messages: history, MaxTokens: ackTokens})
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if err != nil {
					ingestErr = fmt.Errorf("ingesting session %d: %w", i+1, err)
				} else {
					ack := resp.Message
					ack.Role, ack.Kind, ack.ToolCalls = hippocam.RoleAssistant, "", nil
					history = append(history, ack)
					r.mu.Lock()
					addUsage(&u.Ingest, resp.Usage, r.cfg.Prices)
					r.mu.Unlock()
				}
			}
			r.step()
		}
	}
	var rows []Row
	for start := 0; start < len(s.Questions); start += r.cfg.Batch {
		qs := s.Questions[start:min(start+r.cfg.Batch, len(s.Questions))]
		got, err := r.ask(ctx, cond, model, s, history, qs, ingestErr)
		rows = append(rows, got...)
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// ask answers a batch of questions, grades each answer and hands on the rows.
func (r *runner) ask(ctx context.Context, cond string, model hippocam.Model, s Sample, history []hippocam.Message, qs []Question, failed error) ([]Row, error) {
	q := batchMessage(qs)
	var msgs []hippocam.Message
	switch cond {
	case CondTruncate:
		msgs = r.fit(s, q, len(qs))
	case CondFull:
		msgs = append(conversation(s), q)
	default:
		msgs = append(append([]hippocam.Message(nil), history...), q)
	}
	rows := make([]Row, len(qs))
	for i, x := range qs {
		rows[i] = Row{Condition: cond, Sample: s.ID, QuestionID: x.ID, Question: x.Text, Category: x.Category, Gold: x.Gold, Batch: len(qs)}
	}
	answers := make([]string, len(qs))
	err := failed
	if err == nil {
		var resp *hippocam.Response
		resp, err = model.Complete(ctx, &hippocam.Request{Role: hippocam.CallAgent, Model: r.cfg.Model, Messages: msgs, MaxTokens: r.cfg.AnswerTokens * len(qs)})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil {
			answers = splitAnswers(resp.Message.Content, len(qs))
			split(rows, resp.Usage, r.cfg.Prices)
		}
	}
	for i := range rows {
		if err != nil {
			rows[i].Verdict, rows[i].Error = Unjudged, "answer: "+err.Error()
		} else {
			rows[i].Answer = answers[i]
			if err := r.grade(ctx, qs[i], &rows[i]); err != nil {
				return rows[:i], err
			}
		}
		if err := r.emit(rows[i]); err != nil {
			return rows[:i+1], err
		}
	}
	return rows, nil
}

// grade asks the judge about one answer. A failed or unreadable judgement leaves the row
// unjudged with the reason; only a cancelled run is an error.
func (r *runner) grade(ctx context.Context, q Question, row *Row) error {
	resp, err := r.cfg.Judge.Complete(ctx, &hippocam.Request{Role: hippocam.CallJudge, Model: r.cfg.JudgeModel, MaxTokens: judgeTokens,
		Messages: []hippocam.Message{{Role: hippocam.RoleSystem, Content: judgeSystem}, judgeMessage(q, row.Answer)}})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		row.Verdict, row.Error = Unjudged, "judge: "+err.Error()
		return nil
	}
	row.JudgeInputTokens, row.JudgeOutputTokens = resp.Usage.Input, resp.Usage.Output
	row.JudgeCostUSD = cost(resp.Usage, r.cfg.Prices)
	v, reason, err := readVerdict(resp.Message.Content)
	if err != nil {
		row.Verdict, row.Error = Unjudged, err.Error()
		return nil
	}
	row.Verdict, row.Reason = v, reason
	return nil
}

// conversation is the framing and every session of s, one user message each.
func conversation(s Sample) []hippocam.Message {
	msgs := []hippocam.Message{{Role: hippocam.RoleSystem, Content: agentSystem}}
	for i, sess := range s.Sessions {
		msgs = append(msgs, sessionMessage(sess, i, len(s.Sessions)))
	}
	return msgs
}

// fit is the truncate condition's request: the framing, then the newest sessions that fit the
// window with the question and room for the answer; the oldest session kept may lose its
// earliest turns. The question is always sent, even if it alone overflows.
func (r *runner) fit(s Sample, q hippocam.Message, n int) []hippocam.Message {
	head := []hippocam.Message{{Role: hippocam.RoleSystem, Content: agentSystem}}
	budget := r.cfg.Window - r.cfg.AnswerTokens*n
	fits := func(body []hippocam.Message) bool {
		all := append(append(append([]hippocam.Message(nil), head...), body...), q)
		return hippocam.RequestTokens(r.cfg.Tok, all, nil) <= budget
	}
	var kept []hippocam.Message
	for i := len(s.Sessions) - 1; i >= 0; i-- {
		m := sessionMessage(s.Sessions[i], i, len(s.Sessions))
		if fits(append([]hippocam.Message{m}, kept...)) {
			kept = append([]hippocam.Message{m}, kept...)
			continue
		}
		// The newest turns of this session that still fit, then stop.
		turns := s.Sessions[i].Turns
		lo, hi := 1, len(turns) // find the smallest start index whose tail fits
		for lo < hi {
			mid := (lo + hi) / 2
			part := Session{Date: s.Sessions[i].Date, Turns: turns[mid:]}
			if fits(append([]hippocam.Message{sessionMessage(part, i, len(s.Sessions))}, kept...)) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if lo < len(turns) {
			part := Session{Date: s.Sessions[i].Date, Turns: turns[lo:]}
			kept = append([]hippocam.Message{sessionMessage(part, i, len(s.Sessions))}, kept...)
		}
		break
	}
	return append(append(head, kept...), q)
}

// split shares one call's usage among the rows of its batch: the remainder goes to the first.
func split(rows []Row, u hippocam.CallUsage, p *hippocam.Prices) {
	n := len(rows)
	for i := range rows {
		part := hippocam.CallUsage{Input: u.Input / n, CachedInput: u.CachedInput / n, Output: u.Output / n}
		if i == 0 {
			part.Input += u.Input % n
			part.CachedInput += u.CachedInput % n
			part.Output += u.Output % n
		}
		rows[i].InputTokens, rows[i].CachedInputTokens, rows[i].OutputTokens = part.Input, part.CachedInput, part.Output
		rows[i].CostUSD = cost(part, p)
	}
}

func cost(u hippocam.CallUsage, p *hippocam.Prices) *float64 {
	if p == nil {
		return nil
	}
	c := p.Cost(u)
	return &c
}

func addUsage(r *hippocam.RoleUsage, u hippocam.CallUsage, p *hippocam.Prices) {
	r.Calls++
	r.Input += int64(u.Input)
	r.CachedInput += int64(u.CachedInput)
	r.Output += int64(u.Output)
	if p != nil {
		r.CostUSD += p.Cost(u)
	}
}
