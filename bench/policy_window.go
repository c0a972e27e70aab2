package bench

import (
	"context"

	"github.com/hippocam/hippocam"
)

// The two policies without memory. Both send the baselines' plain system prompt, then the
// conversation, with no tools, and make exactly one model call per step (the main model's).
//
//   - truncate: before each main call, the oldest messages are dropped, whole exchanges at a
//     time (an answer with tool calls leaves with all of its results) and never a leading system
//     message of the conversation or the round being answered, until the request is at most ρW
//     tokens (0.8·W, ρ of engine.ForWindow). What is dropped is gone for good, so the request
//     grows back from ρW and is cut again when it passes ρW. If the round being answered alone
//     exceeds the window, the request is sent anyway and the Turn marked Overflow.
//   - full: everything, always; a request over W is sent anyway and the Turn marked Overflow
//     (a real provider would refuse it; the simulated model answers, so that the figures show
//     what keeping everything would cost).

// windowAgent is truncate (drop set) or full.
type windowAgent struct {
	env  Env
	p    baselineParams
	log  *chatLog
	sys  hippocam.Message
	drop bool
}

func newTruncateAgent(env Env) (Agent, error) { return newWindowAgent(env, true) }

func newFullAgent(env Env) (Agent, error) { return newWindowAgent(env, false) }

func newWindowAgent(env Env, drop bool) (Agent, error) {
	if err := checkEnv(env); err != nil {
		return nil, err
	}
	return &windowAgent{env: env, p: paramsFor(env.Window), log: newChatLog(env.Tok), sys: systemMessage(env.Tok), drop: drop}, nil
}

// Step appends the step's messages, truncates (truncate only) and asks the main model.
func (a *windowAgent) Step(ctx context.Context, in []hippocam.Message) (*Turn, error) {
	m := newStepMeter(a.env)
	if err := a.log.add(in); err != nil {
		return nil, err
	}
	if a.drop {
		a.log.dropOldest(hippocam.RequestTokens(a.env.Tok, []hippocam.Message{a.sys}, nil), a.p.target)
	}
	resp, err := m.mainCall(ctx, a.log.request(a.sys))
	if err != nil {
		return nil, err
	}
	return m.finish(a.log.answer(resp)), nil
}
