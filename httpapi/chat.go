package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
)

// SessionHeader names a request's session; the response carries the session actually used.
const SessionHeader = "Hippocam-Session"

// maxForks bounds how many forks of one session name the proxy looks through.
const maxForks = 64

// chatRequest is a checked chat-completions request.
type chatRequest struct {
	wire     wire.ChatRequest
	history  []hippocam.Message // the whole history, as domain messages
	tools    []hippocam.Tool
	extra    json.RawMessage // fields passed through to the model
	choice   string
	name     string // session name
	tenant   string
	hashes   []string // hashes[i]: the transcript hash after i messages
	received time.Time
}

// chatCompletions is POST /v1/chat/completions.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, tenant string) {
	req, err := s.readChat(w, r, tenant)
	if err != nil {
		s.fail(w, "invalid", err)
		return
	}
	unlock := s.locks.lock(lockKey(tenant, req.name))
	defer unlock()
	sess, answer, usage, err := s.step(r.Context(), req)
	if err != nil {
		s.fail(w, failureKind(err), err)
		return
	}
	w.Header().Set(SessionHeader, sess.ID)
	if req.wire.Stream {
		s.writeStream(w, req, sess, answer, usage)
		return
	}
	writeJSON(w, http.StatusOK, completion(req, sess, answer, usage))
}

// readChat decodes and checks a request. Nothing is read from or written to the store.
func (s *Server) readChat(w http.ResponseWriter, r *http.Request, tenant string) (*chatRequest, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, hippocam.Errorf(hippocam.EINVALID, "the request body is larger than %d bytes", tooBig.Limit)
		}
		return nil, hippocam.Errorf(hippocam.EINVALID, "reading the request body: %v", err)
	}
	req := &chatRequest{tenant: tenant, received: time.Now()}
	if err := json.Unmarshal(body, &req.wire); err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "the request body is not valid JSON for chat completions: %v", err)
	}
	if len(req.wire.Messages) == 0 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "messages must be a non-empty array")
	}
	if req.history, req.tools, err = wire.ToRequest(&req.wire); err != nil {
		return nil, err
	}
	if err := checkToolExchanges(req.history); err != nil {
		return nil, err
	}
	if last := req.history[len(req.history)-1]; last.Role == hippocam.RoleAssistant {
		return nil, hippocam.Errorf(hippocam.EINVALID, "the last message is the assistant's: there is nothing to answer")
	}
	for _, t := range req.tools {
		if t.Name == engine.RecallTool {
			return nil, hippocam.Errorf(hippocam.EINVALID, "the tool name %q is reserved by Hippocam", engine.RecallTool)
		}
	}
	if req.choice, err = toolChoice(req.wire.ToolChoice); err != nil {
		return nil, err
	}
	if req.extra, err = passThrough(&req.wire); err != nil {
		return nil, err
	}
	req.name = sessionName(r, &req.wire, req.history)
	req.hashes = make([]string, len(req.history)+1)
	for i := range req.history {
		req.hashes[i+1] = hippocam.TranscriptHash(req.hashes[i], &req.history[i])
	}
	return req, nil
}

