package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sessions"
)

// The endpoints around the three formats' main routes that Hippocam answers itself: token
// counts of what it would send upstream (Anthropic's POST /v1/messages/count_tokens, OpenAI's
// POST /v1/responses/input_tokens), a stored response (GET /v1/responses/{id}) and compaction
// (POST /v1/responses/compact, compact.go). None of them calls a model or changes a session.

// countMessageTokens is POST /v1/messages/count_tokens: {"input_tokens": N}, where N is what the
// request Hippocam would make upstream for this history holds (sessions.Service.Preview): its
// system message, the agent's system prompt, the session's managed context (memories where it
// was consolidated) and what is new, the agent's tools and Hippocam's.
func (s *Server) countMessageTokens(w http.ResponseWriter, r *http.Request, tenant string) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, hippocam.FormatAnthropic, err)
		return
	}
	body, empty := countBody(body)
	conv, err := anthropic.ReadRequest(body)
	if err != nil {
		s.fail(w, r, hippocam.FormatAnthropic, err)
		return
	}
	if empty {
		conv.Messages, conv.Hashes = nil, nil // the system prompt and the tools alone
	}
	conv.Betas = anthropic.Betas(r.Header) // as POST /v1/messages: they shape an Anthropic upstream's request
	pv, err := s.preview(r, tenant, "", conv)
	if err != nil {
		s.fail(w, r, hippocam.FormatAnthropic, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": pv.Tokens})
}

// countBody makes a count request readable as a Messages request: "max_tokens": 1 when it has
// none (a count needs none, the reader requires it), and a stand-in message when it has no
// messages (empty reports that). Another body is returned unchanged.
func countBody(body []byte) (_ []byte, empty bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top == nil {
		return body, false // the reader reports it
	}
	_, limited := top["max_tokens"]
	msgs, ok := top["messages"]
	empty = !ok || string(msgs) == "null" || string(bytes.TrimSpace(msgs)) == "[]"
	if limited && !empty {
		return body, false
	}
	if !limited {
		top["max_tokens"] = json.RawMessage("1")
	}
	if empty {
		top["messages"] = json.RawMessage(`[{"role":"user","content":"-"}]`)
	}
	b, err := json.Marshal(top)
	if err != nil {
		return body, false
	}
	return b, empty
}

// countInputTokens is POST /v1/responses/input_tokens: {"object": "response.input_tokens",
// "input_tokens": N}, counted as countMessageTokens counts, for a Responses request (with
// previous_response_id, item references and Hippocam's compaction items resolved).
func (s *Server) countInputTokens(w http.ResponseWriter, r *http.Request, tenant string) {
	conv, name, err := s.readResponses(w, r, tenant, true)
	if err != nil {
		s.fail(w, r, hippocam.FormatResponses, err)
		return
	}
	pv, err := s.preview(r, tenant, name, conv)
	if err != nil {
		s.fail(w, r, hippocam.FormatResponses, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "response.input_tokens", "input_tokens": pv.Tokens})
}

// readResponses reads a Responses request body into a conversation, as POST /v1/responses does:
// item references, compaction items and previous_response_id resolved through the tenant's
// sessions. name is the session the request names, or the one it refers to. With optional, the
// input may be left out (a count request's every field is optional): no message is read.
func (s *Server) readResponses(w http.ResponseWriter, r *http.Request, tenant string, optional bool) (*hippocam.Conversation, string, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, "", err
	}
	if optional && len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if body, err = s.resolveItemReferences(r.Context(), tenant, body); err != nil {
		return nil, "", err
	}
	body, cmp, err := s.resolveCompaction(r.Context(), tenant, body)
	if err != nil {
		return nil, "", err
	}
	read := wire.ReadResponsesRequest
	if optional || cmp != nil { // the compaction item may have been the last item
		read = readResponsesBody
	}
	conv, err := read(body)
	if err != nil {
		return nil, "", err
	}
	name, named := headerName(r)
	if named {
		if err := sessions.CheckName(name); err != nil {
			return nil, "", err
		}
	}
	if conv.Previous != "" {
		prev, err := s.previousConversation(r.Context(), tenant, conv)
		if err != nil {
			return nil, "", err
		}
		if !named {
			name = prev
		}
	}
	if cmp != nil {
		if err := cmp.apply(conv, &name, named); err != nil {
			return nil, "", err
		}
	}
	return conv, name, nil
}

// readResponsesBody reads a Responses body; one without input (a count of the instructions and
// tools alone) reads as a conversation with no message.
func readResponsesBody(body []byte) (*hippocam.Conversation, error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top == nil {
		return wire.ReadResponsesRequest(body) // which reports it
	}
	if in, ok := top["input"]; ok && string(in) != "null" && string(in) != "[]" && string(in) != `""` {
		return wire.ReadResponsesRequest(body)
	}
	top["input"] = json.RawMessage(`"-"`)
	b, _ := json.Marshal(top)
	conv, err := wire.ReadResponsesRequest(b)
	if err != nil {
		return nil, err
	}
	conv.Messages, conv.Hashes = nil, nil
	return conv, nil
}

// preview asks the session service what a request would send upstream, without running it.
func (s *Server) preview(r *http.Request, tenant, name string, conv *hippocam.Conversation) (*sessions.Preview, error) {
	if name == "" {
		if n, named := headerName(r); named {
			if err := sessions.CheckName(n); err != nil {
				return nil, err
			}
			name = n
		}
	}
	n, _ := strconv.Atoi(r.Header.Get(retryCountHeader))
	req := &sessions.Request{Tenant: tenant, Name: name, Conversation: conv, Retry: n > 0, Key: r.Header.Get(idempotencyKeyHeader)}
	return s.cfg.Sessions.Preview(r.Context(), req)
}

// getResponse is GET /v1/responses/{id}: the stored answer a response id names, as a completed
// response object (the request's settings and the usage are not kept per answer: the defaults
// stand for them). 404 in OpenAI's error JSON for an id that names nothing of the tenant's.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request, tenant string) {
	id := r.PathValue("id")
	if id == "input_tokens" || id == "compact" {
		s.passThrough(w, r, tenant) // a wrong method for those routes
		return
	}
	sess, m, err := s.cfg.Sessions.Response(r.Context(), tenant, id)
	if err != nil {
		if hippocam.ErrorCode(err) == hippocam.ENOTFOUND {
			err = hippocam.Errorf(hippocam.ENOTFOUND, "Response with id '%s' not found.", id)
		}
		s.fail(w, r, hippocam.FormatResponses, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.NewResponse(id, "", sess.UpdatedAt.Unix(), m, hippocam.CallUsage{}, ""))
}
