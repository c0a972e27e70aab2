package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sse"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sessions"
)

// The OpenAI Responses transport: POST /v1/responses, read into a conversation, continued by the
// session service, answered as a response object or its event stream.
//
// Response ids name the session and the answer ("resp_" + base64url(session) + "." + answer id),
// so a request that sends only its new items with previous_response_id, or refers to earlier
// output with item_reference, is resolved through the session (within the tenant): its
// conversation is the session's transcript up to that answer, then the new items. The rule is
// the session service's (sessions/responses.go); this file reads and writes the wire format. "store":
// false is accepted; the session is kept all the same, since keeping it is Hippocam's job.

// responses is POST /v1/responses.
func (s *Server) responses(w http.ResponseWriter, r *http.Request, tenant string) {
	conv, name, err := s.readResponses(w, r, tenant, false)
	if err != nil {
		s.fail(w, r, hippocam.FormatResponses, err)
		return
	}
	if conv.Stream {
		s.stream(w, r, tenant, name, conv, hippocam.FormatResponses, &responsesStream{w: w, conv: conv})
		return
	}
	res, err := s.continueSession(w, r, tenant, name, conv, nil)
	if err != nil {
		s.fail(w, r, hippocam.FormatResponses, err)
		return
	}
	resp := responseOf(conv, sessions.ResponseID(res.Session.ID, res.Answer.ID), res.Session.UpdatedAt.Unix(), res)
	writeJSON(w, http.StatusOK, resp)
}

// responsesFormat is the Responses format for the shared code: its routes (this file,
// endpoints.go, compact.go), refusals in OpenAI's error JSON with the Responses wording of a
// context too long, which a stream tells in its response.failed event (Codex compacts on that,
// not on a 400); a history's reasoning items are the model's.
type responsesFormat struct {
	formatDefaults
	openAIErrors
}

func (responsesFormat) id() hippocam.Format { return hippocam.FormatResponses }

func (responsesFormat) prefixes() []string { return []string{"/v1/responses"} }

func (responsesFormat) routes() []route {
	return []route{
		{"POST /v1/responses", "responses", (*Server).responses},
		{"POST /v1/responses/input_tokens", "input_tokens", (*Server).countInputTokens}, // endpoints.go
		{"POST /v1/responses/compact", "compact", (*Server).compact},                    // compact.go
		{"GET /v1/responses/{id}", "response", (*Server).getResponse},                   // endpoints.go
	}
}

func (responsesFormat) tooLong(needed, window int, detail string) (message, param string) {
	return "Your input exceeds the context window of this model. Please adjust your input and try again.", "input"
}

func (responsesFormat) refusesInStream(r refusal) bool { return r.cause == causeCapacity }

func (responsesFormat) unnamedParts() []string { return []string{wire.PartReasoning} }

// responseOf is the response object for res (nil: the response as it starts, before any
// output), with the fields that echo the request.
func responseOf(conv *hippocam.Conversation, id string, created int64, res *sessions.Result) wire.Response {
	var answer *hippocam.Message
	var u hippocam.CallUsage
	if res != nil {
		answer = &res.Answer
		u = hippocam.CallUsage{Input: int(res.Usage.Input), CachedInput: int(res.Usage.CachedInput), Output: int(res.Usage.Output)}
	}
	resp := wire.NewResponse(id, conv.Model, created, answer, u, conv.Previous)
	resp.EchoRequest(conv)
	return resp
}

// responsesStream writes an answer as the Responses event stream: response.created and
// response.in_progress, the message item and its output_text part opened before the first
// delta, the text as it comes, each function call whole, then response.completed with the
// committed answer. A step that fails after the stream began ends it with an error event.
type responsesStream struct {
	w    http.ResponseWriter
	conv *hippocam.Conversation
	rs   *wire.ResponseStream
	id   string
	at   int64
}

func (s *responsesStream) open(id streamID) error {
	s.id, s.at = sessions.ResponseID(id.session, id.answer), id.created
	sse.Header(s.w)
	s.rs = wire.NewResponseStream(s.w) // it flushes every event
	start := responseOf(s.conv, s.id, s.at, nil)
	return s.rs.Start(&start)
}

func (s *responsesStream) text(piece string) error { return s.rs.Text(piece) }

func (s *responsesStream) finish(res *sessions.Result) error {
	for _, c := range res.Answer.ToolCalls {
		if err := s.rs.ToolCall(c); err != nil {
			return err
		}
	}
	final := responseOf(s.conv, s.id, s.at, res)
	return s.rs.Finish(&final)
}

func (s *responsesStream) whole(id streamID, res *sessions.Result) error {
	if err := s.open(id); err != nil {
		return err
	}
	if err := s.rs.Text(res.Answer.Content); err != nil {
		return err
	}
	return s.finish(res)
}

func (s *responsesStream) fail(err error) error {
	r := refuse(hippocam.FormatResponses, err)
	code := r.code
	if code == "" {
		code = r.typ
	}
	start := responseOf(s.conv, s.id, s.at, nil)
	return s.rs.Fail(&start, code, r.message)
}

// previousConversation prefixes conv's messages with the transcript of the session that the
// response conv.Previous belongs to, up to that response's answer (the session service's
// rule: sessions.Service.PreviousResponse), and returns that session's id. ENOTFOUND when the
// tenant has no such response.
func (s *Server) previousConversation(ctx context.Context, tenant string, conv *hippocam.Conversation) (string, error) {
	session, before, err := s.cfg.Sessions.PreviousResponse(ctx, tenant, conv.Previous)
	if err != nil {
		return "", err
	}
	conv.Messages = append(before, conv.Messages...)
	return session, nil
}

// resolveItemReferences replaces the input items of the form {"type":"item_reference","id":…}
// that name output of Hippocam's (msg_… and fc_…_N of a response id) by the items themselves,
// rebuilt from the stored answer. Other bodies pass unchanged; ENOTFOUND for a reference to
// nothing the tenant has.
func (s *Server) resolveItemReferences(ctx context.Context, tenant string, body []byte) ([]byte, error) {
	if !bytes.Contains(body, []byte("item_reference")) {
		return body, nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body, nil // the reader reports it
	}
	var items []json.RawMessage
	if json.Unmarshal(top["input"], &items) != nil {
		return body, nil
	}
	changed := false
	for i, raw := range items {
		var ref struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if json.Unmarshal(raw, &ref) != nil || ref.Type != "item_reference" {
			continue
		}
		item, err := s.outputItem(ctx, tenant, ref.ID)
		if err != nil {
			return nil, err
		}
		items[i], changed = item, true
	}
	if !changed {
		return body, nil
	}
	top["input"], _ = json.Marshal(items)
	return json.Marshal(top)
}

// outputItem rebuilds the output item with the given id from the answer it belongs to
// (sessions.Service.ReferencedItem).
func (s *Server) outputItem(ctx context.Context, tenant, id string) (json.RawMessage, error) {
	resp, m, call, err := s.cfg.Sessions.ReferencedItem(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	r := wire.NewResponse(resp, "", 0, m, hippocam.CallUsage{}, "")
	for _, it := range r.Output {
		if (call < 0 && it.Type == "message") || (call >= 0 && it.ID == id) {
			return json.Marshal(it)
		}
	}
	return nil, hippocam.Errorf(hippocam.ENOTFOUND, "item_reference %q names no item of Hippocam's", id)
}
