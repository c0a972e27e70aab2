package sim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

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
	start := time.Now()
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
	read := body
	if role != hippocam.CallAgent {
		read = splitTurns(body)
	}
	conv, err := anthropic.ReadRequest(read)
	if err != nil {
		writeAnthropicFailure(w, err)
		return
	}
	msgs := make([]hippocam.Message, 0, len(conv.Framing)+len(conv.Messages))
	msgs = append(append(msgs, conv.Framing...), conv.Messages...)
	rep, err := m.AnswerShaped(role, msgs, conv.Tools, conversationShape(conv.ToolChoice), Digest(role, withoutStream(body)), 0)
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
		m.writeMessagesStream(r.Context(), start, w, model, id, rep)
		return
	}
	if m.whole(r.Context(), start, rep.Usage.Output) != nil {
		return // the client has gone
	}
	anthropic.WriteResponse(w, model, id, &rep.Message, rep.FinishReason, rep.Usage)
}

// writeMessagesStream sends the reply as Anthropic's event stream, paced like a chat stream:
// message_start waits for the time to first byte, each piece of text and each whole tool_use
// block for its tokens to be produced; when ctx ends the stream stops where it is.
func (m *Model) writeMessagesStream(ctx context.Context, start time.Time, w http.ResponseWriter, model, id string, rep *Reply) {
	answer := &rep.Message
	textPieces := pieces(answer.Content)
	p := m.pace(ctx, start, rep.Usage.Output, weigh(m.tok, textPieces, answer.ToolCalls))
	if p.firstByte() != nil {
		return
	}
	// A write error means the client went away, which is not the simulation's failure.
	s := anthropic.NewStreamWriter(w, model, id)
	if s.Start(rep.Usage) != nil {
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
	_ = s.Finish(anthropic.StopReason(rep.FinishReason, answer), rep.Usage)
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

// splitTurns undoes, for a component's request, what the Messages format does to consecutive
// messages of one role: the client sends them as one turn, one text block each, so the engine's
// instruction, which is a message of its own (engine/contract.go), and the messages its span
// lines quote would be read as one message with the text of all. Each user turn of body with
// more than one text block becomes one turn per text block (its tool results first, as they
// were, and any other block with the text before it), which reads as the messages the engine
// sent. A body that is not a JSON object with messages is returned as it is.
func splitTurns(body []byte) []byte {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	var turns []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(req["messages"], &turns) != nil {
		return body
	}
	type turn struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}
	var out []any
	changed := false
	for _, t := range turns {
		var blocks []json.RawMessage
		if t.Role != "user" || json.Unmarshal(t.Content, &blocks) != nil {
			out = append(out, json.RawMessage(mustMarshal(t)))
			continue
		}
		var results []json.RawMessage
		var groups [][]json.RawMessage
		for _, b := range blocks {
			var head struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(b, &head)
			switch {
			case head.Type == "tool_result":
				results = append(results, b)
			case head.Type == "text" || len(groups) == 0:
				groups = append(groups, []json.RawMessage{b})
			default:
				groups[len(groups)-1] = append(groups[len(groups)-1], b)
			}
		}
		if len(groups) < 2 {
			out = append(out, json.RawMessage(mustMarshal(t)))
			continue
		}
		changed = true
		groups[0] = append(results, groups[0]...)
		for _, g := range groups {
			out = append(out, turn{Role: "user", Content: g})
		}
	}
	if !changed {
		return body
	}
	req["messages"] = mustMarshal(out)
	return mustMarshal(req)
}

// mustMarshal encodes v, which holds only values that encode.
func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
