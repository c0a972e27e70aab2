package sim

import (
	"io"
	"net/http"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
)

// serveMessages is POST …/messages: Anthropic's Messages API, streamed or not. The request is
// read with anthropic.ReadRequest and answered by Answer like any other format, so the same
// content gets the same answer as through chat completions. The answer's id ("msg_…") and its
// tool-call ids derive from the role and the body without its "stream" member. Errors have
// Anthropic's error body: 400 invalid_request_error for a body ReadRequest refuses or an
// unknown role, 404 not_found_error, 500 api_error for anything else.
func (m *Model) serveMessages(w http.ResponseWriter, r *http.Request) {
	role, err := callRole(strings.TrimSpace(r.Header.Get(hippocam.RoleHeader)))
	if err != nil {
		writeAnthropicFailure(w, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		anthropic.WriteError(w, http.StatusBadRequest, anthropic.ErrorInvalidRequest, "cannot read the request body: "+err.Error())
		return
	}
	conv, err := anthropic.ReadRequest(body)
	if err != nil {
		writeAnthropicFailure(w, err)
		return
	}
	msgs := make([]hippocam.Message, 0, len(conv.Framing)+len(conv.Messages))
	msgs = append(append(msgs, conv.Framing...), conv.Messages...)
	rep, err := m.Answer(role, msgs, conv.Tools, conv.ToolChoice == "none", Digest(role, withoutStream(body)))
	if err != nil {
		writeAnthropicFailure(w, err)
		return
	}
	model := conv.Model
	if model == "" {
		model = ModelID
	}
	id := "msg_" + rep.Digest[:24]
	if conv.Stream {
		anthropic.WriteStream(w, model, id, &rep.Message, rep.FinishReason, rep.Usage)
		return
	}
	anthropic.WriteResponse(w, model, id, &rep.Message, rep.FinishReason, rep.Usage)
}

// writeAnthropicFailure maps an error to its HTTP status and Anthropic's error body. Internal
// details are not shown.
func writeAnthropicFailure(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch hippocam.ErrorCode(err) {
	case hippocam.EINVALID:
		status = http.StatusBadRequest
	case hippocam.ENOTFOUND:
		status = http.StatusNotFound
	}
	anthropic.WriteError(w, status, anthropic.StatusType(status), hippocam.ErrorMessage(err))
}
