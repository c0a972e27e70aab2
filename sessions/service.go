// Package sessions is the proxy's session service (docs/architecture.md §7, §9): given what an agent
// sent, in whichever wire format (read into a hippocam.Conversation by its transport), it finds
// the session the request continues, runs one engine step on what is new and commits it. It
// knows nothing of HTTP or of the wire formats; the transports (package httpapi, and the MCP server
// in package mcp) only translate. What users reach beside the proxy is here too, so that both
// transports call the same methods: the learning layer's clusters, lessons and outcomes
// (learning_service.go), a session's expansion with the message shape both show (views.go), and
// the Responses rule that resolves response and item ids into a session's messages
// (responses.go).
//
// The rules, in the order they are tried (docs/sessions.md tells them to users):
//
//   - Framing is not transcript. The leading system and developer messages are the session's
//     framing. A request whose framing differs from the session's records a new version (every
//     version is archived beneath a mark at the place it took effect) and stays in the session.
//   - A history continues a session when its conversation (after the framing) extends the
//     session's transcript: the messages the agent sent and the answers it got, compared by role,
//     text, non-text parts, tool calls (arguments as JSON values) and tool-call ids.
//   - The same history as the last request again is a transport retry when the client marks it
//     as one (X-Stainless-Retry-Count above 0, or the Idempotency-Key of the request it repeats):
//     it gets the stored answer, with no model call. Otherwise it is a regeneration: a new
//     answer, the earlier one kept beneath a branch mark.
//   - A named history that extends none of the session's forks, and repeats none of their last
//     requests, diverged: it continues in a new fork NAME~k whose origin (the session and the
//     number of transcript messages in common) is recorded. Forks are bounded only by MaxForks.
//   - A history that names no session continues the session whose transcript it extends, found
//     by content (Store.FindSessions); otherwise it is a new conversation, in a new session of
//     its own, even when it shares its opening with another.
//   - A new session imports the whole history, consolidating as it goes, so that any history
//     fits the window. A fork takes over its parent's context cut where their histories part,
//     memories and the trees beneath them included (inherit.go), and imports only the rest.
//
// Requests that continue the same session are serialized; a session or fork is stored only with
// its first committed step, so a failed request leaves nothing behind.
package sessions

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/library"
)

// DefaultMaxForks bounds the forks of one session name when Config.MaxForks is zero. It is
// high: forks are a normal event for agents that edit their history, and hitting the bound is
// reported to the client (and logged) as a clear error.
const DefaultMaxForks = 10_000

// MaxNameBytes is the longest session name accepted.
const MaxNameBytes = 256

// Config configures a Service.
type Config struct {
	Engine *engine.Engine
	Store  hippocam.Store
	// MaxForks bounds the forks of one session name (default DefaultMaxForks).
	MaxForks int
	// CacheMessages bounds the sessions kept in memory by their context messages (default
	// 200,000; negative: no cache).
	CacheMessages int
	Logger        *slog.Logger
	// Inline consolidates before answering, as the paper's step does, instead of leaving it to
	// a job (RunJobs) after the answer.
	Inline bool
	// Workers is how many jobs RunJobs runs at once (default 2); JobPoll how often an idle
	// worker looks for jobs other replicas enqueued (default 1 s); JobLease how long a claimed
	// job stays with its worker without renewal (default 30 s): a server that died mid-job
	// leaves it to others that long.
	Workers  int
	JobPoll  time.Duration
	JobLease time.Duration
	// JobBackoff is the wait before a failed job's first retry, doubled for each later one, up
	// to a minute (default 100 ms).
	JobBackoff time.Duration
	// Learn is LearnOff (the default), LearnGlobal (one cluster for every task) or LearnRouted
	// (the router picks or creates a cluster per task; learning.go). Systems is the library of
	// memory systems offered (the first is the system of the global cluster and of pinned
	// clusters created on the fly), LearnEnv the model the router and the systems call, and
	// AdvisoryBudget the most tokens of an advisory (default a quarter of the engine's window).
	Learn          string
	Systems        []hippocam.MemorySystem
	LearnEnv       *learn.Env
	AdvisoryBudget int
	// RouteWait bounds how long a task's first answer waits for the model router, which runs
	// only for a task that no pinned cluster, global cluster or lexical match settles (route.go):
	// past it the answer goes without an advisory and the routing applies at the session's next
	// request. Zero is DefaultRouteWait; negative: the answer waits as long as the router takes.
	RouteWait time.Duration
}

// Service continues sessions from agents' requests. It is safe for concurrent use.
type Service struct {
	cfg     Config
	log     *slog.Logger
	locks   locks
	cache   *cache
	owner   string        // this process's name in job leases
	wake    chan struct{} // a job was enqueued
	running running       // lock keys held by running jobs
	stats   stats
	observe func(*engine.Result, error) // ObserveJobs
	changes observers                   // ObserveChanges
	routes  routings                    // routings that outlived their request (route.go)
}

