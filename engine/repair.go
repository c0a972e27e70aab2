package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
)

// errGaveUp marks a component whose answers kept breaking its contract.
type errGaveUp struct {
	role hippocam.CallRole
	last string
}

func (e *errGaveUp) Error() string {
	return fmt.Sprintf("%s: output broke the contract after every correction: %s", e.role, e.last)
}

// contractCall asks a component for one structured answer. msgs is what the request shows before
// its final message: for PRECIP and PALIM the main model's own prefix (requestPrefix: its system
// message, the context up to the end of the span), for JANUS a view of its own (janusView), which
// has no system message. It offers no tools of its own: the answer must be one JSON object. JANUS
// is asked for it natively (hippocam.Structured: response_format or a forced call of the
// contract's tool) unless the configuration says prose (Config.Structured); PRECIP and PALIM, whose
// requests share the main request's prefix, are asked in prose unless it says native
// (contractRequest); in prose the schema is described in the request. accept decodes and
// validates the answer. An upstream that refuses the native request
// (hippocam.StructuredRefusal) is asked the same again in prose, in auto mode. When accept fails,
// the call is repeated with the instruction extended by the validation error and the rejected
// answer, at most Corrections times; after that, errGaveUp. Errors of the model itself are
// returned as they are, and a request that would not fit the window is not sent. lo is where the
// span a PALIM or PRECIP call consolidates begins in the context (it ends at end), stack the
// intents JANUS judges or PRECIP closes the innermost of: with them every attempt's context
// carries its case (hippocam.CallNote), and the problems found with its answer, for an observer
// of the calls.
func (st *step) contractCall(ctx context.Context, role hippocam.CallRole, rolePrompt string, msgs []hippocam.Message, lo, end int, stack hippocam.IntentStack, instruction string, tool hippocam.Tool, accept func(args string) error) error {
	mode := st.e.cfg.Structured
	native := mode.Native()
	var tools []hippocam.Tool
	if len(msgs) > 0 && msgs[0].Role == hippocam.RoleSystem && mode != hippocam.StructuredNative {
		// A PRECIP or PALIM request is the main request's prefix (tools, Hippocam's system
		// message, the context up to the end of the span) plus one final message, so the
		// provider's cache serves all of it but that message from the main call it follows. A
		// native request would put its schema (OpenAI) or a tool of its own (Anthropic) in
		// front and pay for the whole context again (+55-63% cost measured on bench context
		// at W = 32,000): auto asks in prose, with the agent's tools kept in front and
		// tool_choice "none".
		native, tools = false, st.agentTools(true)
	}
	text := instruction
	var problem string
	w := st.e.cfg.Window
	// send builds the request for this attempt (natively or in prose), checks that it fits the
	// window with room to answer, and sends it with a note carrying its case.
	send := func(attempt int) (*hippocam.Request, *hippocam.CallNote, *hippocam.Response, error) {
		req := contractRequest(role, rolePrompt, tool, msgs, text, native, st.e.cfg.SharedPrompts, tools)
		if n := hippocam.RequestTokens(st.e.tok, req.Messages, req.Tools); n+answerRoom(role, w) > w {
			return req, nil, nil, fmt.Errorf("%s: the request would need %d tokens and room to answer, more than the window of %d", role, n, w)
		}
		note := &hippocam.CallNote{Attempt: attempt + 1, Case: st.callCase(role, lo, end, stack, tool.Name)}
		resp, err := st.componentCall(hippocam.WithCallNote(ctx, note), req)
		return req, note, resp, err
	}
	for attempt := 0; attempt <= st.e.cfg.Corrections; attempt++ {
		req, note, resp, err := send(attempt)
		if note == nil {
			return err // the request does not fit: nothing was sent
		}
		if err != nil && native && mode.Fallback() && hippocam.IsStructuredRefusal(err) {
			// The upstream does not take the native form: ask the same in prose, now and for
			// the rest of this call (the client remembers the refusal for later ones).
			note.Done()
			st.e.log.Info("structured output refused, asking with the schema in prose", logTenant, st.s.Tenant, logSession, st.s.ID, "role", role, "error", err)
			native = false
			if req, note, resp, err = send(attempt); note == nil {
				return err
			}
		}
		if err != nil {
			note.Done()
			return err
		}
		args, found := contractAnswer(resp, tool.Name)
		if req.Structured != nil {
			args = hippocam.DropNulls(args) // what strict mode made nullable and the model left out
		}
		if !found {
			problem = "the answer holds no JSON object"
		} else if err := accept(args); err != nil {
			problem = err.Error()
		} else {
			note.Done()
			return nil
		}
		note.Refuse(problem)
		note.Done()
		answer := args
		if !found {
			answer = resp.Message.Content
		}
		st.e.log.Warn("component output rejected", logTenant, st.s.Tenant, logSession, st.s.ID, "role", role, "attempt", attempt+1, "problem", problem)
		text = instruction + "\n\nYour previous answer was rejected: " + clip(problem, 1000) +
			"\nIt was: " + clip(answer, 1000) +
			"\nAnswer again, correctly."
	}
	return &errGaveUp{role: role, last: problem}
}

