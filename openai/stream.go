package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/httpretry"
	"github.com/hippocam/hippocam/openai/wire"
)

var _ hippocam.StreamModel = (*Client)(nil)

// Stream sends req as a streamed chat completion (stream: true, with a final usage chunk),
// calls fn with every chunk as it arrives, and returns the whole answer assembled from the
// deltas of the first choice: content concatenated, tool calls merged by index, the last
// finish reason and the usage chunk's usage. fn may be nil. An error from fn ends the stream
// and is returned wrapped.
//
// Attempts are repeated, as for Complete, only until the first chunk has reached fn; a stream
// that breaks after that gives EUNAVAILABLE. Config.Timeout bounds the wait for the headers
// and the first line, Config.IdleTimeout every pause after it. Errors otherwise as for Complete.
func (c *Client) Stream(ctx context.Context, req *hippocam.Request, fn func(wire.ChatChunk) error) (*hippocam.Response, error) {
	return c.stream(ctx, req, func(ch wire.ChatChunk) (bool, error) {
		if fn == nil {
			return true, nil
		}
		return true, fn(ch)
	})
}

// CompleteStream implements hippocam.StreamModel: Complete, streamed, with the text of the
// first choice's content deltas given to fn as it arrives (tool calls come whole in the
// Response). An error from fn ends the stream and is returned wrapped, with no retry.
//
// Attempts are repeated, as for Complete, until the first piece of text has reached fn (a
// stream that breaks after its role chunk but before any text is tried again, and fn never
// sees a piece twice); after it a broken stream is EUNAVAILABLE. Errors otherwise as for
// Complete.
func (c *Client) CompleteStream(ctx context.Context, req *hippocam.Request, fn func(text string) error) (*hippocam.Response, error) {
	return c.stream(ctx, req, func(ch wire.ChatChunk) (bool, error) {
		sent := false
		for _, cc := range ch.Choices {
			if cc.Index != 0 || cc.Delta.Content == nil || *cc.Delta.Content == "" {
				continue
			}
			sent = true
			if fn == nil {
				continue
			}
			if err := fn(*cc.Delta.Content); err != nil {
				return true, err
			}
		}
		return sent, nil
	})
}

// stream sends req streamed and gives every chunk to deliver, which reports whether the chunk
// reached the caller (from then on a failure is not retried) and the caller's error.
func (c *Client) stream(ctx context.Context, req *hippocam.Request, deliver func(wire.ChatChunk) (bool, error)) (*hippocam.Response, error) {
	if err := c.structuredRefused(req); err != nil {
		return nil, err
	}
	body, err := c.requestBody(req, true)
	if err != nil {
		return nil, err
	}
	var asm *wire.ChunkAssembler
	err = c.do(ctx, &exchange{
		op: "chat completion stream", method: http.MethodPost, path: "/chat/completions",
		body: body, role: roleOf(req), accept: "text/event-stream",
		read: func(resp *http.Response, a *httpretry.Attempt) error {
			asm = &wire.ChunkAssembler{}
			return readEvents(resp.Body, a, func(ch wire.ChatChunk) (bool, error) {
				_ = asm.Add(ch) // no error: indices are not required
				delivered, err := deliver(ch)
				if err != nil {
					return delivered, callbackError{err}
				}
				return delivered, nil
			})
		},
	})
	if err != nil {
		var cb callbackError
		if errors.As(err, &cb) {
			return nil, fmt.Errorf("stream callback: %w", cb.err)
		}
		return nil, c.structuredError(req, err)
	}
	resp, err := response(asm)
	if err == nil {
		hippocam.RestoreCalls(req.Tools, hippocam.FormatChat, &resp.Message)
	}
	return resp, err
}

// callbackError carries an error of Stream's callback through the event reader. It has no
// Unwrap on purpose: the retry loop must not mistake what the callback returned for a failure
// of the endpoint.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// streamEvent is a data event of the stream: a chunk, or an error a server sends mid-stream.
type streamEvent struct {
	wire.ChatChunk
	Error json.RawMessage `json:"error"`
}

// readEvents reads the server-sent events of body, decodes each data event as a chunk and
// gives it to fn, until "[DONE]" or the end of the body (accepted in place of "[DONE]" only
// after the finish reason and the usage chunk that follows it). fn reports whether the chunk
// reached the caller. Read failures, error events and a body that ends too soon are transient
// before any chunk did; after it they are EUNAVAILABLE (a stream cut short has
// hippocam.ErrStreamCut as its cause, or ErrTimeout), like malformed events.
func readEvents(body io.Reader, a *httpretry.Attempt, fn func(wire.ChatChunk) (bool, error)) error {
	var finished, usage, delivered bool
	chunks := 0
	event := func(data []byte) (done bool, err error) {
		ev := bytes.TrimSpace(data)
		if string(ev) == "[DONE]" {
			return true, nil
		}
		var se streamEvent
		if err := json.Unmarshal(ev, &se); err != nil {
			return false, unreadable(fmt.Sprintf("stream event %d: %v", chunks+1, err))
		}
		if len(se.Error) > 0 && string(se.Error) != "null" {
			body := parseErrorBody(ev).Error
			err := &StreamError{Body: body, Err: hippocam.Errorf(hippocam.EUNAVAILABLE, "model endpoint failed mid-stream: %s", body.Message)}
			if !delivered {
				return false, httpretry.Transient{Err: err} // nothing reached the caller: try again
			}
			return false, err
		}
		for _, ch := range se.Choices {
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				finished = true
			}
		}
		usage = usage || (finished && se.Usage != nil)
		chunks++
		got, err := fn(se.ChatChunk)
		delivered = delivered || got
		return false, err
	}
	end := func(rerr error) error {
		var err error
		switch {
		case rerr != io.EOF && !delivered:
			return httpretry.Transient{Err: rerr}
		case rerr != io.EOF:
			err = a.Explain(rerr)
			cause := hippocam.ErrStreamCut
			if errors.Is(err, hippocam.ErrTimeout) {
				cause = hippocam.ErrTimeout
			}
			return &hippocam.Error{Code: hippocam.EUNAVAILABLE, Message: fmt.Sprintf("model stream broke off: %v", err), Cause: cause}
		case !finished:
			err = &hippocam.Error{Code: hippocam.EUNAVAILABLE, Message: "model stream ended before the answer was complete", Cause: hippocam.ErrStreamCut}
		case !usage:
			// The usage chunk, asked for with include_usage, comes after the finish reason:
			// without it or [DONE], the stream was cut after the answer's last chunk.
			err = &hippocam.Error{Code: hippocam.EUNAVAILABLE, Message: "model stream ended without [DONE]", Cause: hippocam.ErrStreamCut}
		default:
			return nil // a server that leaves out [DONE] but sent everything else
		}
		if !delivered {
			return httpretry.Transient{Err: err} // nothing reached the caller: try again
		}
		return err
	}
	return httpretry.ReadEvents(body, a, maxStreamBytes, event, end)
}

// response returns the answer asm assembled.
func response(asm *wire.ChunkAssembler) (*hippocam.Response, error) {
	m, err := assistantMessage(asm.Message())
	if err != nil {
		return nil, err
	}
	return &hippocam.Response{Message: m, FinishReason: asm.Finish(), Usage: usageOf(asm.Usage())}, nil
}
