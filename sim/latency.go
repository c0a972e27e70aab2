package sim

import (
	"context"
	"math"
	"time"

	"github.com/hippocam/hippocam"
)

// Latency makes the simulation answer at a hosted provider's pace (docs/sim.md, "Latency"): each
// response waits TTFT before its first byte and then produces its output tokens, counted with
// the simulation's tokenizer, at TokensPerSecond. A streamed answer arrives in pieces as they
// are produced; a plain one arrives whole once the last token is. The zero Latency answers at
// once, as the simulation always did.
type Latency struct {
	// TTFT is the time from the request to the response's first byte.
	TTFT time.Duration
	// TokensPerSecond is the output rate after the first byte; 0 produces the whole output at
	// once.
	TokensPerSecond float64
}

// Zero reports whether l adds no delay at all.
func (l Latency) Zero() bool { return l.TTFT == 0 && l.TokensPerSecond == 0 }

// Validate returns EINVALID for a negative time to first byte or a rate that is negative or
// not finite.
func (l Latency) Validate() error {
	if l.TTFT < 0 {
		return hippocam.Errorf(hippocam.EINVALID, "latency: the time to first byte must not be negative")
	}
	if l.TokensPerSecond < 0 || math.IsNaN(l.TokensPerSecond) || math.IsInf(l.TokensPerSecond, 0) {
		return hippocam.Errorf(hippocam.EINVALID, "latency: tokens per second must be a finite number, 0 or more")
	}
	return nil
}

// output is how long producing n output tokens takes at l's rate.
func (l Latency) output(n int) time.Duration {
	if l.TokensPerSecond == 0 || n <= 0 {
		return 0
	}
	return time.Duration(float64(n) / l.TokensPerSecond * float64(time.Second))
}

// SetLatency makes every later response of m, over HTTP, through Transport and through
// InProcess, follow l. It returns EINVALID when l fails Validate, and then changes nothing.
func (m *Model) SetLatency(l Latency) error {
	if err := l.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.latency = l
	return nil
}

// Latency returns the latency m answers with.
func (m *Model) Latency() Latency {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.latency
}

// pacer times the output of one answer. The answer is a sequence of pieces (pieces of text, whole
// tool calls) whose weights are their token counts; piece k is released once the tokens of
// pieces 0…k have been produced, the last exactly when all of the answer's output tokens have,
// so that a streamed answer ends when the same answer unstreamed would arrive. A nil pacer
// releases everything at once.
type pacer struct {
	ctx   context.Context
	start time.Time
	lat   Latency
	tok   hippocam.Tokenizer
	// perWeight is the production time of one unit of weight; done the weight released so far.
	perWeight float64
	done      int
}

// pace returns the pacer of an answer received at start with the given output tokens and total
// piece weight (see weigh), or nil when the model adds no latency.
func (m *Model) pace(ctx context.Context, start time.Time, outputTokens, weight int) *pacer {
	lat := m.Latency()
	if lat.Zero() {
		return nil
	}
	p := &pacer{ctx: ctx, start: start, lat: lat, tok: m.tok}
	if weight > 0 {
		p.perWeight = float64(lat.output(outputTokens)) / float64(weight)
	}
	return p
}

// weigh returns the total weight of an answer's pieces: the tokens of each piece of its text and
// of each tool call.
func weigh(tok hippocam.Tokenizer, text []string, calls []hippocam.ToolCall) int {
	n := 0
	for _, s := range text {
		n += pieceWeight(tok, s)
	}
	for _, c := range calls {
		n += callWeight(tok, c.Name, c.Arguments)
	}
	return n
}

// pieceWeight is one piece of text's weight: its tokens, at least one, so that every piece takes
// time.
func pieceWeight(tok hippocam.Tokenizer, s string) int { return max(1, tok.Count(s)) }

// callWeight is a tool call's weight: the tokens of its name and arguments, at least one.
func callWeight(tok hippocam.Tokenizer, name, arguments string) int {
	return max(1, tok.Count(name)+tok.Count(arguments))
}

// firstByte waits until the time to first byte has passed since the request arrived. It returns
// the context's error if the request ends first.
func (p *pacer) firstByte() error {
	if p == nil {
		return nil
	}
	return sleepUntil(p.ctx, p.start.Add(p.lat.TTFT))
}

// text waits until the piece of text s has been produced.
func (p *pacer) text(s string) error {
	if p == nil {
		return nil
	}
	return p.release(pieceWeight(p.tok, s))
}

// call waits until the tool call of that name and arguments has been produced.
func (p *pacer) call(name, arguments string) error {
	if p == nil {
		return nil
	}
	return p.release(callWeight(p.tok, name, arguments))
}

// release waits until weight more has been produced after the first byte.
func (p *pacer) release(weight int) error {
	p.done += weight
	at := p.start.Add(p.lat.TTFT + time.Duration(p.perWeight*float64(p.done)))
	return sleepUntil(p.ctx, at)
}

// whole waits until an unstreamed answer of outputTokens tokens, received at start, is ready: the
// time to first byte plus the production of every token. It returns at once for zero latency,
// and the context's error if the request ends first.
func (m *Model) whole(ctx context.Context, start time.Time, outputTokens int) error {
	lat := m.Latency()
	if lat.Zero() {
		return nil
	}
	return sleepUntil(ctx, start.Add(lat.TTFT+lat.output(outputTokens)))
}

// sleepUntil waits until t or until ctx ends, whichever comes first, and returns ctx's error in
// the second case (also when t has already passed).
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
