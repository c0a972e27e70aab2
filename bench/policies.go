package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// The policies, in the order reports list them. Each file policy_*.go holds one family:
//
//   - policy_hippocam.go: the engine itself and its two ablations (no prefix consolidation, no
//     recall);
//   - policy_window.go: the two policies without any memory, truncate and full;
//   - policy_summary.go: flat-summary, one rolling summary ahead of a working tail;
//   - policy_retrieve.go: retrieve-prepend, facts extracted every turn and the most similar
//     ones prepended to every main request.
//
// Every baseline talks to the same model (Env.Model), counts with the same tokenizer and
// hippocam.RequestTokens, and records every call's usage under its role, priced with
// Env.Prices. Their shared parameters come from the engine's own configuration for the window
// (engine.ForWindow), so that "ρW" or "K rounds" mean the same thing for all of them.

// Policy names, as reports show them.
const (
	PolicyHippocam         = "hippocam"
	PolicyHippocamGate     = "hippocam-gate"
	PolicyHippocamNoPrefix = "hippocam-no-prefix"
	PolicyHippocamNoRecall = "hippocam-no-recall"
	PolicyFlatSummary      = "flat-summary"
	PolicyTruncate         = "truncate"
	PolicyFull             = "full"
	PolicyRetrievePrepend  = "retrieve-prepend"
)

// Policies returns every context policy the benchmark compares, in report order: hippocam,
// hippocam-gate, hippocam-no-prefix, hippocam-no-recall, flat-summary, truncate, full, retrieve-prepend.
func Policies() []Policy {
	return []Policy{
		{Name: PolicyHippocam, New: newHippocamAgent},
		{Name: PolicyHippocamGate, New: newGateAgent},
		{Name: PolicyHippocamNoPrefix, New: newNoPrefixAgent},
		{Name: PolicyHippocamNoRecall, New: newNoRecallAgent},
		{Name: PolicyFlatSummary, New: newFlatSummaryAgent},
		{Name: PolicyTruncate, New: newTruncateAgent},
		{Name: PolicyFull, New: newFullAgent},
		{Name: PolicyRetrievePrepend, New: newRetrieveAgent},
	}
}

// baselineSystemPrompt is the system message of every baseline's main request. It says nothing
// about memory: the baselines have none beyond what they put in the messages.
const baselineSystemPrompt = "You are a helpful assistant. Answer the user's requests and use the tools you are given when the work needs them."

// checkEnv rejects an environment a policy cannot run with.
func checkEnv(env Env) error {
	switch {
	case env.Model == nil:
		return hippocam.Errorf(hippocam.EINVALID, "bench: the environment has no model")
	case env.Tok == nil:
		return hippocam.Errorf(hippocam.EINVALID, "bench: the environment has no tokenizer")
	case env.Window < 512:
		return hippocam.Errorf(hippocam.EINVALID, "bench: context window %d is too small (at least 512 tokens)", env.Window)
	}
	return nil
}

// baselineParams are the parameters the baselines share with the engine: the pressure threshold
// ρ, the tail rounds K and the minimum saving Δmin of engine.ForWindow, and the room a component
// request keeps for its answer (an eighth of the window, at most 4,096 tokens, as the engine
// does).
type baselineParams struct {
	window     int
	target     int // ρW, in tokens
	tailRounds int // K
	minSaving  int // Δmin
	answerRoom int
}

func paramsFor(w int) baselineParams {
	cfg := engine.ForWindow(w)
	return baselineParams{
		window:     w,
		target:     int(cfg.Pressure * float64(w)),
		tailRounds: cfg.TailRounds,
		minSaving:  cfg.MinSaving,
		answerRoom: min(w/8, 4096),
	}
}

// stepMeter measures one step of a baseline: it makes the model calls, records their usage by
// role and the time spent waiting for them, and builds the Turn.
type stepMeter struct {
	env   Env
	began time.Time
	model time.Duration
	turn  Turn
}

func newStepMeter(env Env) *stepMeter {
	return &stepMeter{env: env, began: time.Now(), turn: Turn{Usage: hippocam.Usage{}}}
}

// call sends one request and records its usage under its role.
func (m *stepMeter) call(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	t0 := time.Now()
	resp, err := m.env.Model.Complete(ctx, req)
	m.model += time.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("%s call: %w", req.Role, err)
	}
	m.turn.Usage.Add(req.Role, resp.Usage, m.env.Prices)
	return resp, nil
}