// contractRequest is a component's request over prefix (the messages the caller shows: the main
// model's up to the end of its material, or a view of the role's own that has no system message)
// with instruction text, in one of three layouts:
//
//   - a view of the role's own (JANUS's): the role's prompt is its first system message, the
//     request's most stable part, so that the role's calls share it whatever follows;
//   - behind the main request's prefix, shared (from SharedPromptsFrom on): the role's prompt
//     rides in Hippocam's system message, and the final message holds the instruction only;
//   - behind the main request's prefix, not shared: the final message holds the role's prompt,
//     then the instruction. Everything before it is the main request's, which the provider has
//     cached, and the main model's window is not spent on prompts it never uses. (A system
//     message of the role's own right after Hippocam's would be cached only by the role's own
//     earlier calls, up to where their contexts part: measured on bench context at W = 16,000,
//     a PALIM call paid 3,300 uncached tokens on average that way against 1,800 in this layout,
//     a PRECIP call 2,000 against 1,400.) A native
//     request, which shares nothing with the main request anyway (its schema goes first), keeps
//     that system message of its own.
//
// It offers no tools of its own. native asks for the answer with hippocam.Structured (the
// contract's tool's name, description and schema, strict); then the schema is not repeated in
// prose. Otherwise the schema travels in prose beside the role's prompt. tools, when given (the
// main request's, for a request that shares its prefix), are offered with tool_choice "none" to
// a prose request, so that its front is the main request's.
func contractRequest(role hippocam.CallRole, rolePrompt string, tool hippocam.Tool, prefix []hippocam.Message, text string, native, shared bool, tools []hippocam.Tool) *hippocam.Request {
	msgs := prefix
	format := "\n\nAnswer as " + roleName(role) + ": one JSON object following its schema, nothing else."
	content := strings.TrimSpace(rolePrompt)
	if native {
		format = "\n\nAnswer as " + roleName(role) + ": one JSON object, nothing else."
	} else {
		content += "\n\nSchema of the answer: " + string(tool.Parameters)
	}
	own := hippocam.Message{Role: hippocam.RoleSystem, Content: content}
	head := "Request for " + roleName(role) + " (see its role in the system message).\n\n"
	switch {
	case len(prefix) == 0 || prefix[0].Role != hippocam.RoleSystem:
		msgs = append([]hippocam.Message{own}, prefix...)
	case shared:
	case native:
		msgs = make([]hippocam.Message, 0, len(prefix)+2)
		msgs = append(msgs, prefix[0], own)
		msgs = append(msgs, prefix[1:]...)
	default:
		head = "Request for " + roleName(role) + ", whose role follows.\n\n" + content + "\n\n"
	}
	req := &hippocam.Request{Role: role, Messages: append(msgs[:len(msgs):len(msgs)], hippocam.Message{Role: hippocam.RoleUser, Content: head + text + format})}
	if native {
		req.Structured = &hippocam.Structured{Name: tool.Name, Description: tool.Description, Schema: tool.Parameters, Strict: true}
	} else if len(tools) > 0 {
		req.Tools, req.ToolChoice = tools, "none"
	}
	return req
}

// contractAnswer is the JSON object of a component's answer: the arguments of a call of the
// contract's tool (how an Anthropic upstream answers a structured request), else the object in
// the text.
func contractAnswer(resp *hippocam.Response, tool string) (string, bool) {
	for _, c := range resp.Message.ToolCalls {
		if c.Name == tool {
			return c.Arguments, true
		}
	}
	return hippocam.JSONObject(resp.Message.Content)
}

