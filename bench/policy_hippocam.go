package bench

import (
	"context"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
)

// The engine, in full and in two ablations. Each session runs the real engine with
// engine.ForWindow(Env.Window) (Table 5's ratios), Env.Prices, and an in-memory store; one
// Step is one engine.Advance (load, step, commit), so the store's work counts as the engine's
// own time.

// engineAgent runs one session through the engine.
type engineAgent struct {
	e  *engine.Engine
	st hippocam.Store
}

const benchSession = "bench"

func newEngineAgent(env Env, cfg engine.Config, model hippocam.Model) (Agent, error) {
	if err := checkEnv(env); err != nil {
		return nil, err
	}
	cfg.Prices = env.Prices
	e, err := engine.New(cfg, model, env.Tok, nil)
	if err != nil {
		return nil, err
	}
	return &engineAgent{e: e, st: inmem.New()}, nil
}

// newHippocamAgent is the `hippocam` policy: everything the engine does, with its defaults for
// the window.
func newHippocamAgent(env Env) (Agent, error) {
	return newEngineAgent(env, engine.ForWindow(env.Window), env.Model)
}

// newGateAgent is `hippocam-gate`: the engine with JANUS asked before the main call
// (engine.JanusGate, the paper's order) instead of beside it, so that the two orders can be
// compared on the same workloads.
func newGateAgent(env Env) (Agent, error) {
	cfg := engine.ForWindow(env.Window)
	cfg.Janus = engine.JanusGate
	return newEngineAgent(env, cfg, env.Model)
}

// newNoRecallAgent is `hippocam-no-recall`: the engine's NoRecall ablation, so that the recall
// and search tools are never offered and the model answers from what is in view (memories and
// their impressions included).
func newNoRecallAgent(env Env) (Agent, error) {
	cfg := engine.ForWindow(env.Window)
	cfg.Ablations.NoRecall = true
	return newEngineAgent(env, cfg, env.Model)
}

// newNoPrefixAgent is `hippocam-no-prefix`, the ablation of the paper's Table 4: the engine's
// NoPrefix switch replaces prefix consolidation by truncation under pressure (no PALIM call, no
// ordinary fold); JANUS, PRECIP, recall and the working tail are unchanged.
func newNoPrefixAgent(env Env) (Agent, error) {
	cfg := engine.ForWindow(env.Window)
	cfg.Ablations.NoPrefix = true
	return newEngineAgent(env, cfg, env.Model)
}

// Step runs one engine step and commits it.
func (a *engineAgent) Step(ctx context.Context, in []hippocam.Message) (*Turn, error) {
	msgs := make([]hippocam.Message, len(in))
	for i, m := range in {
		msgs[i] = hippocam.Message{Role: m.Role, Kind: hippocam.KindRaw, Content: m.Content, ToolCallID: m.ToolCallID}
	}
	began := time.Now()
	res, err := a.e.Advance(ctx, a.st, "", benchSession, engine.Input{Messages: msgs})
	if err != nil {
		return nil, err
	}
	wall := time.Since(began)
	// The JANUS call of this step may run on after its answer (engine.JanusBeside): its cost is
	// this step's.
	later, err := a.e.SettleVerdict(ctx, "", benchSession)
	if err != nil {
		return nil, err
	}
	usage := hippocam.Usage{}
	usage.Merge(res.Usage)
	usage.Merge(later)
	return &Turn{
		Answer:               res.Answer,
		Usage:                usage,
		MaxRequestTokens:     res.MaxRequestTokens,
		RecallCalls:          res.RecallCalls,
		PrefixConsolidations: res.PrefixConsolidations,
		Verdict:              res.Verdict,
		EngineTime:           max(0, wall-res.ModelTime),
	}, nil
}