// mainCall sends a main-model request, noting its size and whether it exceeds the window.
func (m *stepMeter) mainCall(ctx context.Context, msgs []hippocam.Message) (*hippocam.Response, error) {
	n := hippocam.RequestTokens(m.env.Tok, msgs, nil)
	m.turn.MaxRequestTokens = max(m.turn.MaxRequestTokens, n)
	if n > m.env.Window {
		m.turn.Overflow = true
	}
	return m.call(ctx, &hippocam.Request{Role: hippocam.CallAgent, Messages: msgs})
}

// finish returns the step's Turn with its answer and the policy's own time.
func (m *stepMeter) finish(answer hippocam.Message) *Turn {
	m.turn.Answer = answer
	m.turn.EngineTime = max(0, time.Since(m.began)-m.model)
	return &m.turn
}

// chatLog is a baseline's own copy of the conversation: every message it still keeps, in order,
// each sized with hippocam.MessageTokens.
type chatLog struct {
	tok  hippocam.Tokenizer
	msgs []hippocam.Message
	// roundStart is the index of the first message of the round the current step serves: the
	// step's first message, or the answer whose tool calls the step's results answer. A baseline
	// never drops or summarizes from there on.
	roundStart int
	// pending holds the tool-call ids of the last answer still waiting for results.
	pending map[string]bool
	// callIDs holds every tool-call id given out so far, to keep them unique in the session.
	callIDs map[string]bool
	answers int
}

func newChatLog(tok hippocam.Tokenizer) *chatLog {
	return &chatLog{tok: tok, pending: map[string]bool{}, callIDs: map[string]bool{}}
}