// callCase returns the case of a component call for its note: the visible messages of the
// context up to end, the span's start among them.
func (st *step) callCase(role hippocam.CallRole, lo, end int, stack hippocam.IntentStack, tool string) func() *hippocam.CallCase {
	return func() *hippocam.CallCase {
		c := &hippocam.CallCase{Role: role, Stack: stack, Tool: tool, Lo: -1}
		for i, m := range st.s.Context[:end] {
			if m.Kind.Hidden() {
				continue
			}
			if i >= lo && c.Lo < 0 && role != hippocam.CallJanus {
				c.Lo = len(c.Messages)
			}
			c.Messages = append(c.Messages, m)
		}
		return c
	}
}

// componentRetries bounds the extra attempts at a component call whose answer arrived but could
// not be read, and componentRetryWait is the wait before the first of them (doubled for each
// later one).
const (
	componentRetries   = 2
	componentRetryWait = 50 * time.Millisecond
)

// componentCall sends one JANUS, PRECIP or PALIM request. The model client has already repeated
// what its transport may repeat (network errors, 408, 409, 429, 5xx); what it gives up on at
// once because the answer came but could not be read (a body cut off mid-JSON, an HTML page with
// status 200, a success without choices) is transient as well, and is asked again here, up to
// componentRetries times. A refusal by status (a 400, say, or a 5xx the client already retried)
// and network failures the client already retried are returned at once: the component's
// caller handles them (the stack or the span stays as it was).
func (st *step) componentCall(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	wait := componentRetryWait
	for n := 1; ; n++ {
		resp, err := st.call(ctx, req)
		if err == nil || ctx.Err() != nil || n > componentRetries || !unreadableAnswer(err) {
			return resp, err
		}
		st.e.log.Warn("component call failed, retrying", logTenant, st.s.Tenant, logSession, st.s.ID,
			"role", req.Role, "attempt", n, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait *= 2
	}
}

// unreadableAnswer reports whether err is a model failure worth repeating although the client
// did not: EUNAVAILABLE with neither an HTTP status (a refusal the client already judged) nor a
// network error (which the client already retried) in its chain.
func unreadableAnswer(err error) bool {
	if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE {
		return false
	}
	var status interface {
		UpstreamStatus() (int, time.Duration)
	}
	var netErr net.Error
	return !errors.As(err, &status) && !errors.As(err, &netErr) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// roleName is how the system message names a component role.
func roleName(role hippocam.CallRole) string { return strings.ToUpper(string(role)) }

// componentAnswerRoom is the room a PALIM request keeps for the answer: an eighth of the window,
// at most 4,096 tokens.
func componentAnswerRoom(window int) int { return min(window/8, 4096) }

// answerRoom is the room a component's request keeps for its answer: JANUS's is a few operations
// and a line of guidance (janusAnswerRoom); PRECIP's a memory of one span, a twelfth of the
// window at most 4,096; PALIM's componentAnswerRoom.
func answerRoom(role hippocam.CallRole, window int) int {
	switch role {
	case hippocam.CallJanus:
		return janusAnswerRoom(window)
	case hippocam.CallPrecip:
		return min(window/12, 4096)
	}
	return componentAnswerRoom(window)
}

// componentFrame is what a component request adds to the context it shares: the main model's
// frame, the role prompt, the answer format and an instruction of typical length.
func (st *step) componentFrame(prompt string, tool hippocam.Tool) int {
	const instructionRoom = 300
	if st.e.cfg.SharedPrompts {
		return st.agentFrame(true) + instructionRoom
	}
	return st.agentFrame(true) + st.e.tok.Count(prompt) + st.e.tok.Count(string(tool.Parameters)) + instructionRoom
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// decodeArgs reads a tool call's JSON arguments strictly: malformed or truncated JSON, or a
// value of the wrong shape, is a validation error quoted back to the model.
func decodeArgs(args string, v any) error {
	dec := json.NewDecoder(strings.NewReader(args))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments are not valid JSON for the schema: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("arguments hold more than one JSON value")
	}
	return nil
}
