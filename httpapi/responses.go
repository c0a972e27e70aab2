package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sessions"
)

// The OpenAI Responses transport: POST /v1/responses, read into a conversation, continued by the
// session service, answered as a response object or its event stream.
//
// Response ids name the session and the answer ("resp_" + base64url(session) + "." + answer id),
// so a request that sends only its new items with previous_response_id, or refers to earlier
// output with item_reference, is resolved through the session (within the tenant): its
// conversation is the session's transcript up to that answer, then the new items. "store":
// false is accepted; the session is kept all the same, since keeping it is Hippocam's job.

// responses is POST /v1/responses.
func (s *Server) responses(w http.ResponseWriter, r *http.Request, tenant string) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, hippocam.FormatResponses, err)
		return
	}
	if body, err = s.resolveItemReferences(r.Context(), tenant, body); err != nil {
		s.fail(w, r, hippocam.FormatResponses, err)
		return
	}
	conv, err := wire.ReadResponsesRequest(body)
	if err != nil {
		s.fail(w, r, hippocam.FormatResponses, err)
		return
	}
	name, named := headerName(r)
	if named {
		if err := sessions.CheckName(name); err != nil {
			s.fail(w, r, hippocam.FormatResponses, err)
			return
		}
	}
	if conv.Previous != "" {
		prevSession, err := s.previousConversation(r.Context(), tenant, conv)
		if err != nil {
			s.fail(w, r, hippocam.FormatResponses, err)
			return
		}
		if !named {
			name = prevSession
		}
	}
	conv.Extra = chatFieldsOfResponses(conv)
	res, err := s.continueSession(w, r, tenant, name, conv)
	if err != nil {
		s.fail(w, r, hippocam.FormatResponses, err)
		return
	}
	resp := wire.NewResponse(responseID(res.Session.ID, res.Answer.ID), conv.Model, res.Session.UpdatedAt.Unix(), &res.Answer,
		hippocam.CallUsage{Input: int(res.Usage.Input), CachedInput: int(res.Usage.CachedInput), Output: int(res.Usage.Output)}, conv.Previous)
	resp.EchoRequest(conv)
	if conv.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		wire.WriteResponseStream(flushWriter{w}, &resp)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// flushWriter flushes after every write, so that stream events leave at once.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// responseID names an answer of a session.
func responseID(session, answer string) string {
	return "resp_" + base64.RawURLEncoding.EncodeToString([]byte(session)) + "." + answer
}

// parseResponseID reads a responseID (or the part of an item id after its prefix).
func parseResponseID(id string) (session, answer string, ok bool) {
	rest, found := strings.CutPrefix(id, "resp_")
	if !found {
		return "", "", false
	}
	enc, answer, found := strings.Cut(rest, ".")
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if !found || err != nil || answer == "" {
		return "", "", false
	}
	return string(b), answer, true
}

// previousConversation prefixes conv's messages with the transcript of the session that the
// response conv.Previous belongs to, up to that response's answer, and returns that session's
// id. ENOTFOUND when the tenant has no such response.
func (s *Server) previousConversation(ctx context.Context, tenant string, conv *hippocam.Conversation) (string, error) {
	session, answer, ok := parseResponseID(conv.Previous)
	if !ok {
		return "", hippocam.Errorf(hippocam.ENOTFOUND, "previous_response_id %q names no response of Hippocam's", conv.Previous)
	}
	before, err := s.transcriptUpTo(ctx, tenant, session, answer)
	if err != nil {
		return "", hippocam.Errorf(hippocam.ENOTFOUND, "previous_response_id %q: no such response", conv.Previous)
	}
	conv.Messages = append(before, conv.Messages...)
	return session, nil
}

