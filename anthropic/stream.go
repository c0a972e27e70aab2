package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/httpretry"
)

var _ hippocam.StreamModel = (*Client)(nil)

// Stream is CompleteStream with a callback that cannot fail; onText may be nil.
func (c *Client) Stream(ctx context.Context, req *hippocam.Request, onText func(string)) (*hippocam.Response, error) {
	return c.CompleteStream(ctx, req, func(text string) error {
		if onText != nil {
			onText(text)
		}
		return nil
	})
}

// CompleteStream implements hippocam.StreamModel: it sends req as a streamed Messages request
// (stream: true), calls fn with every piece of text (text_delta) as it arrives, and returns the
// whole answer as Complete would: tool_use blocks assembled from their input_json_delta pieces,
// thinking and other blocks as Parts, the stop reason, and the usage of message_start and
// message_delta, cache reads and writes included. fn may be nil. An error from fn ends the
// stream and is returned wrapped, with no retry.
//
// Attempts are repeated, as for Complete, until the first piece of text has reached fn: a
// stream that breaks, or sends an error event such as overloaded_error, before that is tried
// again; after it the error is EUNAVAILABLE, so fn never sees a piece twice. Config.Timeout
// bounds the wait for the headers and the first line, Config.IdleTimeout every pause after it.
// Errors otherwise as for Complete; a stream that ends without message_stop is EUNAVAILABLE.
func (c *Client) CompleteStream(ctx context.Context, req *hippocam.Request, fn func(text string) error) (*hippocam.Response, error) {
	if err := c.structuredRefused(req); err != nil {
		return nil, err
	}
	body, err := c.requestBody(req, true)
	if err != nil {
		return nil, err
	}
	var asm *assembler
	err = c.do(ctx, &exchange{
		op: "messages stream", body: body, role: roleOf(req), betas: req.Betas, accept: "text/event-stream",
		read: func(resp *http.Response, a *httpretry.Attempt) error {
			asm = &assembler{onText: fn}
			return readEvents(resp.Body, a, asm)
		},
	})
	if err != nil {
		var cb callbackError
		if errors.As(err, &cb) {
			return nil, fmt.Errorf("stream callback: %w", cb.err)
		}
		return nil, c.structuredError(req, err)
	}
	resp, err := asm.response()
	if err == nil {
		hippocam.RestoreCalls(req.Tools, hippocam.FormatAnthropic, &resp.Message)
	}
	return resp, err
}

// callbackError carries an error of CompleteStream's callback through the event reader. It has
// no Unwrap on purpose: the retry loop must not take what the callback returned for a failure
// of the endpoint.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// readEvents reads the server-sent events of body and gives each to asm, until message_stop or
// the end of the body. Failures before any text reached the caller are transient; after it
// they are EUNAVAILABLE, like malformed events. A stream cut short (no message_stop) has
// hippocam.ErrStreamCut as its cause, or ErrTimeout when its attempt ran out of time.
func readEvents(body io.Reader, a *httpretry.Attempt, asm *assembler) error {
	fail := func(err error) error {
		if asm.texts == 0 {
			return httpretry.Transient{Err: err}
		}
		return err
	}
	event := func(data []byte) (done bool, err error) {
		var ev Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return false, unreadable(fmt.Sprintf("stream event %d: %v", asm.events+1, err))
		}
		if ev.Type == EventError {
			se := &StreamError{Body: ErrorBody{Type: ErrorAPI, Message: "an error event"}}
			if ev.Error != nil {
				se.Body = *ev.Error
			}
			se.Err = hippocam.Errorf(hippocam.EUNAVAILABLE, "model endpoint failed mid-stream: %s: %s", se.Body.Type, se.Body.Message)
			return false, fail(se)
		}
		err = asm.add(&ev)
		return asm.stopped, err
	}
	end := func(rerr error) error {
		if rerr != io.EOF {
			err := a.Explain(rerr)
			cause := hippocam.ErrStreamCut
			if errors.Is(err, hippocam.ErrTimeout) {
				cause = hippocam.ErrTimeout
			}
			return fail(&hippocam.Error{Code: hippocam.EUNAVAILABLE, Message: fmt.Sprintf("model stream broke off: %v", err), Cause: cause})
		}
		return fail(&hippocam.Error{Code: hippocam.EUNAVAILABLE, Message: "model stream ended before message_stop", Cause: hippocam.ErrStreamCut})
	}
	return httpretry.ReadEvents(body, a, maxStreamBytes, event, end)
}