// New returns a service. EINVALID when the engine or the store is missing.
func New(cfg Config) (*Service, error) {
	if cfg.Engine == nil || cfg.Store == nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "sessions: an engine and a store are required")
	}
	if cfg.MaxForks <= 0 {
		cfg.MaxForks = DefaultMaxForks
	}
	if cfg.CacheMessages == 0 {
		cfg.CacheMessages = defaultCacheMessages
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = defaultWorkers
	}
	if cfg.JobPoll <= 0 {
		cfg.JobPoll = defaultJobPoll
	}
	if cfg.JobLease <= 0 {
		cfg.JobLease = defaultJobLease
	}
	if cfg.JobBackoff <= 0 {
		cfg.JobBackoff = 100 * time.Millisecond
	}
	switch cfg.Learn {
	case "":
		cfg.Learn = LearnOff
	case LearnOff, LearnGlobal, LearnRouted:
	default:
		return nil, hippocam.Errorf(hippocam.EINVALID, "sessions: learning mode %q: use off, global or routed", cfg.Learn)
	}
	if cfg.Learn != LearnOff && (len(cfg.Systems) == 0 || cfg.LearnEnv == nil) {
		return nil, hippocam.Errorf(hippocam.EINVALID, "sessions: learning needs memory systems and a model for them")
	}
	if cfg.AdvisoryBudget <= 0 {
		cfg.AdvisoryBudget = cfg.Engine.Config().Window / 4
	}
	if cfg.RouteWait == 0 {
		cfg.RouteWait = DefaultRouteWait
	}
	library.SetBudget(cfg.Systems, cfg.AdvisoryBudget) // a hippocam cluster's context is its advisory
	return &Service{cfg: cfg, log: cfg.Logger, locks: locks{m: map[string]*lock{}}, cache: newCache(cfg.CacheMessages),
		owner: newOwner(), wake: make(chan struct{}, 1), running: running{m: map[string]*run{}},
		stats: stats{events: countEvents(cfg.Systems)}}, nil
}

// Log keys.
const (
	logTenant  = "tenant"
	logSession = "session"
	logFork    = "fork"
	logEvent   = "event"
)

// Event says how a request related to the session that answered it.
type Event string

// The events.
const (
	EventCreated     Event = "created"     // a new session
	EventContinued   Event = "continued"   // the history extended the session
	EventRetried     Event = "retried"     // a transport retry: the stored answer, no model call
	EventRegenerated Event = "regenerated" // the same history again: a new answer, the old one kept
	EventForked      Event = "forked"      // the history diverged: a new fork
)

// Request is one agent request for the service.
type Request struct {
	Tenant string
	// Name is the session the client named ("" when it named none; see the package doc).
	Name         string
	Conversation *hippocam.Conversation
	// Retry is set when the client marked the request as a transport retry; Key is its
	// idempotency key, if it sent one.
	Retry bool
	Key   string
	// Received is when the request arrived.
	Received time.Time
	// OnText, when set, receives the answer's text as the main model produces it, piece by
	// piece, in order, before Continue returns: the transport streams it to the client. It is
	// called from the step's goroutine and must not block (queue what the client has not read
	// yet). On success the pieces joined are exactly Result.Answer.Content; the tool calls and the
	// end of the answer are for the transport to send after Continue returned, once the step is
	// committed. When Continue fails after pieces were sent, the transport must end the stream
	// with an error: nothing of the step was kept and the client's retry runs it again. A retried
	// request (EventRetried) sends no piece: the transport writes the stored answer whole.
	OnText func(text string)
	// OnStart, when set, is called once, under the session's lock, just before the step runs
	// (never for a retry, which runs none), with the id of the session that will answer and how
	// the request relates to it: a streaming transport names them (its response headers and
	// ids) before the first piece of text. It must not block.
	OnStart func(session string, event Event)
	// OnCall, when set, is called before each main-model call of the step with the input
	// tokens of the request sent (engine.Input.OnCall), after OnStart and before that call's
	// text reaches OnText. It must not block.
	OnCall func(inputTokens int)
	// LearnOff opts this task out of learning (the Hippocam-Learn: off header); Cluster pins
	// its cluster, by id or by scope, created when absent (Hippocam-Cluster); TaskKey groups
	// the attempts of one problem (Hippocam-Task). They count on a session's first request only.
	LearnOff bool
	Cluster  string
	TaskKey  string
	// OnRoute, when set, is called with the cluster a task start was routed to ("" for a task
	// that runs stateless), before OnStart: a streaming transport names it in its headers.
	OnRoute func(cluster string)
	// Client is what the request's headers and fields said of the client conversation it
	// belongs to (its Conversation, Agent, Parent and Kind; client.go): the transport reads it,
	// the service keeps it with the session and adds the session's title.
	Client hippocam.Client
}

