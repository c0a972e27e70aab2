package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode"

	"github.com/hippocam/hippocam"
)

// What the coding agents' clients say, in their headers and request fields, of the conversation
// a request belongs to (hippocam.Client): the session service keeps it with the session, and the
// REST API groups sessions by it.
//
//   - Claude Code names its session in X-Claude-Code-Session-Id and in metadata.user_id (a JSON
//     string with a session_id in recent versions, "user_…_account_…_session_<id>" before); a
//     subagent's requests name it in X-Claude-Code-Agent-Id and the agent that started it in
//     X-Claude-Code-Parent-Agent-Id.
//   - Codex names its session in session-id (session_id in older versions, conversation_id
//     before that), the thread in thread-id, a spawned thread's parent in
//     X-Codex-Parent-Thread-Id, and what a side thread is for in X-OpenAI-Subagent ("review",
//     "compact", "collab_spawn"…).
//   - opencode names its session in X-Session-Affinity and X-Session-Id (x-opencode-session for
//     its own provider) and, to an OpenAI upstream, in prompt_cache_key.

// maxClientID bounds an id read from a client; a longer value is cut.
const maxClientID = 200

// The headers read, in the order they are tried.
var (
	conversationHeaders = []string{"X-Claude-Code-Session-Id", "Session-Id", "Session_id", "Conversation_id",
		"X-Session-Affinity", "X-Session-Id", "X-Opencode-Session"}
	agentHeaders  = []string{"X-Claude-Code-Agent-Id", "Thread-Id"}
	parentHeaders = []string{"X-Claude-Code-Parent-Agent-Id", "X-Codex-Parent-Thread-Id"}
)

// subagentHeader is Codex's label of a side thread.
const subagentHeader = "X-OpenAI-Subagent"

// clientOf reads what r and its conversation say of the client conversation.
func clientOf(r *http.Request, conv *hippocam.Conversation) hippocam.Client {
	var c hippocam.Client
	c.Conversation = firstHeader(r, conversationHeaders)
	var extra struct {
		Metadata struct {
			UserID string `json:"user_id"`
		} `json:"metadata"`
		PromptCacheKey string `json:"prompt_cache_key"`
	}
	if conv != nil && len(conv.Extra) > 0 {
		_ = json.Unmarshal(conv.Extra, &extra) // a field of another shape says nothing of the client
	}
	if c.Conversation == "" {
		c.Conversation = clientID(userSession(extra.Metadata.UserID))
	}
	if c.Conversation == "" {
		c.Conversation = clientID(extra.PromptCacheKey)
	}
	c.Agent, c.Parent = firstHeader(r, agentHeaders), firstHeader(r, parentHeaders)
	if c.Agent == c.Conversation {
		c.Agent = "" // Codex's main thread has its session's id
	}
	switch label := clientID(r.Header.Get(subagentHeader)); {
	case label != "" && !strings.Contains(label, "spawn"):
		c.Kind = label
	case label != "" || c.Agent != "" && c.Conversation != "":
		c.Kind = hippocam.ClientSubagent
	}
	return c
}

// userSession returns the session id in Claude Code's metadata.user_id, "" when there is none.
func userSession(userID string) string {
	if strings.HasPrefix(userID, "{") {
		var v struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(userID), &v) == nil {
			return v.SessionID
		}
		return ""
	}
	if i := strings.LastIndex(userID, "_session_"); i >= 0 {
		return userID[i+len("_session_"):]
	}
	return ""
}

// firstHeader returns the first of the headers r has, as a client id.
func firstHeader(r *http.Request, names []string) string {
	for _, name := range names {
		if v := clientID(r.Header.Get(name)); v != "" {
			return v
		}
	}
	return ""
}

// clientID is v trimmed, without control characters, at most maxClientID bytes long.
func clientID(v string) string {
	v = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, v))
	if len(v) > maxClientID {
		v = strings.ToValidUTF8(v[:maxClientID], "")
	}
	return v
}
