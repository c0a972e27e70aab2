package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sse"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/scenario"
)

// sessionHeader names the proxy session a request belongs to (the proxy's Hippocam-Session).
const sessionHeader = "Hippocam-Session"

// maxAnswerBytes bounds one answer, streamed or not.
const maxAnswerBytes = 64 << 20

// HTTPConfig says where RunHTTP sends a scenario and how.
type HTTPConfig struct {
	// BaseURL is the API root that /chat/completions is appended to, such as
	// http://127.0.0.1:8080/v1. A trailing slash is ignored. Required.
	BaseURL string
	// Session is sent as the Hippocam-Session header; empty sends none.
	Session string
	// APIKey is sent as "Authorization: Bearer KEY"; empty sends none.
	APIKey string
	// Model is put in every request body; empty sends "model": "".
	Model string
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client
	// Stream reports whether step number step (counting from 1) is streamed; nil streams none.
	Stream func(step int) bool
	// Tools, if any, are declared in every request.
	Tools []wire.ToolDef
}

// Validate returns EINVALID when BaseURL is missing or not an absolute http(s) URL.
func (c *HTTPConfig) Validate() error {
	u, err := url.Parse(c.BaseURL)
	if c.BaseURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return hippocam.Errorf(hippocam.EINVALID, "replay: base URL %q must be an http or https URL with a host", c.BaseURL)
	}
	return nil
}

// HTTPReport is the outcome of RunHTTP, as the client saw it.
type HTTPReport struct {
	// Answers are the final texts after each user message containing "!ask", in order.
	Answers []string `json:"answers"`
	// Transcript is the whole history the client kept and resent: its user and tool messages
	// and the assistant answers as received.
	Transcript []wire.ChatMessage `json:"transcript"`
	// Steps counts the requests sent; Streamed counts those that were streamed.
	Steps    int `json:"steps"`
	Streamed int `json:"streamed"`
	// Usage sums the usage the endpoint reported (zero where it reported none).
	Usage wire.Usage `json:"usage"`
}

// HTTPStatusError is an answer with a status other than 2xx. Its chain holds a *hippocam.Error:
// EUNAUTHORIZED for 401, EFORBIDDEN for 403, EINVALID for another 4xx, EUNAVAILABLE otherwise.
type HTTPStatusError struct {
	Status int
	// Body is the endpoint's OpenAI error; a body of another shape becomes its message.
	Body wire.ErrorResponse
}

// Error returns the text of the *hippocam.Error it unwraps to.
func (e *HTTPStatusError) Error() string { return e.Unwrap().Error() }

// Unwrap returns the *hippocam.Error naming the status and the endpoint's message.
func (e *HTTPStatusError) Unwrap() error {
	code := hippocam.EUNAVAILABLE
	switch {
	case e.Status == http.StatusUnauthorized:
		code = hippocam.EUNAUTHORIZED
	case e.Status == http.StatusForbidden:
		code = hippocam.EFORBIDDEN
	case e.Status >= 400 && e.Status < 500:
		code = hippocam.EINVALID
	}
	msg := fmt.Sprintf("endpoint answered %d %s", e.Status, http.StatusText(e.Status))
	if m := e.Body.Error.Message; m != "" {
		msg += ": " + m
	}
	return &hippocam.Error{Code: code, Message: msg}
}