// Result is what a request produced.
type Result struct {
	// Session is the session's state after the request.
	Session *hippocam.Session
	Event   Event
	// Answer is the main model's answer; Usage what the main model consumed for it (zero for a
	// retry). Step is the engine's result (nil for a retry): usage by role, consolidations…
	Answer hippocam.Message
	Usage  hippocam.RoleUsage
	Step   *engine.Result
	// Waited is set when the request waited for its session's consolidation job, which was
	// running when it arrived, because its window needed the job's work (Step.RanPending and
	// Step.PendingReason say when it ran pending work itself instead).
	Waited bool
	// Learning is the task's routing and advisory when the request started a task with
	// learning on, or applied a routing that was still pending (nil otherwise).
	Learning *hippocam.TaskLearning
}

// CheckName returns an EINVALID error for a session name the service refuses: empty, longer
// than MaxNameBytes, "." or "..", or holding "/" or a control character.
func CheckName(name string) error {
	switch {
	case name == "":
		return hippocam.Errorf(hippocam.EINVALID, "the session name is empty")
	case len(name) > MaxNameBytes:
		return hippocam.Errorf(hippocam.EINVALID, "the session name is %d bytes long; at most %d are allowed", len(name), MaxNameBytes)
	case name == "." || name == "..":
		return hippocam.Errorf(hippocam.EINVALID, "the session name %q is not allowed", name)
	case strings.ContainsRune(name, '/'):
		return hippocam.Errorf(hippocam.EINVALID, "the session name must not contain '/'")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return hippocam.Errorf(hippocam.EINVALID, "the session name must not contain control characters")
		}
	}
	return nil
}

// Continue runs req: it checks the conversation, finds (or makes) the session it continues, and
// answers it, committing everything before it returns. Errors: EINVALID for a request that
// breaks the conversation's rules or names a bad session (nothing changes), ECAPACITY when the
// step cannot fit the window, ECONFLICT when another replica changed the session meanwhile
// (the client may retry), and the model's error when the main model fails.
func (s *Service) Continue(ctx context.Context, req *Request) (*Result, error) {
	h, err := s.read(req)
	if err != nil {
		return nil, err
	}
	plan, unlock, err := s.lockAndResolve(ctx, h)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if plan.event == EventRetried {
		m, err := s.cfg.Store.Message(ctx, req.Tenant, plan.sess.ID, plan.sess.Transcript.Answer)
		if err != nil {
			return nil, fmt.Errorf("retry: %w", err)
		}
		return &Result{Session: plan.sess, Event: EventRetried, Answer: *m}, nil
	}
	if l := plan.sess.Transcript.Learning; l != nil && l.Ended {
		return nil, hippocam.Errorf(hippocam.ECONFLICT, "session %q has ended: its outcome was reported; start a new session for a new task", plan.sess.ID)
	}
	switch {
	case plan.fresh && plan.event == EventCreated:
		plan.task = s.startTask(ctx, h, plan.sess)
	case plan.event == EventContinued && plan.sess.Transcript.Learning.Pending():
		plan.task = s.routeLate(ctx, h, plan.sess) // nil while the router is still at work
		plan.late = plan.task != nil
	}
	if plan.task != nil && req.OnRoute != nil {
		req.OnRoute(plan.task.Cluster)
	}
	if req.OnStart != nil {
		req.OnStart(plan.sess.ID, plan.event)
	}
	res, err := s.advance(ctx, h, plan)
	if res != nil {
		res.Waited = plan.waited
	}
	return res, err
}

