package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
)

// InProcess is the simulated model as a hippocam.Model and a hippocam.StreamModel, called
// directly, with no HTTP between the engine and the simulation. Requests are read as chat
// completions would carry them (the same messages, the same ids, the same usage as through
// Handler), and the model's Latency applies as it does over HTTP. It is safe for concurrent
// use.
type InProcess struct{ m *Model }

var _ hippocam.StreamModel = (*InProcess)(nil)

// InProcess returns m as a hippocam.StreamModel that shares m's prompt cache, usage and latency.
func (m *Model) InProcess() *InProcess { return &InProcess{m: m} }

// Complete answers req whole, after the time to first byte and the production of its output
// tokens. Errors: EINVALID as Model.Complete; EUNAVAILABLE, matching ctx.Err() with errors.Is,
// when ctx ends first.
func (p *InProcess) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	start := time.Now()
	rep, err := p.answer(req)
	if err != nil {
		return nil, err
	}
	if err := p.m.whole(ctx, start, rep.Usage.Output); err != nil {
		return nil, ended(err)
	}
	return domainResponse(rep), nil
}

// CompleteStream answers req like Complete and calls fn with the answer's text in pieces of at
// most 64 bytes (never inside a character), each once its tokens are produced; the first waits
// for the time to first byte. Tool calls come only in the Response, once produced too. An error
// from fn ends the call and is returned as it is. Other errors as Complete.
func (p *InProcess) CompleteStream(ctx context.Context, req *hippocam.Request, fn func(text string) error) (*hippocam.Response, error) {
	start := time.Now()
	rep, err := p.answer(req)
	if err != nil {
		return nil, err
	}
	textPieces := pieces(rep.Message.Content)
	pc := p.m.pace(ctx, start, rep.Usage.Output, weigh(p.m.tok, textPieces, rep.Message.ToolCalls))
	if err := pc.firstByte(); err != nil {
		return nil, ended(err)
	}
	for _, piece := range textPieces {
		if err := pc.text(piece); err != nil {
			return nil, ended(err)
		}
		if err := fn(piece); err != nil {
			return nil, err
		}
	}
	for _, c := range rep.Message.ToolCalls {
		if err := pc.call(c.Name, c.Arguments); err != nil {
			return nil, ended(err)
		}
	}
	return domainResponse(rep), nil
}

// answer reads req as the chat request a client would send for it and answers it.
func (p *InProcess) answer(req *hippocam.Request) (*Reply, error) {
	if req == nil || len(req.Messages) == 0 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "messages: at least one message is required")
	}
	model := req.Model
	if model == "" {
		model = ModelID
	}
	w, err := wire.FromRequest(model, req)
	if err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "request: %v", err)
	}
	msgs, tools, err := wire.ToRequest(&w)
	if err != nil {
		return nil, err
	}
	digest, err := requestDigest(req.Role, &w)
	if err != nil {
		return nil, err
	}
	shape, err := chatShape(&w)
	if err != nil {
		return nil, err
	}
	return p.m.AnswerShaped(req.Role, msgs, tools, shape, digest, RequestSeed(w.Extra))
}

// domainResponse is the domain form of a reply.
func domainResponse(rep *Reply) *hippocam.Response {
	return &hippocam.Response{Message: rep.Message, FinishReason: rep.FinishReason, Usage: rep.Usage}
}

// ended is the error of a call whose context ended while the answer was being produced:
// EUNAVAILABLE, with the context's error in the chain as well.
func ended(err error) error {
	return fmt.Errorf("%w: %w", hippocam.Errorf(hippocam.EUNAVAILABLE, "the simulated answer was cut off"), err)
}