// RunHTTP plays lines against an OpenAI-compatible endpoint the way an agent does: it keeps the
// whole history (each user line as a user message; tool lines answering the pending calls of the
// last answer, in order, with their tool_call_id; each answer as received) and, after each user
// line or after the tool lines that answer all pending calls, POSTs the whole history to
// BaseURL/chat/completions, streamed or not as c.Stream says. It makes no retries.
//
// A line that does not fit the conversation (a tool result with no pending call, a user message
// while calls wait for results) is an EINVALID error naming the line, as for Run. A request
// that fails names its line: a non-2xx answer is an *HTTPStatusError; an unreachable endpoint,
// an unreadable answer or a stream that breaks off (or ends without "data: [DONE]") is
// EUNAVAILABLE. When ctx ends the error is EUNAVAILABLE and errors.Is matches ctx.Err().
func RunHTTP(ctx context.Context, c HTTPConfig, lines []scenario.Line) (*HTTPReport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Client == nil {
		c.Client = http.DefaultClient
	}
	rep := &HTTPReport{Answers: []string{}, Transcript: []wire.ChatMessage{}}
	var pending []string // tool-call ids of the last answer still waiting for results
	step := func(line scenario.Line) error {
		stream := c.Stream != nil && c.Stream(rep.Steps+1)
		answer, usage, err := c.post(ctx, rep.Transcript, stream)
		if err != nil {
			return fmt.Errorf("line %d: %w", line.Number, err)
		}
		rep.Steps++
		if stream {
			rep.Streamed++
		}
		addUsage(&rep.Usage, usage)
		rep.Transcript = append(rep.Transcript, answer)
		pending = pending[:0]
		for _, tc := range answer.ToolCalls {
			pending = append(pending, tc.ID)
		}
		if line.Role == hippocam.RoleUser && asks(line.Content) {
			text, _ := answer.Text() // post checked that the content is readable
			rep.Answers = append(rep.Answers, text)
		}
		return nil
	}
	for _, line := range lines {
		m := wire.ChatMessage{Role: string(line.Role), Content: wire.StringContent(line.Content)}
		switch line.Role {
		case hippocam.RoleTool:
			if len(pending) == 0 {
				return nil, hippocam.Errorf(hippocam.EINVALID, "line %d: a tool result, but the last answer has no tool call waiting for one", line.Number)
			}
			m.ToolCallID = pending[0]
			pending = pending[1:]
			rep.Transcript = append(rep.Transcript, m)
			if len(pending) == 0 {
				if err := step(line); err != nil {
					return nil, err
				}
			}
		default:
			if len(pending) > 0 {
				return nil, hippocam.Errorf(hippocam.EINVALID, "line %d: a %s message, but %d tool call(s) of the last answer still wait for results", line.Number, line.Role, len(pending))
			}
			rep.Transcript = append(rep.Transcript, m)
			if err := step(line); err != nil {
				return nil, err
			}
		}
	}
	return rep, nil
}

// post sends history as one chat completion and returns the answer as the client keeps it: role
// assistant, content (null when the answer only calls tools) and tool calls.
func (c *HTTPConfig) post(ctx context.Context, history []wire.ChatMessage, stream bool) (wire.ChatMessage, *wire.Usage, error) {
	body := wire.ChatRequest{Model: c.Model, Messages: history, Tools: c.Tools}
	if stream {
		body.Stream = true
		body.StreamOptions = &wire.StreamOptions{IncludeUsage: true}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return wire.ChatMessage{}, nil, hippocam.Errorf(hippocam.EINVALID, "encode request: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+"/chat/completions", bytes.NewReader(b))
	if err != nil {
		return wire.ChatMessage{}, nil, hippocam.Errorf(hippocam.EINVALID, "request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.Session != "" {
		req.Header.Set(sessionHeader, c.Session)
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return wire.ChatMessage{}, nil, unavailable(ctx, "endpoint unreachable", err)
	}
	defer resp.Body.Close()
	r := io.LimitReader(resp.Body, maxAnswerBytes)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(r)
		return wire.ChatMessage{}, nil, &HTTPStatusError{Status: resp.StatusCode, Body: errorBody(raw)}
	}
	var msg wire.ChatMessage
	var usage *wire.Usage
	if stream {
		msg, usage, err = readStream(r)
	} else {
		msg, usage, err = readCompletion(r)
	}
	if err != nil {
		return wire.ChatMessage{}, nil, unavailable(ctx, "unreadable answer", err)
	}
	if _, err := msg.Text(); err != nil {
		return wire.ChatMessage{}, nil, unavailable(ctx, "unreadable answer", err)
	}
	return msg, usage, nil
}

// readCompletion reads a non-streamed answer's first choice.
func readCompletion(r io.Reader) (wire.ChatMessage, *wire.Usage, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return wire.ChatMessage{}, nil, err
	}
	var cr wire.ChatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return wire.ChatMessage{}, nil, err
	}
	if len(cr.Choices) == 0 {
		return wire.ChatMessage{}, nil, errors.New("no choices")
	}
	m := cr.Choices[0].Message
	if m.Role != string(hippocam.RoleAssistant) {
		return wire.ChatMessage{}, nil, fmt.Errorf("the answer's role is %q, not assistant", m.Role)
	}
	kept := wire.ChatMessage{Role: m.Role, Content: m.Content}
	for _, tc := range m.ToolCalls {
		tc.Index = nil
		kept.ToolCalls = append(kept.ToolCalls, tc)
	}
	return kept, cr.Usage, nil
}