// lockAndResolve takes the lock of the request's session and finds the session it continues (resolve).
// When the session's consolidation job is running here and the step could not answer without
// its work (the window needs it), it lets the lock go, waits for the job, and resolves again: once
// at most, after which the step runs whatever is still pending itself. It returns the plan and
// the lock's release.
func (s *Service) lockAndResolve(ctx context.Context, h *history) (*plan, func(), error) {
	waited := false
	for {
		unlock := s.locks.lock(h.lockKey())
		plan, err := s.resolve(ctx, h)
		if err != nil {
			unlock()
			return nil, nil, err
		}
		plan.waited = waited
		if waited {
			return plan, unlock, nil
		}
		done := s.mustWait(h, plan)
		if done == nil {
			return plan, unlock, nil
		}
		unlock()
		waited = true
		s.stats.waitsRunning.Add(1)
		select {
		case <-done:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// mustWait returns the end of the consolidation job running for the plan's session when the step
// cannot answer without the pending work (engine.PendingDue: the window needs it, or a
// regeneration, or no lag is allowed); nil when the step goes on at once.
func (s *Service) mustWait(h *history, p *plan) <-chan struct{} {
	if s.cfg.Inline || p.fresh || p.event == EventRetried || p.sess.Pending.Empty() {
		return nil
	}
	done := s.running.done(p.sess.Tenant, p.sess.ID)
	if done == nil {
		return nil
	}
	switch s.cfg.Engine.PendingDue(p.sess, s.stepInput(h, p)) {
	case engine.PendingWindow, engine.PendingRegenerate, engine.PendingLag:
		return done // lag only when no lag is allowed: with a job at work it is not due
	}
	return nil
}

// history is a checked request with the transcript hashes of its conversation.
type history struct {
	*Request
	conv *hippocam.Conversation
	// hashes[i] is the transcript hash after the first i messages of the conversation.
	hashes  []string
	framing string // FramingHash of the conversation's framing
	// seen is the length of the conversation up to and including its last assistant message:
	// where a session it continues would have its transcript end.
	seen int
	// readOnly routes and reads without changing any cluster (Advise): a cluster the router
	// would create is not created, and one not yet configured is read as it is.
	readOnly bool
	// preview only works out what a request would do (Preview): nothing of it is logged as done.
	preview bool
}

// lockKey serializes the requests that may touch one session: a name with all of its forks, or,
// for a history that names no session, everything that continues the same transcript.
func (h *history) lockKey() string {
	if h.Name != "" {
		return h.Tenant + "\x00n\x00" + baseName(h.Name)
	}
	return h.Tenant + "\x00h\x00" + h.hashes[h.seen]
}

// read checks req and hashes its conversation. Nothing is read from or written to the store.
func (s *Service) read(req *Request) (*history, error) {
	if req.Name != "" {
		if err := CheckName(req.Name); err != nil {
			return nil, err
		}
	}
	conv := req.Conversation
	if conv == nil || len(conv.Messages) == 0 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "the conversation holds no message after its system prompt")
	}
	conv = wholeExchanges(conv)
	if err := checkConversation(conv); err != nil {
		return nil, err
	}
	h := &history{Request: req, conv: conv, framing: hippocam.FramingHash(conv.Framing)}
	h.hashes = conv.Hashes // the reader's, when it remembered the messages the request resends
	if len(h.hashes) != len(conv.Messages)+1 {
		h.hashes = hippocam.TranscriptChain("", conv.Messages)
	}
	for i := len(conv.Messages) - 1; i >= 0; i-- { // the last assistant message, near the end
		if conv.Messages[i].Role == hippocam.RoleAssistant {
			h.seen = i + 1
			break
		}
	}
	return h, nil
}

// wholeExchanges returns conv with each system or developer message that stands inside a tool
// exchange (the Responses API takes one anywhere) moved just after the exchange's results, where
// every format and the engine's whole exchanges want it (hippocam.ExchangesWhole); each message
// keeps its own bytes. Every request is read in this order, so a session that holds one
// continues. conv itself is returned when nothing moves.
func wholeExchanges(conv *hippocam.Conversation) *hippocam.Conversation {
	msgs := hippocam.ExchangesWhole(conv.Messages)
	if len(msgs) == 0 || &msgs[0] == &conv.Messages[0] {
		return conv
	}
	moved := *conv
	moved.Messages, moved.Hashes = msgs, nil // the reader's hashes are of the order it read
	return &moved
}

// checkConversation checks what every format must respect: tools with names that are not
// Hippocam's own, tool results that answer the calls right before them, and a last message to
// answer.
func checkConversation(conv *hippocam.Conversation) error {
	for i, t := range conv.Tools {
		if strings.TrimSpace(t.Name) == "" {
			return hippocam.Errorf(hippocam.EINVALID, "tools[%d] has no name", i)
		}
		if t.Namespace == "" && (t.Name == engine.RecallTool || t.Name == engine.SearchTool) {
			return hippocam.Errorf(hippocam.EINVALID, "the tool name %q is reserved by Hippocam", t.Name)
		}
	}
	var open []string // the calls of the last answer not answered yet, each once: a few at most
	for i := range conv.Messages {
		m := &conv.Messages[i]
		switch m.Role {
		case hippocam.RoleTool:
			k := slices.Index(open, m.ToolCallID)
			if k < 0 {
				return hippocam.Errorf(hippocam.EINVALID, "message %d: the tool result for %q answers no tool call of the assistant message before it", i, m.ToolCallID)
			}
			open = slices.Delete(open, k, k+1)
		case hippocam.RoleAssistant:
			open = open[:0]
			for _, c := range m.ToolCalls {
				if c.ID == "" {
					return hippocam.Errorf(hippocam.EINVALID, "message %d: a tool call has no id", i)
				}
				if strings.TrimSpace(c.Name) == "" {
					return hippocam.Errorf(hippocam.EINVALID, "message %d: tool call %q names no tool", i, c.ID)
				}
				if !slices.Contains(open, c.ID) {
					open = append(open, c.ID)
				}
			}
		default:
			open = open[:0]
		}
	}
	if last := conv.Messages[len(conv.Messages)-1]; last.Role == hippocam.RoleAssistant {
		return hippocam.Errorf(hippocam.EINVALID, "the last message is the assistant's: there is nothing to answer")
	}
	return nil
}

// plan is what resolve decided: the session (stored, or new and not stored yet) and the event.
type plan struct {
	sess  *hippocam.Session
	event Event
	fresh bool // not stored yet: created with the step's commit
	// task is a task start's routing and advisory (learning.go), nil otherwise; late marks a
	// routing that was pending at the task start and is applied at this later request, its
	// advisory entering after the request's messages (route.go).
	task *hippocam.TaskLearning
	late bool
	// inherit is what a new fork takes over from its parent (inherit.go), nil when it imports
	// the whole history.
	inherit *inheritance
	// waited is set when the request waited for its session's running consolidation job.
	waited bool
}

// holds is how many of the history's messages the plan's session holds before the step.
func (p *plan) holds() int {
	if p.inherit != nil {
		return p.inherit.held
	}
	return p.sess.Transcript.Count
}

// resolve finds the session the history continues, or decides the new one it starts. A new
// session or fork is refused (ENOTFOUND) when the history continues a deleted session
// (refuseDeleted).
func (s *Service) resolve(ctx context.Context, h *history) (*plan, error) {
	if h.Name == "" {
		return s.resolveUnnamed(ctx, h)
	}
	base, err := s.load(ctx, h.Tenant, h.Name)
	if err != nil {
		return nil, err
	}
	started := base != nil && base.Transcript.Count > 0
	if started {
		if p := s.match(h, base); p != nil {
			return p, nil
		}
	}
	// Not the session itself: one of its forks, found by content (also when the session itself
	// was deleted: a fork holds all it needs).
	for _, hash := range []string{h.hashes[h.seen], h.hashes[len(h.conv.Messages)]} {
		ids, err := s.cfg.Store.FindSessions(ctx, h.Tenant, hash)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if id == h.Name || baseName(id) != h.Name {
				continue
			}
			f, err := s.load(ctx, h.Tenant, id)
			if err != nil || f == nil {
				continue // deleted meanwhile
			}
			if p := s.match(h, f); p != nil {
				return p, nil
			}
		}
	}
	if err := s.refuseDeleted(ctx, h); err != nil {
		return nil, err
	}
	if !started {
		if base != nil {
			return &plan{sess: base, event: EventCreated}, nil // created but never advanced
		}
		return &plan{sess: engine.NewSession(h.Tenant, h.Name, h.Received.UTC()), event: EventCreated, fresh: true}, nil
	}
	return s.fork(ctx, h, base)
}

