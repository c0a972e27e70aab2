package sessions

import (
	"strings"

	"github.com/hippocam/hippocam"
)

// A session's title and its place in the client's conversation (hippocam.Client): the transport
// passes what the request's headers and fields said (Request.Client); the service adds the
// title, and recognises the requests in which a client asks a small model to title its
// conversation, by their prompts.

// titlePrompts are phrases of the system prompts with which clients ask a model for a title:
// opencode's title agent, Claude Code's session namer and its earlier topic detection.
var titlePrompts = []string{
	"You are a title generator",
	"You are naming a coding session",
	"indicates a new conversation topic",
}

// titleAsk opens the user message of opencode's title request; the conversation to title
// follows it, in the same message or in the next ones.
const titleAsk = "Generate a title for this conversation"

// clientOf returns the session's client record after the request: prev (nil for a session that
// has none yet) with what the request adds. The first request decides the title and the kind.
func clientOf(prev *hippocam.Client, req *Request, conv *hippocam.Conversation) *hippocam.Client {
	c := req.Client
	if prev != nil && prev.Title != "" { // the first request decided title and kind
		c = prev.Merge(c)
		return &c
	}
	if subject, ok := titleSubject(conv); ok {
		c.Kind, c.Title = hippocam.ClientTitle, hippocam.Title(subject)
	} else {
		c.Title = firstUserLine(conv.Messages)
	}
	if prev != nil {
		c = prev.Merge(c)
	}
	return &c
}

// titleSubject reports whether conv is a title request, by its first user message (and the
// framing's prompt), and returns the text of the conversation it asks a title for.
func titleSubject(conv *hippocam.Conversation) (string, bool) {
	byPrompt := false
	for _, m := range conv.Framing {
		for _, p := range titlePrompts {
			byPrompt = byPrompt || strings.Contains(m.Content, p)
		}
	}
	for i, m := range conv.Messages {
		if m.Role != hippocam.RoleUser {
			continue
		}
		text := strings.TrimSpace(m.Content)
		if rest, ok := strings.CutPrefix(text, titleAsk); ok {
			// opencode: "Generate a title for this conversation:", then the conversation.
			rest = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
			if rest == "" {
				rest = firstUserLine(conv.Messages[i+1:])
			}
			return rest, true
		}
		if inner, ok := tagged(text, "session"); ok && byPrompt {
			// Claude Code: the conversation inside <session>…</session>.
			return inner, true
		}
		if byPrompt {
			return text, true
		}
		// Only the first user message asks for a title: a line like the ask later on is the
		// conversation's own text.
		return "", false
	}
	return "", false
}

// firstUserLine is the title of a conversation: the first line of its first user message, less
// what clients put ahead of the user's own words (tagged context blocks such as Claude Code's
// <system-reminder> or Codex's <environment_context>, and Codex's AGENTS.md instructions).
func firstUserLine(msgs []hippocam.Message) string {
	for _, m := range msgs {
		if m.Role != hippocam.RoleUser {
			continue
		}
		if t := hippocam.Title(userText(m.Content)); t != "" {
			return t
		}
	}
	return ""
}

// userText is text less its leading tagged blocks and client instructions.
func userText(text string) string {
	for {
		text = strings.TrimSpace(text)
		if strings.HasPrefix(text, "# AGENTS.md instructions") {
			return ""
		}
		if !strings.HasPrefix(text, "<") {
			return text
		}
		name := text[1:]
		if i := strings.IndexAny(name, "> \n"); i > 0 {
			name = name[:i]
		} else {
			return text
		}
		end := strings.Index(text, "</"+name+">")
		if end < 0 {
			return text
		}
		text = text[end+len(name)+3:]
	}
}

// tagged returns the text inside the first <name>…</name> of text.
func tagged(text, name string) (string, bool) {
	open, close := "<"+name+">", "</"+name+">"
	i := strings.Index(text, open)
	if i < 0 {
		return "", false
	}
	rest := text[i+len(open):]
	j := strings.Index(rest, close)
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}
