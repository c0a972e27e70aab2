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
	// localPalim is set when PALIM is answered without a model (hippocam-no-prefix): its
	// calls are then removed from the step's usage, since no model was called.
	localPalim bool
}

const benchSession = "bench"

func newEngineAgent(env Env, cfg engine.Config, model hippocam.Model, localPalim bool) (Agent, error) {
	if err := checkEnv(env); err != nil {
		return nil, err
	}
	cfg.Prices = env.Prices
	e, err := engine.New(cfg, model, env.Tok, nil)
	if err != nil {
		return nil, err
	}
	return &engineAgent{e: e, st: inmem.New(), localPalim: localPalim}, nil
}

// newHippocamAgent is the `hippocam` policy: everything the engine does, with its defaults for
// the window.
func newHippocamAgent(env Env) (Agent, error) {
	return newEngineAgent(env, engine.ForWindow(env.Window), env.Model, false)
}

// newNoRecallAgent is `hippocam-no-recall`: the engine with RecallLimit 0, so that the recall
// tool is never offered and the model answers from what is in view (memories and their
// impressions included).
func newNoRecallAgent(env Env) (Agent, error) {
	cfg := engine.ForWindow(env.Window)
	cfg.RecallLimit = 0
	return newEngineAgent(env, cfg, env.Model, false)
}

// newNoPrefixAgent is `hippocam-no-prefix`, the ablation of the paper's Table 4: prefix
// consolidation replaced by truncation. engine.Config has no switch for it, so the ablation is
// done by wrapping the model: every PALIM call is answered locally, without calling the model
// and at no cost, with a valid PALIM answer that keeps nothing (narrative "Earlier messages were
// dropped.", no knowledge). The engine folds at exactly the points where it would have
// consolidated, and the prefix leaves the model's view with only that stub in its place:
// JANUS, PRECIP, recall and the working tail are unchanged.
//
// One difference from a plain truncation remains: the engine still archives the dropped prefix
// beneath the stub's ref. The simulated model never opens it (the stub names no fact), but a
// real model could; a faithful ablation needs a mode of the engine that drops the prefix.
func newNoPrefixAgent(env Env) (Agent, error) {
	return newEngineAgent(env, engine.ForWindow(env.Window), truncatingPalim{inner: env.Model}, true)
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
	usage := res.Usage.Clone()
	if a.localPalim {
		delete(usage, hippocam.CallPalim)
	}
	return &Turn{
		Answer:           res.Answer,
		Usage:            usage,
		MaxRequestTokens: res.MaxRequestTokens,
		RecallCalls:      res.RecallCalls,
		EngineTime:       max(0, wall-res.ModelTime),
	}, nil
}

// truncationNarrative is the whole memory that hippocam-no-prefix leaves of a folded prefix.
const truncationNarrative = "Earlier messages were dropped."

// truncatingPalim passes every call to inner except PALIM's, which it answers itself with a
// memory that keeps nothing: the fold becomes a truncation.
type truncatingPalim struct{ inner hippocam.Model }

// truncationArgs is the PALIM answer of a truncation: a valid engine.PalimOutput.
const truncationArgs = `{"narrative":"` + truncationNarrative + `","knowledge":[]}`

func (m truncatingPalim) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role != hippocam.CallPalim {
		return m.inner.Complete(ctx, req)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	call := hippocam.ToolCall{ID: "call_truncate", Name: engine.PalimTool, Arguments: truncationArgs}
	return &hippocam.Response{
		Message:      hippocam.Message{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{call}},
		FinishReason: "tool_calls",
	}, nil
}