// assembler builds the whole answer from a stream's events.
type assembler struct {
	onText  func(string) error
	blocks  []Block
	args    map[int]*strings.Builder // partial input of tool_use blocks, by index
	text    map[int]*strings.Builder // text of text blocks, by index (joined once, at the end)
	usage   Usage
	stop    string
	events  int
	texts   int // text deltas given to onText
	stopped bool
}

// add takes in one event. EUNAVAILABLE for an event that does not fit the stream.
func (s *assembler) add(ev *Event) error {
	s.events++
	switch ev.Type {
	case EventMessageStart:
		if ev.Message != nil {
			s.usage = ev.Message.Usage
		}
	case EventContentBlockStart:
		if ev.ContentBlock == nil || ev.Index < 0 || ev.Index > len(s.blocks) {
			return unreadable(fmt.Sprintf("content_block_start %d out of order", ev.Index))
		}
		b := *ev.ContentBlock
		delete(s.text, ev.Index)
		if _, call := b.Extra["input"]; b.Type == BlockToolUse || call { // tool_use, or a server tool's call
			b.Input = nil
			if s.args == nil {
				s.args = map[int]*strings.Builder{}
			}
			s.args[ev.Index] = &strings.Builder{}
		}
		if ev.Index == len(s.blocks) {
			s.blocks = append(s.blocks, b)
		} else {
			s.blocks[ev.Index] = b
		}
	case EventContentBlockDelta:
		if ev.Delta == nil || ev.Index < 0 || ev.Index >= len(s.blocks) {
			return unreadable(fmt.Sprintf("content_block_delta for block %d, which did not start", ev.Index))
		}
		return s.delta(ev.Index, ev.Delta)
	case EventMessageDelta:
		if ev.Delta != nil && ev.Delta.StopReason != nil {
			s.stop = *ev.Delta.StopReason
		}
		if u := ev.Usage; u != nil {
			s.usage.OutputTokens = u.OutputTokens
			if u.InputTokens > 0 || u.CacheReadInputTokens > 0 || u.CacheCreationInputTokens > 0 {
				s.usage.InputTokens, s.usage.CacheReadInputTokens = u.InputTokens, u.CacheReadInputTokens
				s.usage.CacheCreationInputTokens = u.CacheCreationInputTokens
			}
		}
	case EventMessageStop:
		s.stopped = true
	}
	return nil
}

// delta applies one content_block_delta to block i; the error is the callback's, as a
// callbackError.
func (s *assembler) delta(i int, d *Delta) error {
	b := &s.blocks[i]
	switch d.Type {
	case deltaText:
		if d.Text != "" {
			if s.text == nil {
				s.text = map[int]*strings.Builder{}
			}
			sb := s.text[i]
			if sb == nil {
				sb = &strings.Builder{}
				sb.WriteString(b.Text)
				s.text[i] = sb
			}
			sb.WriteString(d.Text)
			s.texts++
			if s.onText != nil {
				if err := s.onText(d.Text); err != nil {
					return callbackError{err}
				}
			}
		}
	case deltaInputJSON:
		if sb := s.args[i]; sb != nil {
			sb.WriteString(d.PartialJSON)
		}
	case deltaThinking:
		b.Thinking += d.Thinking
	case deltaSignature:
		b.Signature += d.Signature
	}
	return nil
}

// response returns the assembled answer.
func (s *assembler) response() (*hippocam.Response, error) {
	raws := make([]json.RawMessage, len(s.blocks))
	for i := range s.blocks {
		b := &s.blocks[i]
		if sb := s.text[i]; sb != nil && b.Type == BlockText {
			b.Text = sb.String()
		}
		if sb := s.args[i]; sb != nil {
			if b.Type == BlockToolUse {
				b.Input = json.RawMessage(sb.String())
				continue
			}
			if sb.Len() > 0 { // a server tool's call: its input is one of the block's other members
				extra := maps.Clone(b.Extra)
				extra["input"] = json.RawMessage(sb.String())
				b.Extra = extra
			}
		}
		if b.Type != BlockText {
			raw, err := marshal(b)
			if err != nil {
				return nil, unreadable(fmt.Sprintf("content block %d: %v", i, err))
			}
			raws[i] = raw
		}
	}
	return answerOf(s.blocks, raws, s.stop, s.usage)
}
