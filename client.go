package hippocam

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Client is what a session knows of the client conversation it belongs to: its title, and what
// the agent's client said of it in its requests. A coding agent makes several sessions for one
// conversation: its own, a request that asks a small model to title the conversation, one per
// subagent it starts; Conversation groups them, Agent and Parent link a subagent to the agent
// that started it. It rides in Transcript.Client.
type Client struct {
	// Title is the first line of the session's first user message, trimmed and shortened to at
	// most TitleRunes characters (Title); for a title request, the first line of the
	// conversation it asks a title for.
	Title string `json:"title,omitempty"`
	// Conversation is the client's id of the conversation (Claude Code's session id, Codex's
	// session id, opencode's session id); empty when the client sent none. Sessions with the same
	// Conversation are one client conversation.
	Conversation string `json:"conversation,omitempty"`
	// Agent is the client's id of the agent that made the session's requests (a Claude Code
	// subagent's id, a Codex thread id); empty for a client's main agent that names none. Parent
	// is the client's id of the agent that started it, when the client said.
	Agent  string `json:"agent,omitempty"`
	Parent string `json:"parent,omitempty"`
	// Kind says what the session is within its conversation: "" for the conversation itself,
	// ClientTitle for a title request, ClientSubagent for an agent another one started, or the
	// client's own word for another side request (Codex's "review", "compact"…).
	Kind string `json:"kind,omitempty"`
}

// The kinds of Client.Kind that Hippocam recognises.
const (
	ClientTitle    = "title"
	ClientSubagent = "subagent"
)

// TitleRunes bounds a session's title.
const TitleRunes = 80

// Title returns the first line of text that holds anything but spaces, trimmed and, when longer
// than TitleRunes characters, cut at a word boundary where there is one and ended with "…".
func Title(text string) string {
	var line string
	for l := range strings.Lines(text) {
		if line = strings.TrimSpace(l); line != "" {
			break
		}
	}
	if utf8.RuneCountInString(line) <= TitleRunes {
		return line
	}
	all := []rune(line)
	runes := all[:TitleRunes-1]
	cut := len(runes)
	for i := len(runes); i > TitleRunes/2; i-- {
		if unicode.IsSpace(all[i]) { // a word ends before all[i]
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(runes[:cut]), unicode.IsSpace) + "…"
}

// Merge fills the fields of c that are empty with those of o, and returns the result: what a
// later request of the session adds to what an earlier one said. Kind is what the session's
// first request made it, and stays.
func (c Client) Merge(o Client) Client {
	if c.Title == "" {
		c.Title = o.Title
	}
	if c.Conversation == "" {
		c.Conversation = o.Conversation
	}
	if c.Agent == "" {
		c.Agent = o.Agent
	}
	if c.Parent == "" {
		c.Parent = o.Parent
	}
	return c
}