// add appends a step's client messages. As for the engine, tool results must answer pending
// calls of the last answer, nothing else may arrive while calls are pending, and the step must
// leave no call unanswered; otherwise EINVALID and nothing is kept.
func (l *chatLog) add(in []hippocam.Message) error {
	if len(in) == 0 {
		return hippocam.Errorf(hippocam.EINVALID, "a step needs at least one new message")
	}
	pending := make(map[string]bool, len(l.pending))
	for id := range l.pending {
		pending[id] = true
	}
	for i, m := range in {
		switch m.Role {
		case hippocam.RoleTool:
			if !pending[m.ToolCallID] {
				return hippocam.Errorf(hippocam.EINVALID, "message %d: tool result for %q answers no pending tool call", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		case hippocam.RoleUser, hippocam.RoleSystem:
			if len(pending) > 0 {
				return hippocam.Errorf(hippocam.EINVALID, "message %d: %d tool call(s) of the last answer have no result yet", i, len(pending))
			}
		default:
			return hippocam.Errorf(hippocam.EINVALID, "message %d: role %q cannot enter as a client message", i, m.Role)
		}
	}
	if len(pending) > 0 {
		return hippocam.Errorf(hippocam.EINVALID, "%d tool call(s) of the last answer have no result", len(pending))
	}
	l.roundStart = len(l.msgs)
	if in[0].Role == hippocam.RoleTool {
		for i := len(l.msgs) - 1; i >= 0; i-- {
			if l.msgs[i].Role == hippocam.RoleAssistant {
				l.roundStart = i
				break
			}
		}
	}
	for _, m := range in {
		l.push(hippocam.Message{Role: m.Role, Kind: hippocam.KindRaw, Content: m.Content, ToolCallID: m.ToolCallID})
	}
	l.pending = map[string]bool{}
	return nil
}

// answer appends the main model's answer, giving its tool calls ids unique in the session, and
// returns it as appended.
func (l *chatLog) answer(resp *hippocam.Response) hippocam.Message {
	l.answers++
	m := hippocam.Message{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, Content: resp.Message.Content}
	for i, c := range resp.Message.ToolCalls {
		if c.ID == "" || l.callIDs[c.ID] {
			c.ID = fmt.Sprintf("call_a%d_%d", l.answers, i)
		}
		l.callIDs[c.ID] = true
		l.pending[c.ID] = true
		m.ToolCalls = append(m.ToolCalls, c)
	}
	return l.push(m)
}

func (l *chatLog) push(m hippocam.Message) hippocam.Message {
	m.Tokens = hippocam.MessageTokens(l.tok, &m)
	l.msgs = append(l.msgs, m)
	return m
}

// pinned is how many leading messages are never dropped: the conversation's first message when
// it is a system message.
func (l *chatLog) pinned() int {
	if len(l.msgs) > 0 && l.msgs[0].Role == hippocam.RoleSystem {
		return 1
	}
	return 0
}

// unitEnd returns the end of the exchange that starts at i: an answer with tool calls and all
// the results after it move together; any other message is a unit of its own.
func (l *chatLog) unitEnd(i int) int {
	j := i + 1
	if len(l.msgs[i].ToolCalls) > 0 {
		for j < len(l.msgs) && l.msgs[j].Role == hippocam.RoleTool {
			j++
		}
	}
	return j
}

// size sums the sizes of messages [lo, hi).
func (l *chatLog) size(lo, hi int) int {
	n := 0
	for i := lo; i < hi; i++ {
		n += l.msgs[i].Tokens
	}
	return n
}

// remove deletes messages [lo, hi), keeping roundStart on the same message.
func (l *chatLog) remove(lo, hi int) {
	if lo >= hi {
		return
	}
	l.msgs = append(l.msgs[:lo], l.msgs[hi:]...)
	if l.roundStart >= hi {
		l.roundStart -= hi - lo
	}
}

// dropOldest removes whole exchanges from the front (after the pinned system message, before
// the current round) while frame tokens plus the conversation exceed target. It returns how many
// messages it removed.
func (l *chatLog) dropOldest(frame, target int) int {
	lo := l.pinned()
	total := frame + l.size(0, len(l.msgs))
	hi := lo
	for total > target && hi < l.roundStart {
		end := l.unitEnd(hi)
		if end > l.roundStart {
			break
		}
		total -= l.size(hi, end)
		hi = end
	}
	l.remove(lo, hi)
	return hi - lo
}

// request returns the main request: the frame messages, then the kept conversation.
func (l *chatLog) request(frame ...hippocam.Message) []hippocam.Message {
	out := make([]hippocam.Message, 0, len(frame)+len(l.msgs))
	out = append(out, frame...)
	return append(out, l.msgs...)
}

// sized returns m with its Tokens set.
func sized(tok hippocam.Tokenizer, m hippocam.Message) hippocam.Message {
	m.Tokens = hippocam.MessageTokens(tok, &m)
	return m
}

// systemMessage is the baselines' system message.
func systemMessage(tok hippocam.Tokenizer) hippocam.Message {
	return sized(tok, hippocam.Message{Role: hippocam.RoleSystem, Content: baselineSystemPrompt})
}

// frameTokens is the size of a component-style request (prompt, instruction, tool) without its
// material.
func frameTokens(tok hippocam.Tokenizer, prompt, instruction string, tool hippocam.Tool) int {
	frame := []hippocam.Message{{Role: hippocam.RoleSystem, Content: prompt}, {Role: hippocam.RoleUser, Content: instruction}}
	return hippocam.RequestTokens(tok, frame, []hippocam.Tool{tool})
}

// contractAnswer asks a component-style call (the request's last message is the instruction)
// for one call of tool and passes its arguments to accept. As the engine does, a rejected answer
// is quoted back with the problem, up to corrections times; after that the last problem is
// returned as an error.
func (m *stepMeter) contractAnswer(ctx context.Context, role hippocam.CallRole, msgs []hippocam.Message, tool hippocam.Tool, accept func(args string) error) error {
	const corrections = engine.DefaultCorrections
	instruction := msgs[len(msgs)-1].Content
	var problem string
	for attempt := 0; attempt <= corrections; attempt++ {
		req := &hippocam.Request{Role: role, Messages: msgs, Tools: []hippocam.Tool{tool}, ToolChoice: tool.Name}
		resp, err := m.call(ctx, req)
		if err != nil {
			return err
		}
		args, found := "", false
		for _, c := range resp.Message.ToolCalls {
			if c.Name == tool.Name {
				args, found = c.Arguments, true
				break
			}
		}
		if !found {
			problem = "the answer did not call " + tool.Name
		} else if err := accept(args); err != nil {
			problem = err.Error()
		} else {
			return nil
		}
		last := hippocam.Message{Role: hippocam.RoleUser, Content: instruction + "\n\nYour previous answer was rejected: " + problem + "\nCall " + tool.Name + " again with a corrected answer."}
		msgs = append(append([]hippocam.Message(nil), msgs[:len(msgs)-1]...), last)
	}
	return fmt.Errorf("%s: %w: %s", role, errBrokenContract, problem)
}

// errBrokenContract marks a summarizer or extractor whose answers kept breaking the contract.
var errBrokenContract = errors.New("the answer broke the contract after every correction")
