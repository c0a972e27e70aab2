package sim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sse"
	"github.com/hippocam/hippocam/openai/wire"
)

// serveResponses is POST …/responses: OpenAI's Responses API with tools of every kind, as one JSON
// response object or, with "stream": true, as the Responses event stream. The request is read
// into the same domain messages as a chat request with the same content (instructions and
// leading system and developer messages first), so it gets the same answer and the same usage.
// The simulation keeps nothing between requests: previous_response_id and conversation are
// refused (400), and "store" is echoed but changes nothing. Errors have OpenAI's error body.
func (m *Model) serveResponses(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	role, err := callRole(strings.TrimSpace(r.Header.Get(hippocam.RoleHeader)))
	if err != nil {
		writeResponsesFailure(w, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		wire.WriteResponsesError(w, http.StatusBadRequest, "invalid_request_error", "", "cannot read the request body: "+err.Error())
		return
	}
	conv, err := wire.ReadResponsesRequest(body)
	if err != nil {
		writeResponsesFailure(w, err)
		return
	}
	if conv.Previous != "" || refersToConversation(conv.Extra) {
		wire.WriteResponsesError(w, http.StatusBadRequest, "invalid_request_error", "previous_response_not_found",
			"the simulated model keeps no responses; send the whole input")
		return
	}
	msgs := make([]hippocam.Message, 0, len(conv.Framing)+len(conv.Messages))
	msgs = append(append(msgs, conv.Framing...), conv.Messages...)
	rep, err := m.Answer(role, msgs, conv.Tools, conv.ToolChoice == "none", Digest(role, withoutStream(body)))
	if err != nil {
		writeResponsesFailure(w, err)
		return
	}
	model := conv.Model
	if model == "" {
		model = ModelID
	}
	resp := wire.NewResponse("resp_"+rep.Digest[:24], model, 0, &rep.Message, rep.Usage, "")
	resp.EchoRequest(conv)
	if !conv.Stream {
		if m.whole(r.Context(), start, rep.Usage.Output) != nil {
			return // the client has gone
		}
		writeJSON(w, http.StatusOK, resp)
		return
	}
	m.writeResponseStream(r.Context(), start, w, &resp, &rep.Message, rep.Usage.Output)
}

// writeResponseStream sends resp as the Responses event stream, paced like a chat stream: the
// first events wait for the time to first byte, each piece of text and each whole function call
// for its tokens to be produced (answer holds the text and calls resp was built from); when ctx
// ends the stream stops where it is.
func (m *Model) writeResponseStream(ctx context.Context, start time.Time, w http.ResponseWriter, resp *wire.Response, answer *hippocam.Message, outputTokens int) {
	textPieces := pieces(answer.Content)
	p := m.pace(ctx, start, outputTokens, weigh(m.tok, textPieces, answer.ToolCalls))
	if p.firstByte() != nil {
		return
	}
	sse.Header(w)
	// A write error means the client went away, which is not the simulation's failure.
	s := wire.NewResponseStream(w)
	if s.Start(resp) != nil {
		return
	}
	for _, piece := range textPieces {
		if p.text(piece) != nil || s.Text(piece) != nil {
			return
		}
	}
	for _, c := range answer.ToolCalls {
		if p.call(c.Name, c.Arguments) != nil || s.ToolCall(c) != nil {
			return
		}
	}
	_ = s.Finish(resp)
}

// withoutStream returns body without its "stream" and "stream_options" fields, in a canonical
// form, so that the digest of a streamed request equals that of the same request not streamed.
func withoutStream(body []byte) []byte {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return body
	}
	delete(fields, "stream")
	delete(fields, "stream_options")
	b, err := json.Marshal(fields)
	if err != nil {
		return body
	}
	return b
}

// refersToConversation reports whether the passed-on fields name a stored conversation, which
// the simulation cannot have.
func refersToConversation(extra json.RawMessage) bool {
	var fields map[string]json.RawMessage
	if len(extra) == 0 || json.Unmarshal(extra, &fields) != nil {
		return false
	}
	v, ok := fields["conversation"]
	return ok && string(v) != "null"
}

// writeResponsesFailure maps an error to its HTTP status and OpenAI error body, as writeFailure
// does for chat.
func writeResponsesFailure(w http.ResponseWriter, err error) {
	switch hippocam.ErrorCode(err) {
	case hippocam.EINVALID:
		wire.WriteResponsesError(w, http.StatusBadRequest, "invalid_request_error", "", hippocam.ErrorMessage(err))
	case hippocam.ENOTFOUND:
		wire.WriteResponsesError(w, http.StatusNotFound, "invalid_request_error", "", hippocam.ErrorMessage(err))
	default:
		wire.WriteResponsesError(w, http.StatusInternalServerError, "server_error", "", hippocam.ErrorMessage(err))
	}
}
