package httpapi

import (
	"fmt"
	"net/http"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/sessions"
)

// The Anthropic Messages transport: POST /v1/messages, read into a conversation (the system
// prompt is its framing; tool_use and tool_result blocks become tool calls and results),
// continued by the session service, answered as a message or its event stream. Errors have
// Anthropic's error JSON; x-api-key is accepted as the tenant key.

// messagesFormat is the Messages format for the shared code: its routes (this file and
// endpoints.go), refusals in Anthropic's error JSON with its statuses, types and wording, the
// x-api-key header of its clients, and the thinking blocks and tool errors of a history.
type messagesFormat struct{ formatDefaults }

func (messagesFormat) id() hippocam.Format { return hippocam.FormatAnthropic }

func (messagesFormat) prefixes() []string { return []string{"/v1/messages"} }

func (messagesFormat) routes() []route {
	return []route{
		{"POST /v1/messages", "messages", (*Server).messages},
		{"POST /v1/messages/count_tokens", "count_tokens", (*Server).countMessageTokens}, // endpoints.go
	}
}

// tell gives a refusal Anthropic's error type for its status and no code; an overloaded
// upstream is Anthropic's 529 ("Overloaded" when the upstream said so by its status), a
// timeout its timeout_error.
func (messagesFormat) tell(r refusal) refusal {
	if r.status == http.StatusServiceUnavailable && r.code == "server_is_overloaded" {
		r.status = 529
		if r.overloadStatus {
			r.message = "Overloaded"
		}
	}
	r.typ, r.code = anthropic.StatusType(r.status), ""
	if r.status == http.StatusGatewayTimeout {
		r.typ = "timeout_error"
	}
	return r
}

// tooLong is Anthropic's "prompt is too long: N tokens > M maximum", on which Claude Code
// compacts.
func (messagesFormat) tooLong(needed, window int, detail string) (message, param string) {
	if needed > 0 && window > 0 {
		return fmt.Sprintf("prompt is too long: %d tokens > %d maximum", needed, window), ""
	}
	return "prompt is too long: " + detail, ""
}

func (messagesFormat) writeRefusal(w http.ResponseWriter, r refusal) {
	anthropic.WriteError(w, r.status, r.typ, r.message)
}

func (messagesFormat) keyHeader() string { return "X-Api-Key" }

// sentBy recognizes Anthropic's clients by the anthropic-version header they send.
func (messagesFormat) sentBy(r *http.Request) bool { return r.Header.Get("Anthropic-Version") != "" }

func (messagesFormat) unnamedParts() []string {
	return []string{anthropic.PartThinking, anthropic.PartRedactedThinking, anthropic.PartToolError}
}

// messages is POST /v1/messages.
func (s *Server) messages(w http.ResponseWriter, r *http.Request, tenant string) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, hippocam.FormatAnthropic, err)
		return
	}
	conv, err := anthropic.ReadRequest(body)
	if err != nil {
		s.fail(w, r, hippocam.FormatAnthropic, err)
		return
	}
	conv.Betas = anthropic.Betas(r.Header)
	name, named := headerName(r)
	if named {
		if err := sessions.CheckName(name); err != nil {
			s.fail(w, r, hippocam.FormatAnthropic, err)
			return
		}
	}
	if conv.Stream {
		s.stream(w, r, tenant, name, conv, hippocam.FormatAnthropic, &messagesStream{w: w, model: conv.Model})
		return
	}
	res, err := s.continueSession(w, r, tenant, name, conv, nil)
	if err != nil {
		s.fail(w, r, hippocam.FormatAnthropic, err)
		return
	}
	anthropic.WriteResponse(w, conv.Model, messageID(res.Session.ID, res.Answer.ID), &res.Answer, res.Step.FinishReasonOr(""), messageUsage(res))
}

// messageID names a message: the session and the answer's key.
func messageID(session, answer string) string {
	return "msg_" + sessions.ResponseID(session, answer)[len("resp_"):]
}

// messageUsage is what the main model consumed for the answer.
func messageUsage(res *sessions.Result) hippocam.CallUsage {
	return hippocam.CallUsage{Input: int(res.Usage.Input), CachedInput: int(res.Usage.CachedInput), Output: int(res.Usage.Output)}
}

// messagesStream writes an answer as Anthropic's event stream: message_start and ping, a text
// block opened with the first piece, text_delta events as the text comes, then the committed
// answer's other parts and tool_use blocks, message_delta with the stop reason and the usage,
// message_stop. A step that fails after the stream began ends it with an error event.
//
// The answer's non-text parts (thinking blocks of an Anthropic upstream) are not streamed: when
// the text was, they follow it.
type messagesStream struct {
	w     http.ResponseWriter
	model string
	sw    *anthropic.StreamWriter
}

// open writes message_start with the input tokens the engine counted for the call whose text
// follows: the provider's count is known only once the answer is, and message_delta reports it.
func (m *messagesStream) open(id streamID) error {
	m.sw = anthropic.NewStreamWriter(m.w, m.model, messageID(id.session, id.answer))
	return m.sw.Start(hippocam.CallUsage{Input: id.inputTokens})
}

func (m *messagesStream) text(piece string) error { return m.sw.Text(piece) }

func (m *messagesStream) finish(res *sessions.Result) error {
	for _, p := range res.Answer.Parts {
		if err := m.sw.Part(p); err != nil {
			return err
		}
	}
	return m.rest(res)
}

// rest writes the tool calls and the end of the answer.
func (m *messagesStream) rest(res *sessions.Result) error {
	for _, c := range res.Answer.ToolCalls {
		if err := m.sw.ToolCall(c); err != nil {
			return err
		}
	}
	return m.sw.Finish(anthropic.StopReason(res.Step.FinishReasonOr(""), &res.Answer), messageUsage(res))
}

func (m *messagesStream) whole(id streamID, res *sessions.Result) error {
	m.sw = anthropic.NewStreamWriter(m.w, m.model, messageID(id.session, id.answer))
	if err := m.sw.Start(messageUsage(res)); err != nil {
		return err
	}
	for _, p := range res.Answer.Parts {
		if err := m.sw.Part(p); err != nil {
			return err
		}
	}
	if err := m.sw.Text(res.Answer.Content); err != nil {
		return err
	}
	return m.rest(res)
}

func (m *messagesStream) fail(err error) error {
	r := refuse(hippocam.FormatAnthropic, err)
	return m.sw.Fail(r.typ, r.message)
}