// resolveUnnamed finds, by content, the session a history that names none continues; else the
// history starts a session of its own.
func (s *Service) resolveUnnamed(ctx context.Context, h *history) (*plan, error) {
	hashes := []string{h.hashes[h.seen]}
	if h.Retry || h.Key != "" {
		hashes = append(hashes, h.hashes[len(h.conv.Messages)])
	}
	for _, hash := range hashes {
		if hash == "" {
			continue
		}
		ids, err := s.cfg.Store.FindSessions(ctx, h.Tenant, hash)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			sess, err := s.load(ctx, h.Tenant, id)
			if err != nil || sess == nil {
				continue
			}
			p := s.match(h, sess)
			if p == nil || p.event == EventRegenerated {
				// Without a name, the same history again without a retry mark is another
				// conversation that opens the same way, not a regeneration.
				continue
			}
			return p, nil
		}
	}
	if err := s.refuseDeleted(ctx, h); err != nil {
		return nil, err
	}
	id, err := s.freshName(ctx, h.Tenant, "auto-"+h.hashes[len(h.conv.Messages)][:12])
	if err != nil {
		return nil, err
	}
	return &plan{sess: engine.NewSession(h.Tenant, id, h.Received.UTC()), event: EventCreated, fresh: true}, nil
}

// match reports how the history relates to sess: it continues it, retries or regenerates its
// last request, or (nil) neither.
func (s *Service) match(h *history, sess *hippocam.Session) *plan {
	t, n := sess.Transcript, len(h.conv.Messages)
	switch {
	case t.Count == 0:
		return nil
	case t.Count < n && h.hashes[t.Count] == t.Hash:
		return &plan{sess: sess, event: EventContinued}
	case t.Answer != "" && t.PrevCount == n && h.hashes[n] == t.PrevHash:
		if h.Retry || (h.Key != "" && h.Key == t.RequestKey) {
			return &plan{sess: sess, event: EventRetried}
		}
		return &plan{sess: sess, event: EventRegenerated}
	}
	return nil
}

