package httpapi

import (
	"net/http"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/sessions"
)

// The Anthropic Messages transport: POST /v1/messages, read into a conversation (the system
// prompt is its framing; tool_use and tool_result blocks become tool calls and results),
// continued by the session service, answered as a message or its event stream. Errors have
// Anthropic's error JSON; x-api-key is accepted as the tenant key.

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
	name, named := headerName(r)
	if named {
		if err := sessions.CheckName(name); err != nil {
			s.fail(w, r, hippocam.FormatAnthropic, err)
			return
		}
	}
	res, err := s.continueSession(w, r, tenant, name, conv)
	if err != nil {
		s.fail(w, r, hippocam.FormatAnthropic, err)
		return
	}
	finish := res.Step.FinishReasonOr("")
	id := "msg_" + responseID(res.Session.ID, res.Answer.ID)[len("resp_"):]
	u := hippocam.CallUsage{Input: int(res.Usage.Input), CachedInput: int(res.Usage.CachedInput), Output: int(res.Usage.Output)}
	if conv.Stream {
		anthropic.WriteStream(w, conv.Model, id, &res.Answer, finish, u)
		return
	}
	anthropic.WriteResponse(w, conv.Model, id, &res.Answer, finish, u)
}

// writeAnthropicError writes err as Anthropic's error JSON, with the status the OpenAI formats
// would get.
func writeAnthropicError(w http.ResponseWriter, err error) {
	status, _, _, msg := errorStatus(w, err)
	anthropic.WriteError(w, status, anthropic.StatusType(status), msg)
}
