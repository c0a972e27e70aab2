package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sessions"
)

// The OpenAI Chat Completions transport: POST /v1/chat/completions, read into a conversation,
// continued by the session service, answered in the chat format, streamed or not.

// chatCompletions is POST /v1/chat/completions.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, tenant string) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, hippocam.FormatChat, err)
		return
	}
	conv, req, err := wire.ReadChatRequest(body)
	if err != nil {
		s.fail(w, r, hippocam.FormatChat, err)
		return
	}
	name, err := sessionName(r, req.Extra)
	if err != nil {
		s.fail(w, r, hippocam.FormatChat, err)
		return
	}
	res, err := s.continueSession(w, r, tenant, name, conv)
	if err != nil {
		s.fail(w, r, hippocam.FormatChat, err)
		return
	}
	full := completion(req, res)
	if req.Stream {
		writeChatStream(w, full, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	writeJSON(w, http.StatusOK, full)
}

// sessionName picks the session a request names: the Hippocam-Session header, else the `user`
// field of the request (one session per user, its conversations forks of it), else none (the
// service finds the session by content). EINVALID for a name the service refuses.
func sessionName(r *http.Request, extra wire.Extra) (string, error) {
	name, given := headerName(r)
	if !given {
		if raw, ok := extra["user"]; ok {
			var user string
			if json.Unmarshal(raw, &user) == nil && user != "" {
				name, given = user, true
			}
		}
	}
	if !given {
		return "", nil
	}
	if err := sessions.CheckName(name); err != nil {
		return "", err
	}
	return name, nil
}

// completion is the non-streamed response: the answer as the model would have given it.
func completion(req *wire.ChatRequest, res *sessions.Result) wire.ChatResponse {
	finish := "stop"
	if len(res.Answer.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	return wire.ChatResponse{
		ID:      "chatcmpl-" + res.Session.ID + "-" + res.Answer.ID,
		Object:  "chat.completion",
		Created: res.Session.UpdatedAt.Unix(),
		Model:   req.Model,
		Choices: []wire.Choice{{Index: 0, Message: wire.FromMessage(&res.Answer), FinishReason: finish}},
		Usage:   chatUsage(res.Usage),
	}
}

// chatUsage reports what the main model consumed for this answer, recall calls included.
func chatUsage(u hippocam.RoleUsage) *wire.Usage {
	return &wire.Usage{
		PromptTokens:        int(u.Input),
		CompletionTokens:    int(u.Output),
		TotalTokens:         int(u.Input + u.Output),
		PromptTokensDetails: &wire.PromptTokensDetails{CachedTokens: int(u.CachedInput)},
	}
}

// writeChatStream sends a committed answer as chat.completion.chunk events, the way a streaming
// model would: the role, the content, each tool call, the finish reason, the usage when asked,
// [DONE].
func writeChatStream(w http.ResponseWriter, full wire.ChatResponse, includeUsage bool) {
	sse := newEventStream(w)
	chunk := func(delta wire.Delta, finish *string, u *wire.Usage, noChoice bool) {
		c := wire.ChatChunk{ID: full.ID, Object: "chat.completion.chunk", Created: full.Created, Model: full.Model, Usage: u}
		c.Choices = []wire.ChunkChoice{}
		if !noChoice {
			c.Choices = []wire.ChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}}
		}
		b, _ := json.Marshal(c)
		sse.data(b)
	}
	empty := ""
	chunk(wire.Delta{Role: "assistant", Content: &empty}, nil, nil, false)
	msg := full.Choices[0].Message
	if text, _ := msg.Text(); text != "" {
		for _, part := range splitText(text, 256) {
			p := part
			chunk(wire.Delta{Content: &p}, nil, nil, false)
		}
	}
	for i, c := range msg.ToolCalls {
		idx := i
		c.Index = &idx
		chunk(wire.Delta{ToolCalls: []wire.ToolCall{c}}, nil, nil, false)
	}
	finish := full.Choices[0].FinishReason
	chunk(wire.Delta{}, &finish, nil, false)
	if includeUsage {
		chunk(wire.Delta{}, nil, full.Usage, true)
	}
	sse.data([]byte("[DONE]"))
}

// eventStream writes server-sent events, flushing each.
type eventStream struct {
	w http.ResponseWriter
	f http.Flusher
}

func newEventStream(w http.ResponseWriter) *eventStream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &eventStream{w: w, f: f}
}

// data writes one "data:" event.
func (e *eventStream) data(b []byte) {
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	if e.f != nil {
		e.f.Flush()
	}
}

// splitText cuts text into pieces of at most n bytes on rune boundaries.
func splitText(text string, n int) []string {
	var parts []string
	for len(text) > n {
		cut := n
		for cut > 0 && text[cut]&0xC0 == 0x80 {
			cut--
		}
		parts = append(parts, text[:cut])
		text = text[cut:]
	}
	return append(parts, text)
}