// checkToolExchanges checks that every tool result answers a call of the assistant message
// right before its run of results, once.
func checkToolExchanges(msgs []hippocam.Message) error {
	var open map[string]bool
	for i, m := range msgs {
		switch {
		case m.Role == hippocam.RoleTool:
			if !open[m.ToolCallID] {
				return hippocam.Errorf(hippocam.EINVALID, "messages[%d]: tool result with tool_call_id %q has no matching tool call right before it", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		case m.Role == hippocam.RoleAssistant:
			open = map[string]bool{}
			for _, c := range m.ToolCalls {
				if c.ID == "" {
					return hippocam.Errorf(hippocam.EINVALID, "messages[%d]: a tool call has no id", i)
				}
				open[c.ID] = true
			}
		default:
			open = nil
		}
	}
	return nil
}

// toolChoice reads tool_choice: "auto", "none", "required" or a named function.
func toolChoice(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Function.Name == "" {
		return "", hippocam.Errorf(hippocam.EINVALID, "tool_choice must be a string or {\"type\":\"function\",\"function\":{\"name\":…}}")
	}
	return named.Function.Name, nil
}

// passThrough collects the request fields Hippocam does not interpret, to send them on.
func passThrough(r *wire.ChatRequest) (json.RawMessage, error) {
	extra := wire.Extra{}
	for k, v := range r.Extra {
		extra[k] = v
	}
	if r.MaxTokens != nil {
		extra["max_tokens"], _ = json.Marshal(*r.MaxTokens)
	}
	if len(extra) == 0 {
		return nil, nil
	}
	return json.Marshal(extra)
}

// sessionName picks the session: the header, else the OpenAI `user` field, else a hash of the
// history's opening, up to and including its first user message.
func sessionName(r *http.Request, w *wire.ChatRequest, history []hippocam.Message) string {
	if name := strings.TrimSpace(r.Header.Get(SessionHeader)); name != "" {
		return name
	}
	if raw, ok := w.Extra["user"]; ok {
		var user string
		if json.Unmarshal(raw, &user) == nil && strings.TrimSpace(user) != "" {
			return strings.TrimSpace(user)
		}
	}
	h := sha256.New() // the conversation's opening: everything up to its first user message
	for _, m := range history {
		h.Write([]byte(string(m.Role) + "\x00" + m.Content + "\x00"))
		if m.Role == hippocam.RoleUser {
			break
		}
	}
	sum := h.Sum(nil)
	return "auto-" + hex.EncodeToString(sum[:6])
}

// forkName is the name of the k-th fork of a session (k ≥ 2); the first is the name itself.
func forkName(name string, k int) string {
	if k <= 1 {
		return name
	}
	return fmt.Sprintf("%s~%d", name, k)
}

// step finds the session the history continues and runs one engine step on what is new (or
// returns the stored answer of a retried request). Everything the step changed, the transcript
// included, is committed before it returns.
func (s *Server) step(ctx context.Context, req *chatRequest) (*hippocam.Session, hippocam.Message, hippocam.RoleUsage, error) {
	st := s.cfg.Store
	sess, retry, fresh, err := s.resolve(ctx, req)
	if err != nil {
		return nil, hippocam.Message{}, hippocam.RoleUsage{}, err
	}
	if retry {
		m, err := st.Message(ctx, req.tenant, sess.ID, sess.Transcript.Answer)
		if err != nil {
			return nil, hippocam.Message{}, hippocam.RoleUsage{}, fmt.Errorf("retry: %w", err)
		}
		return sess, *m, hippocam.RoleUsage{}, nil
	}
	seen := sess.Transcript.Count
	unseen := req.history[seen:]
	last := -1
	for i, m := range unseen {
		if m.Role == hippocam.RoleAssistant {
			last = i
		}
	}
	in := engine.Input{History: unseen[:last+1], Messages: unseen[last+1:], Tools: req.tools, ToolChoice: req.choice, Extra: req.extra, Model: req.wire.Model}
	if len(in.Messages) == 0 {
		return nil, hippocam.Message{}, hippocam.RoleUsage{}, hippocam.Errorf(hippocam.EINVALID, "the history ends with an assistant message: there is nothing new to answer")
	}
	res, err := s.cfg.Engine.Step(ctx, sess, hippocam.SessionArchive(st, req.tenant, sess.ID), in)
	if err != nil {
		return nil, hippocam.Message{}, hippocam.RoleUsage{}, err
	}
	next := res.Session
	before := req.hashes[len(req.history)]
	next.Transcript = hippocam.Transcript{
		Count:     len(req.history) + 1,
		Hash:      hippocam.TranscriptHash(before, &res.Answer),
		PrevCount: len(req.history),
		PrevHash:  before,
		Answer:    res.Answer.ID,
	}
	if fresh {
		if err := st.CreateSession(ctx, sess); err != nil {
			return nil, hippocam.Message{}, hippocam.RoleUsage{}, err
		}
	}
	if err := st.Commit(ctx, next, res.Change); err != nil {
		s.cache.drop(req.tenant, sess.ID) // stale (another replica) or unknown: read the store next time
		return nil, hippocam.Message{}, hippocam.RoleUsage{}, err
	}
	s.cache.put(next)
	if m := s.cfg.Metrics; m != nil {
		m.observeStep(res)
	}
	return next, res.Answer, res.Usage[hippocam.CallAgent], nil
}

// resolve returns the session the request continues and whether the request is a retry of the
// last one; for a history that continues no session, it returns a new session (NAME, or the next
// fork NAME~k) that is not stored yet: step creates it only with its first committed step, so a
// failed request leaves nothing behind. Sessions that hold nothing yet never count as a match.
func (s *Server) resolve(ctx context.Context, req *chatRequest) (sess *hippocam.Session, retry, fresh bool, err error) {
	st := s.cfg.Store
	base, err := s.cache.load(ctx, st, req.tenant, req.name)
	switch {
	case hippocam.ErrorCode(err) == hippocam.ENOTFOUND:
		base = nil
	case err != nil:
		return nil, false, false, err
	}
	if base != nil {
		if match, again, err := s.matches(req, base); err != nil || match {
			return base, again, false, err
		}
	}
	// The fork path: the forks that exist, newest first (numbers may have gaps after deletes).
	list, err := st.Sessions(ctx, req.tenant)
	if err != nil {
		return nil, false, false, err
	}
	var forks []int
	for _, info := range list {
		if rest, ok := strings.CutPrefix(info.ID, req.name+"~"); ok {
			if k, err := strconv.Atoi(rest); err == nil && k >= 2 {
				forks = append(forks, k)
			}
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(forks)))
	for _, k := range forks {
		f, err := s.cache.load(ctx, st, req.tenant, forkName(req.name, k))
		if err != nil {
			continue // deleted meanwhile
		}
		if match, again, err := s.matches(req, f); err != nil || match {
			return f, again, false, err
		}
	}
	id := req.name
	if base != nil && base.Transcript.Count > 0 {
		next := 2
		if len(forks) > 0 {
			next = forks[0] + 1
		}
		if next > maxForks {
			return nil, false, false, hippocam.Errorf(hippocam.EINVALID, "session %q has %d forks already; name a new session (Hippocam-Session header)", req.name, maxForks)
		}
		id = forkName(req.name, next)
		s.log.Info("history diverged from the session; continuing in a fork", "tenant", req.tenant, "session", req.name, "fork", id)
		if m := s.cfg.Metrics; m != nil {
			m.forks.Inc()
		}
	} else if base != nil {
		return base, false, false, nil // created earlier but never advanced: take it over
	}
	return engine.NewSession(req.tenant, id, req.received.UTC()), false, true, nil
}

// matches reports whether the request continues sess (its history extends the transcript) or
// retries its last request; EINVALID when the history repeats the transcript exactly.
func (s *Server) matches(req *chatRequest, sess *hippocam.Session) (match, retry bool, err error) {
	t, n := sess.Transcript, len(req.history)
	switch {
	case t.Count == 0:
		return false, false, nil
	case t.Count < n && req.hashes[t.Count] == t.Hash:
		return true, false, nil
	case t.Answer != "" && t.PrevCount == n && req.hashes[n] == t.PrevHash:
		return true, true, nil
	case t.Count == n && req.hashes[n] == t.Hash:
		return false, false, hippocam.Errorf(hippocam.EINVALID, "the history holds nothing new since the last answer")
	}
	return false, false, nil
}

// completion is the non-streamed response: the answer as the model would have given it.
func completion(req *chatRequest, sess *hippocam.Session, answer hippocam.Message, usage hippocam.RoleUsage) wire.ChatResponse {
	finish := "stop"
	if len(answer.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	return wire.ChatResponse{
		ID:      "chatcmpl-" + sess.ID + "-" + answer.ID,
		Object:  "chat.completion",
		Created: req.received.Unix(),
		Model:   req.wire.Model,
		Choices: []wire.Choice{{Index: 0, Message: wire.FromMessage(&answer), FinishReason: finish}},
		Usage:   wireUsage(usage),
	}
}

// wireUsage reports what the main model consumed for this answer, recall calls included.
func wireUsage(u hippocam.RoleUsage) *wire.Usage {
	return &wire.Usage{
		PromptTokens:        int(u.Input),
		CompletionTokens:    int(u.Output),
		TotalTokens:         int(u.Input + u.Output),
		PromptTokensDetails: &wire.PromptTokensDetails{CachedTokens: int(u.CachedInput)},
	}
}

// writeStream sends the committed answer as server-sent events, the way a streaming model
// would: the role, the content, each tool call, the finish reason, the usage when asked, [DONE].
// The answer is streamed only once the step is durable, so a client never sees an answer that a
// crash could take back.
func (s *Server) writeStream(w http.ResponseWriter, req *chatRequest, sess *hippocam.Session, answer hippocam.Message, usage hippocam.RoleUsage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	full := completion(req, sess, answer, usage)
	chunk := func(delta wire.Delta, finish *string, u *wire.Usage, noChoice bool) {
		c := wire.ChatChunk{ID: full.ID, Object: "chat.completion.chunk", Created: full.Created, Model: full.Model, Usage: u}
		if !noChoice {
			c.Choices = []wire.ChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}}
		} else {
			c.Choices = []wire.ChunkChoice{}
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
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
	if o := req.wire.StreamOptions; o != nil && o.IncludeUsage {
		chunk(wire.Delta{}, nil, full.Usage, true)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// splitText cuts text into pieces of at most n bytes on rune boundaries.
func splitText(text string, n int) []string {
	var parts []string
	for len(text) > n {
		cut := n
		for cut > 0 && !utf8RuneStart(text[cut]) {
			cut--
		}
		parts = append(parts, text[:cut])
		text = text[cut:]
	}
	return append(parts, text)
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// fail writes err and counts the failure.
func (s *Server) fail(w http.ResponseWriter, kind string, err error) {
	if m := s.cfg.Metrics; m != nil {
		m.failures.WithLabelValues(kind).Inc()
	}
	if hippocam.ErrorCode(err) == hippocam.EINTERNAL {
		s.log.Error("request failed", "error", err)
	}
	writeError(w, err)
}

// failureKind classifies a step's error for metrics.
func failureKind(err error) string {
	var up upstreamStatus
	if errors.As(err, &up) {
		return "upstream"
	}
	switch hippocam.ErrorCode(err) {
	case hippocam.ECAPACITY:
		return "capacity"
	case hippocam.EINVALID:
		return "invalid"
	case hippocam.EUNAVAILABLE:
		return "upstream"
	case hippocam.ECONFLICT:
		return "conflict"
	}
	return "internal"
}

// lockKey serializes a session name with all of its forks: "x", "x~2" and "x~3" share one lock.
func lockKey(tenant, id string) string {
	base, _, _ := strings.Cut(id, "~")
	return tenant + "\x00" + base
}