// transcriptUpTo returns a session's transcript up to and including the answer with the given
// id. ENOTFOUND when the session or the answer is not there.
func (s *Server) transcriptUpTo(ctx context.Context, tenant, session, answer string) ([]hippocam.Message, error) {
	sess, err := s.cfg.Store.Session(ctx, tenant, session)
	if err != nil {
		return nil, err
	}
	msgs, err := sessions.Transcript(ctx, hippocam.SessionArchive(s.cfg.Store, tenant, session), sess.Context)
	if err != nil {
		return nil, err
	}
	for i := range msgs {
		if msgs[i].ID == answer && msgs[i].Role == hippocam.RoleAssistant {
			return msgs[:i+1], nil
		}
	}
	return nil, hippocam.Errorf(hippocam.ENOTFOUND, "no answer %q in session %q", answer, session)
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

// outputItem rebuilds the output item with the given id from the answer it belongs to.
func (s *Server) outputItem(ctx context.Context, tenant, id string) (json.RawMessage, error) {
	notFound := hippocam.Errorf(hippocam.ENOTFOUND, "item_reference %q names no item of Hippocam's", id)
	var rest string
	var call = -1
	switch {
	case strings.HasPrefix(id, "msg_"):
		rest = strings.TrimPrefix(id, "msg_")
	case strings.HasPrefix(id, "fc_"):
		rest = strings.TrimPrefix(id, "fc_")
		i := strings.LastIndexByte(rest, '_')
		if i < 0 {
			return nil, notFound
		}
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil {
			return nil, notFound
		}
		rest, call = rest[:i], n
	default:
		return nil, notFound
	}
	session, answer, ok := parseResponseID("resp_" + rest)
	if !ok {
		return nil, notFound
	}
	m, err := s.cfg.Store.Message(ctx, tenant, session, answer)
	if err != nil {
		return nil, notFound
	}
	resp := wire.NewResponse("resp_"+rest, "", 0, m, hippocam.CallUsage{}, "")
	for _, it := range resp.Output {
		if (call < 0 && it.Type == "message") || (call >= 0 && it.ID == id) {
			return json.Marshal(it)
		}
	}
	return nil, notFound
}

// chatFieldsOfResponses turns a Responses request's pass-through fields into what the
// chat-completions upstream understands: max_output_tokens as max_tokens, text.format as
// response_format, reasoning.effort as reasoning_effort; the fields only the Responses API has
// (include, truncation, store, background…) are dropped, the others kept.
func chatFieldsOfResponses(conv *hippocam.Conversation) json.RawMessage {
	var extra map[string]json.RawMessage
	if len(conv.Extra) > 0 && json.Unmarshal(conv.Extra, &extra) != nil {
		return conv.Extra
	}
	if extra == nil {
		extra = map[string]json.RawMessage{}
	}
	if raw, ok := extra["text"]; ok {
		var text struct {
			Format map[string]json.RawMessage `json:"format"`
		}
		if json.Unmarshal(raw, &text) == nil && text.Format != nil {
			var typ string
			json.Unmarshal(text.Format["type"], &typ)
			if typ == "json_schema" {
				schema := map[string]json.RawMessage{}
				for k, v := range text.Format {
					if k != "type" {
						schema[k] = v
					}
				}
				b, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": schema})
				extra["response_format"] = b
			} else if typ == "json_object" {
				extra["response_format"] = json.RawMessage(`{"type":"json_object"}`)
			}
		}
	}
	if raw, ok := extra["reasoning"]; ok {
		var r struct {
			Effort *string `json:"effort"`
		}
		if json.Unmarshal(raw, &r) == nil && r.Effort != nil {
			extra["reasoning_effort"], _ = json.Marshal(*r.Effort)
		}
	}
	for _, k := range []string{"text", "reasoning", "include", "truncation", "store", "background", "previous_response_id", "conversation", "prompt", "max_tool_calls", "stream_options"} {
		delete(extra, k)
	}
	if conv.MaxTokens > 0 {
		extra["max_tokens"] = json.RawMessage(strconv.Itoa(conv.MaxTokens))
	}
	if len(extra) == 0 {
		return nil
	}
	b, _ := json.Marshal(extra)
	return b
}