// fork decides the new fork of base that the diverging history continues in.
func (s *Service) fork(ctx context.Context, h *history, base *hippocam.Session) (*plan, error) {
	list, err := s.cfg.Store.Sessions(ctx, h.Tenant)
	if err != nil {
		return nil, err
	}
	next := 2
	for _, info := range list {
		if rest, ok := strings.CutPrefix(info.ID, h.Name+"~"); ok {
			if k, err := strconv.Atoi(rest); err == nil && k >= next {
				next = k + 1
			}
		}
	}
	if next-1 > s.cfg.MaxForks {
		s.log.Warn("fork bound reached", logTenant, h.Tenant, logSession, h.Name, "max_forks", s.cfg.MaxForks)
		return nil, hippocam.Errorf(hippocam.EINVALID, "session %q has reached its bound of %d forks (--max-forks); name a new session (Hippocam-Session header)", h.Name, s.cfg.MaxForks)
	}
	// The fork's parent is the session of the name that shares the most with the history: the
	// name's first session, or the one of its forks updated last (where a client that rewinds
	// inside a fork was).
	t, err := readTree(ctx, hippocam.SessionArchive(s.cfg.Store, base.Tenant, base.ID), base.Context)
	if err != nil {
		return nil, err
	}
	at := common(t.transcript(base.Context), h)
	for _, info := range list {
		if info.ID == base.ID || baseName(info.ID) != h.Name {
			continue
		}
		if f, err := s.load(ctx, h.Tenant, info.ID); err == nil && f != nil && f.Transcript.Count > at {
			ft, err := readTree(ctx, hippocam.SessionArchive(s.cfg.Store, f.Tenant, f.ID), f.Context)
			if err != nil {
				return nil, err
			}
			if n := common(ft.transcript(f.Context), h); n > at {
				base, t, at = f, ft, n
			}
		}
		break // the most recently updated fork only (the list is in that order)
	}
	id := forkName(h.Name, next)
	sess := engine.NewSession(h.Tenant, id, h.Received.UTC())
	sess.Transcript.Fork = &hippocam.Fork{From: base.ID, At: at}
	p := &plan{sess: sess, event: EventForked, fresh: true}
	if in := t.cut(base.Context, at); in != nil {
		inherit(sess, base, in)
		p.inherit = in
	}
	if !h.preview {
		held := 0
		if p.inherit != nil {
			held = p.inherit.held
		}
		s.log.Info("history diverged from the session; continuing in a fork", logTenant, h.Tenant, logSession, h.Name, logFork, id, "common", at, "inherited", held)
	}
	return p, nil
}

// inherit starts the fork sess from what it takes over from base: the cut context and the tree
// beneath it (by the parent's ids and refs, so the ids the fork allocates start after base's),
// the intents open at the cut, the framing in effect there, and the recent rounds.
func inherit(sess, base *hippocam.Session, in *inheritance) {
	sess.Context = in.context
	sess.Seq = base.Seq
	sess.Stack = in.stack(base.Stack)
	sess.Rounds = append([]int(nil), base.Rounds...)
	if f := in.framing(); f != nil {
		sess.Transcript.Framing, sess.Transcript.FramingHash = f, hippocam.FramingHash(f)
	}
	// JANUS reviews what came after the last message it covered: in the parent up to the cut
	// at most, so the fork's first review starts at the cut (or earlier, where the parent's did).
	if _, ok := in.msgs[base.Transcript.JanusCovered]; ok {
		sess.Transcript.JanusCovered = base.Transcript.JanusCovered
	} else {
		sess.Transcript.JanusCovered = in.context[len(in.context)-1].ID
	}
}

// common counts the transcript messages of the parent (msgs) the history opens with.
func common(msgs []hippocam.Message, h *history) int {
	hash, n := "", 0
	for n < len(msgs) && n < len(h.conv.Messages) {
		hash = hippocam.TranscriptHash(hash, &msgs[n])
		if hash != h.hashes[n+1] {
			break
		}
		n++
	}
	return n
}

