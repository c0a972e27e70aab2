// Package learn is the learning layer above the engine (docs/learning.md): the router that
// sends a task to a cluster, the contract calls every learning component makes, the lexical
// retrieval the systems use, and applying a finished task to its cluster. The memory systems
// themselves live under memory/, one package each (registered in memory/library); the runner
// that plays a stream of tasks under each condition is bench/learnstream.
package learn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/hippocam/hippocam"
)

// Env is what a learning component needs: the model (usually a Meter, so that usage is counted
// by role), the tokenizer, the repair bound and a logger.
type Env struct {
	Model hippocam.Model
	Tok   hippocam.Tokenizer
	// Corrections bounds how often an answer that breaks its contract is sent back with the
	// validator's error (default 2).
	Corrections int
	// ModelName is passed as the request's model ("" for the client's default).
	ModelName string
	// Structured is how a contract call asks for its JSON answer (hippocam.StructuredMode; ""
	// is auto: natively, in prose once the upstream refused).
	Structured hippocam.StructuredMode
	Log        *slog.Logger
}

// Logger is the environment's logger (one that discards, when none is set).
func (e *Env) Logger() *slog.Logger { return e.log() }

func (e *Env) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

// ErrGaveUp is the error of a contract call whose answers kept breaking the contract: the caller
// falls back safely (the task runs stateless, the cluster stays as it was).
var ErrGaveUp = errors.New("the answers kept breaking the contract")

// Call makes one contract call (docs/learning.md, "Roles and cost"): the role's prompt as the system message,
// the instruction as the user message, an answer that is one JSON object following schema, asked
// for natively (hippocam.Structured, named after the role, strict) unless env.Structured says
// prose; then the schema travels in the system message. An upstream that refuses the native
// request is asked the same again in prose (auto mode). accept decodes and validates the answer;
// a rejected answer is sent back with the reason, at most Corrections times, and then Call
// returns an error wrapping ErrGaveUp. Model errors are returned as they are.
func Call(ctx context.Context, env *Env, role hippocam.CallRole, prompt, instruction string, schema json.RawMessage, accept func(args string) error) error {
	corrections := env.Corrections
	if corrections <= 0 {
		corrections = 2
	}
	native := env.Structured.Native()
	text := instruction
	var problem string
	for attempt := 0; attempt <= corrections; attempt++ {
		note := &hippocam.CallNote{Attempt: attempt + 1} // for an observer of the calls
		resp, err := env.Model.Complete(hippocam.WithCallNote(ctx, note), callRequest(env, role, prompt, text, schema, native))
		if err != nil && native && env.Structured.Fallback() && hippocam.IsStructuredRefusal(err) {
			note.Done()
			env.log().Info("structured output refused, asking with the schema in prose", "role", role, "error", err)
			native = false
			note = &hippocam.CallNote{Attempt: attempt + 1}
			resp, err = env.Model.Complete(hippocam.WithCallNote(ctx, note), callRequest(env, role, prompt, text, schema, native))
		}
		if err != nil {
			note.Done()
			return fmt.Errorf("%s: %w", role, err)
		}
		args, found := answerObject(resp, string(role))
		if native {
			args = hippocam.DropNulls(args) // what strict mode made nullable and the model left out
		}
		switch {
		case !found:
			problem = "the answer holds no JSON object"
		default:
			if err := accept(args); err != nil {
				problem = err.Error()
			} else {
				note.Done()
				return nil
			}
		}
		note.Refuse(problem)
		note.Done()
		env.log().Warn("learning component output rejected", "role", role, "attempt", attempt+1, "problem", problem)
		answer := resp.Message.Content
		if found {
			answer = args
		}
		text = instruction + "\n\n" + RejectedMarker + ": " + clip(problem, 1000) +
			"\nIt was: " + clip(answer, 1000) + "\nAnswer again, correctly."
	}
	return fmt.Errorf("%s: %w (last problem: %s)", role, ErrGaveUp, problem)
}

// RejectedMarker begins the part a repeated contract call adds to its instruction: why the
// previous answer was refused, and that answer.
const RejectedMarker = "Your previous answer was rejected"

// callRequest is a contract call's request. It offers no tools; native asks for the answer with
// hippocam.Structured, else the schema is written into the system message.
func callRequest(env *Env, role hippocam.CallRole, prompt, text string, schema json.RawMessage, native bool) *hippocam.Request {
	system := strings.TrimSpace(prompt) + "\n\nAnswer with one JSON object following this schema, and nothing else:\n" + string(schema)
	if native {
		system = strings.TrimSpace(prompt) + "\n\nAnswer with one JSON object, and nothing else."
	}
	req := &hippocam.Request{Role: role, Model: env.ModelName, Messages: []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: system},
		{Role: hippocam.RoleUser, Content: text},
	}}
	if native {
		req.Structured = &hippocam.Structured{Name: string(role), Schema: schema, Strict: true}
	}
	return req
}

// answerObject is the JSON object of an answer: the object in its text, else the arguments of a
// call (a call of name first: how an Anthropic upstream answers a structured request).
func answerObject(resp *hippocam.Response, name string) (string, bool) {
	for _, c := range resp.Message.ToolCalls {
		if c.Name == name {
			return c.Arguments, true
		}
	}
	if args, ok := hippocam.JSONObject(resp.Message.Content); ok {
		return args, true
	}
	for _, c := range resp.Message.ToolCalls { // a model that answered with another call
		return c.Arguments, true
	}
	return "", false
}

// Decode reads args into v strictly: one JSON value, no unknown fields.
func Decode(args string, v any) error {
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the answer is not valid JSON for the schema: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("the answer holds more than one JSON value")
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Meter wraps a model and adds up the usage of every call, by role, priced. It is safe for
// concurrent use.
type Meter struct {
	Model  hippocam.Model
	Prices hippocam.Prices
	mu     sync.Mutex
	usage  hippocam.Usage
}

// NewMeter returns a meter over m.
func NewMeter(m hippocam.Model, p hippocam.Prices) *Meter {
	return &Meter{Model: m, Prices: p, usage: hippocam.Usage{}}
}

// Complete calls the model and records the call's usage.
func (m *Meter) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	resp, err := m.Model.Complete(ctx, req)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.usage.Add(req.Role, resp.Usage, m.Prices)
	m.mu.Unlock()
	return resp, nil
}

// Usage returns what the calls so far consumed, by role.
func (m *Meter) Usage() hippocam.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage.Clone()
}