// streamEvent is one data event: a chunk, or an error sent in the middle of a stream.
type streamEvent struct {
	wire.ChatChunk
	Error *wire.ErrorBody `json:"error"`
}

// readStream reads server-sent events until "data: [DONE]" and assembles the first choice
// (wire.ChunkAssembler, every tool-call delta with its index), in the shape of a non-streamed
// answer, so that the history resent afterwards does not depend on how the answer arrived:
// content null when the answer only calls tools, tool calls in index order; usage from the
// chunk that carries it.
func readStream(r io.Reader) (wire.ChatMessage, *wire.Usage, error) {
	sr := sse.NewReader(r)
	asm := wire.ChunkAssembler{RequireIndex: true}
	for {
		ev, err := sr.Next()
		data := bytes.TrimSpace(ev.Data)
		switch {
		case len(data) == 0:
		case string(data) == "[DONE]":
			if asm.Finish() == "" {
				return wire.ChatMessage{}, nil, errors.New("the stream ended without a finish reason")
			}
			if role := asm.Role(); role != "" && role != string(hippocam.RoleAssistant) {
				return wire.ChatMessage{}, nil, fmt.Errorf("the answer's role is %q, not assistant", role)
			}
			return asm.Message(), asm.Usage(), nil
		default:
			var se streamEvent
			if jerr := json.Unmarshal(data, &se); jerr != nil {
				return wire.ChatMessage{}, nil, fmt.Errorf("event %s: %v", shortText(string(data)), jerr)
			}
			if se.Error != nil {
				return wire.ChatMessage{}, nil, fmt.Errorf("error event: %s", se.Error.Message)
			}
			if aerr := asm.Add(se.ChatChunk); aerr != nil {
				return wire.ChatMessage{}, nil, aerr
			}
		}
		if err == io.EOF {
			return wire.ChatMessage{}, nil, errors.New("the stream ended without data: [DONE]")
		} else if err != nil {
			return wire.ChatMessage{}, nil, fmt.Errorf("the stream broke off: %w", err)
		}
	}
}

// addUsage adds u to sum.
func addUsage(sum *wire.Usage, u *wire.Usage) {
	if u == nil {
		return
	}
	sum.PromptTokens += u.PromptTokens
	sum.CompletionTokens += u.CompletionTokens
	sum.TotalTokens += u.TotalTokens
	if u.PromptTokensDetails != nil {
		if sum.PromptTokensDetails == nil {
			sum.PromptTokensDetails = &wire.PromptTokensDetails{}
		}
		sum.PromptTokensDetails.CachedTokens += u.PromptTokensDetails.CachedTokens
	}
}

// errorBody reads an error answer: OpenAI's error JSON, else its text, shortened.
func errorBody(raw []byte) wire.ErrorResponse {
	var e wire.ErrorResponse
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		return e
	}
	return wire.ErrorResponse{Error: wire.ErrorBody{Message: shortText(string(bytes.TrimSpace(raw)))}}
}

// unavailable is the EUNAVAILABLE error for a failed exchange; when ctx has ended it says so
// and keeps ctx.Err() in the chain.
func unavailable(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", hippocam.Errorf(hippocam.EUNAVAILABLE, "request cancelled"), ctx.Err())
	}
	return fmt.Errorf("%w: %w", hippocam.Errorf(hippocam.EUNAVAILABLE, "%s", what), err)
}

// shortText cuts s to a length fit for an error message, on a rune boundary.
func shortText(s string) string {
	n := 200
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