// Transcript returns the conversation as the agent saw it, from a session's context: every raw
// message of its tree in order, without framing versions and regenerated answers.
func Transcript(ctx context.Context, a hippocam.Archive, context []hippocam.Message) ([]hippocam.Message, error) {
	var out []hippocam.Message
	var walk func([]hippocam.Message) error
	walk = func(ms []hippocam.Message) error {
		for _, m := range ms {
			switch {
			case m.Kind.Hidden():
			case m.Consolidated():
				kids, err := a.Children(ctx, m.Ref)
				if err != nil {
					return err
				}
				if err := walk(kids); err != nil {
					return err
				}
			case m.Kind == hippocam.KindRaw:
				out = append(out, m)
			}
		}
		return nil
	}
	return out, walk(context)
}

// freshName returns name, or name-2, name-3…, whichever no session of the tenant has.
func (s *Service) freshName(ctx context.Context, tenant, name string) (string, error) {
	for k := 1; ; k++ {
		id := name
		if k > 1 {
			id = name + "-" + strconv.Itoa(k)
		}
		sess, err := s.load(ctx, tenant, id)
		if err != nil {
			return "", err
		}
		if sess == nil {
			return id, nil
		}
	}
}

// advance runs the engine step the plan calls for and commits it.
func (s *Service) advance(ctx context.Context, h *history, p *plan) (*Result, error) {
	sess, conv := p.sess, h.conv
	in := s.stepInput(h, p)
	n := len(conv.Messages)
	var arch hippocam.Archive = hippocam.SessionArchive(s.cfg.Store, h.Tenant, sess.ID)
	if p.inherit != nil {
		arch = forkArchive{own: arch, parent: hippocam.SessionArchive(s.cfg.Store, h.Tenant, sess.Transcript.Fork.From), in: p.inherit}
	}
	res, err := s.cfg.Engine.Step(ctx, sess, arch, in)
	if err != nil {
		s.recordFailedUsage(ctx, sess, p.fresh, engine.UsageOf(err))
		return nil, err
	}
	next := res.Session
	before := h.hashes[n]
	next.Transcript.Count, next.Transcript.Hash = n+1, hippocam.TranscriptHash(before, &res.Answer)
	next.Transcript.PrevCount, next.Transcript.PrevHash = n, before
	next.Transcript.Answer, next.Transcript.RequestKey = res.Answer.ID, h.Key
	next.Transcript.Framing, next.Transcript.FramingHash = conv.Framing, h.framing
	next.Transcript.Client = clientOf(sess.Transcript.Client, h.Request, conv)
	if p.task != nil {
		next.Transcript.Learning = p.task
	}
	next.UpdatedAt = time.Now().UTC()
	if p.fresh {
		shell := *sess
		shell.Context = nil // a fork's inherited context enters with the commit, below
		if err := s.cfg.Store.CreateSession(ctx, &shell); err != nil {
			return nil, err
		}
		next.UID = shell.UID // the creation identity the store gave it
	}
	if p.inherit != nil {
		res.Change.Ops = append(slices.Clip(p.inherit.ops), res.Change.Ops...)
	}
	if err := s.cfg.Store.Commit(ctx, next, res.Change); err != nil {
		s.cache.drop(h.Tenant, sess.ID) // stale (another replica) or gone: read the store next time
		return nil, err
	}
	s.cache.put(next)
	s.count(res, p.waited)
	if p.fresh {
		s.changed(SessionCreated, h.Tenant, next.ID, "")
	} else {
		s.changed(SessionUpdated, h.Tenant, next.ID, "")
	}
	if len(res.Change.Jobs) > 0 {
		s.kick()
	}
	s.log.Debug("step", logTenant, h.Tenant, logSession, sess.ID, logEvent, string(p.event))
	return &Result{Session: next, Event: p.event, Answer: res.Answer, Usage: res.Usage[hippocam.CallAgent], Step: res, Learning: p.task}, nil
}

// stepInput is the engine input for the step the plan calls for: the messages of the history
// the session has not seen (those up to its last assistant message as history), or the last
// answer to regenerate.
func (s *Service) stepInput(h *history, p *plan) engine.Input {
	sess, conv := p.sess, h.conv
	in := engine.Input{Tools: conv.Tools, ToolChoice: conv.ToolChoice, Model: conv.Model, MaxTokens: conv.MaxTokens,
		Extra: conv.Extra, ExtraFormat: conv.Format, Betas: conv.Betas,
		Framing: conv.Framing, NewFraming: sess.Transcript.FramingHash != h.framing, Defer: !s.cfg.Inline, OnText: h.OnText, OnCall: h.OnCall,
		Consolidating: !p.fresh && s.running.done(sess.Tenant, sess.ID) != nil}
	if p.event == EventRegenerated || p.event == EventRetried {
		in.Regenerate = sess.Transcript.Answer
	} else {
		unseen := conv.Messages[p.holds():]
		last := -1
		for i, m := range unseen {
			if m.Role == hippocam.RoleAssistant {
				last = i
			}
		}
		in.History, in.Messages = unseen[:last+1], unseen[last+1:]
	}
	switch {
	case p.task != nil && p.late:
		in.LateAdvisory = p.task.Advisory
	case p.task != nil:
		in.Advisory = p.task.Advisory
	}
	return in
}

