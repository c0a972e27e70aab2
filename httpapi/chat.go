package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sse"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sessions"
)

// The OpenAI Chat Completions transport: POST /v1/chat/completions, read into a conversation,
// continued by the session service, answered in the chat format, streamed or not.

// chatFormat is the chat format for the shared code: its one route, refusals in OpenAI's error
// JSON with OpenAI's context-length wording.
type chatFormat struct {
	formatDefaults
	openAIErrors
}

func (chatFormat) id() hippocam.Format { return hippocam.FormatChat }

func (chatFormat) prefixes() []string { return []string{"/v1/chat/"} }

func (chatFormat) routes() []route {
	return []route{{"POST /v1/chat/completions", "chat", (*Server).chatCompletions}}
}

func (chatFormat) tooLong(needed, window int, detail string) (message, param string) {
	if needed > 0 && window > 0 {
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", window, needed), "messages"
	}
	return "This model's maximum context length was exceeded: " + detail, "messages"
}

// chatCompletions is POST /v1/chat/completions.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, tenant string) {
	body, release, err := s.readChatBody(w, r)
	if err != nil {
		s.fail(w, r, hippocam.FormatChat, err)
		return
	}
	defer release() // req shares the body's memory, the conversation does not
	conv, req, err := s.chats.Read(body)
	if err != nil {
		s.fail(w, r, hippocam.FormatChat, err)
		return
	}
	name, err := sessionName(r, req.Extra)
	if err != nil {
		s.fail(w, r, hippocam.FormatChat, err)
		return
	}
	if req.Stream {
		s.stream(w, r, tenant, name, conv, hippocam.FormatChat, &chatStream{w: w, req: req})
		return
	}
	res, err := s.continueSession(w, r, tenant, name, conv, nil)
	if err != nil {
		s.fail(w, r, hippocam.FormatChat, err)
		return
	}
	writeJSON(w, http.StatusOK, completion(req, res))
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
	return wire.ChatResponse{
		ID:      chatID(res.Session.ID, res.Answer.ID),
		Object:  "chat.completion",
		Created: res.Session.UpdatedAt.Unix(),
		Model:   req.Model,
		Choices: []wire.Choice{{Index: 0, Message: wire.AnswerMessage(wire.FromMessage(&res.Answer)), FinishReason: chatFinish(res)}},
		Usage:   chatUsage(res.Usage),
	}
}

// chatID names a completion: the session and the answer's key.
func chatID(session, answer string) string { return "chatcmpl-" + session + "-" + answer }

// chatFinish is the finish reason of an answer: tool_calls when it calls tools, else stop.
func chatFinish(res *sessions.Result) string {
	if len(res.Answer.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// chatUsage reports what the main model consumed for this answer, recall calls included, with
// both breakdowns the API always sends (Hippocam counts no reasoning, audio or prediction tokens
// apart: those are 0).
func chatUsage(u hippocam.RoleUsage) *wire.Usage {
	return &wire.Usage{
		PromptTokens:            int(u.Input),
		CompletionTokens:        int(u.Output),
		TotalTokens:             int(u.Input + u.Output),
		PromptTokensDetails:     &wire.PromptTokensDetails{CachedTokens: int(u.CachedInput)},
		CompletionTokensDetails: &wire.CompletionTokensDetails{},
	}
}

// chatPiece is the most bytes of text one content chunk of the proxy's chat stream carries.
const chatPiece = 256

// chatStream writes an answer as chat.completion.chunk events, the way a streaming model does:
// the role, the content as it comes, each tool call whole, the finish reason, the usage when
// the request asked for it (stream_options.include_usage), then [DONE]. A step that fails
// after the stream began ends it with {"error":{…}} and no [DONE].
type chatStream struct {
	w   http.ResponseWriter
	req *wire.ChatRequest
	sse *sse.Writer
	id  string
	at  int64
}

func (c *chatStream) open(id streamID) error {
	c.id, c.at = chatID(id.session, id.answer), id.created
	c.sse = sse.Start(c.w)
	empty := ""
	return c.chunk(wire.Delta{Role: "assistant", Content: &empty}, nil, nil, false)
}

func (c *chatStream) text(piece string) error {
	for _, part := range sse.Split(piece, chatPiece) {
		if err := c.chunk(wire.Delta{Content: &part}, nil, nil, false); err != nil {
			return err
		}
	}
	return nil
}

func (c *chatStream) finish(res *sessions.Result) error {
	for i, tc := range wire.FromMessage(&res.Answer).ToolCalls {
		idx := i
		tc.Index = &idx
		if err := c.chunk(wire.Delta{ToolCalls: []wire.ToolCall{tc}}, nil, nil, false); err != nil {
			return err
		}
	}
	finish := chatFinish(res)
	if err := c.chunk(wire.Delta{}, &finish, nil, false); err != nil {
		return err
	}
	if c.req.StreamOptions != nil && c.req.StreamOptions.IncludeUsage {
		if err := c.chunk(wire.Delta{}, nil, chatUsage(res.Usage), true); err != nil {
			return err
		}
	}
	return c.sse.Data([]byte("[DONE]"))
}

func (c *chatStream) whole(id streamID, res *sessions.Result) error {
	if err := c.open(id); err != nil {
		return err
	}
	if res.Answer.Content != "" {
		if err := c.text(res.Answer.Content); err != nil {
			return err
		}
	}
	return c.finish(res)
}

func (c *chatStream) fail(err error) error {
	return c.sse.Data(refuse(hippocam.FormatChat, err).chunk())
}

// chunk writes one chat.completion.chunk; noChoice writes the usage chunk, whose choices are [].
func (c *chatStream) chunk(delta wire.Delta, finish *string, u *wire.Usage, noChoice bool) error {
	ch := wire.ChatChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.at, Model: c.req.Model, Usage: u}
	ch.Choices = []wire.ChunkChoice{}
	if !noChoice {
		ch.Choices = []wire.ChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}}
	}
	b, err := json.Marshal(ch)
	if err != nil {
		return fmt.Errorf("encode chunk: %w", err)
	}
	return c.sse.Data(b)
}