// recordFailedUsage keeps what a failed step's model calls consumed (they were paid for): on a
// stored session it commits the usage alone, no message and no transcript change, so the
// client's retry is still recognised. A new session or fork is not created for it (a failed
// request leaves nothing behind); its usage is logged.
func (s *Service) recordFailedUsage(ctx context.Context, sess *hippocam.Session, fresh bool, u hippocam.Usage) {
	if len(u) == 0 {
		return
	}
	total := u.Total()
	if fresh {
		s.log.Info("a failed step's usage, for a session that was not created", logTenant, sess.Tenant, logSession, sess.ID,
			"calls", total.Calls, "input", total.Input, "output", total.Output, "cost_usd", total.CostUSD)
		return
	}
	rec := sess.Clone()
	rec.Usage.Merge(u)
	rec.UpdatedAt = time.Now().UTC()
	if err := s.cfg.Store.Commit(context.WithoutCancel(ctx), rec, hippocam.Change{From: sess.Version}); err != nil {
		s.cache.drop(sess.Tenant, sess.ID)
		s.log.Warn("recording a failed step's usage", logTenant, sess.Tenant, logSession, sess.ID, "error", err)
		return
	}
	s.cache.put(rec)
}

// Delete removes a session and everything archived in it, serialized with the requests that
// continue it. ENOTFOUND if there is none.
func (s *Service) Delete(ctx context.Context, tenant, id string) error {
	unlock := s.locks.lock(tenant + "\x00n\x00" + baseName(id))
	defer unlock()
	s.cache.drop(tenant, id)
	err := s.cfg.Store.DeleteSession(ctx, tenant, id)
	s.cache.drop(tenant, id)
	if err == nil {
		s.changed(SessionDeleted, tenant, id, "")
		s.routes.drop(routingKey(tenant, id), nil) // a routing still running is for nobody now
	}
	if err == nil && len(s.cfg.Systems) > 0 {
		// Retention: what the session taught a cluster leaves it too (docs/learning.md).
		kept, ferr := learn.Forget(ctx, s.cfg.Store, s.cfg.Systems, tenant, []string{id})
		if ferr != nil {
			s.log.Warn("learning: removing a deleted session from its clusters failed", logTenant, tenant, logSession, id, "error", ferr)
		} else {
			s.changed(ClusterChanged, tenant, "", "") // the clusters it taught, if any, forgot it
		}
		if len(kept) > 0 {
			s.log.Warn("learning: clusters whose system cannot forget still hold the deleted session", logTenant, tenant, logSession, id, "clusters", kept)
		}
	}
	return err
}

// load returns the session from the cache or the store; nil (and no error) if there is none.
func (s *Service) load(ctx context.Context, tenant, id string) (*hippocam.Session, error) {
	sess, err := s.cache.load(ctx, s.cfg.Store, tenant, id)
	if hippocam.ErrorCode(err) == hippocam.ENOTFOUND {
		return nil, nil
	}
	return sess, err
}

// forkName is the name of the k-th fork of a session (k ≥ 2); the first is the name itself.
func forkName(name string, k int) string {
	if k <= 1 {
		return name
	}
	return fmt.Sprintf("%s~%d", name, k)
}

// baseName is the session name a fork belongs to: "x" for "x", "x~2" and "x~3".
func baseName(id string) string {
	if i := strings.LastIndexByte(id, '~'); i > 0 {
		if _, err := strconv.Atoi(id[i+1:]); err == nil {
			return id[:i]
		}
	}
	return id
}

// count records a committed step in the service's counters: a step that waited is counted once,
// for the running job it waited for (counted then) or for the pending work it ran itself.
func (s *Service) count(res *engine.Result, waited bool) {
	switch {
	case waited || !res.RanPending:
	case res.PendingReason == engine.PendingWindow:
		s.stats.waitsWindow.Add(1)
	case res.PendingReason == engine.PendingLag:
		s.stats.waitsLag.Add(1)
	default:
		s.stats.waitsInline.Add(1)
	}
	if res.Lag > 0 {
		s.stats.pendingSteps.Add(1)
		s.stats.lagSteps.Add(int64(res.Lag))
		for {
			m := s.stats.maxLag.Load()
			if int64(res.Lag) <= m || s.stats.maxLag.CompareAndSwap(m, int64(res.Lag)) {
				break
			}
		}
	}
	if res.VerdictWait > 0 {
		s.stats.verdictWaits.Add(1)
	}
}
