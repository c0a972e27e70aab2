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
	n, i := 0, 0 // only the runes a title can use are decoded, however long the line
	for i = range line {
		if n++; n > TitleRunes {
			break
		}
	}
	all := []rune(line[:i])
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

// ClientPlace is where a listed session stands in its client conversation.
type ClientPlace struct {
	// Group is the conversation's key: the client's id of it (Client.Conversation), else the id
	// of the session the conversation is (a title request without one joins the session whose
	// title it asks for; a fork joins the session it forked from).
	Group string `json:"group"`
	// Parent is the session this one was made for: for a title request, the conversation it
	// titles; for a subagent, the session of the agent that started it (by the client's agent
	// ids, else the conversation's main session). Empty for none.
	Parent string `json:"parent,omitempty"`
}

// PlaceSessions returns the place of every session of a listing in its client conversation, by
// session id. A group's main session is the one of kind "" and no agent id with the most
// messages (a client's side requests, such as a quota check, are short), the most recently
// updated of those first in the listing's order.
func PlaceSessions(list []SessionInfo) map[string]ClientPlace {
	byID := make(map[string]*SessionInfo, len(list))
	for i := range list {
		byID[list[i].ID] = &list[i]
	}
	client := func(in *SessionInfo) Client {
		if in.Client == nil {
			return Client{}
		}
		return *in.Client
	}
	// The group of a session that names no conversation, following forks to their origin.
	var groupOf func(in *SessionInfo, depth int) string
	groupOf = func(in *SessionInfo, depth int) string {
		if c := client(in); c.Conversation != "" {
			return c.Conversation
		}
		if in.Fork != nil && depth < 64 {
			if from, ok := byID[in.Fork.From]; ok {
				return groupOf(from, depth+1)
			}
		}
		return in.ID
	}
	places := make(map[string]ClientPlace, len(list))
	agents := map[string]string{}        // session ids by group and client agent id, the first listed
	mains := map[string]*SessionInfo{}   // by group
	byTitle := map[string]*SessionInfo{} // main sessions by title, the most recent first
	for i := range list {
		in := &list[i]
		c := client(in)
		if c.Kind == ClientTitle && c.Conversation == "" {
			continue // placed below, beside the session it titles
		}
		g := groupOf(in, 0)
		places[in.ID] = ClientPlace{Group: g}
		if key := g + "\x00" + c.Agent; c.Agent != "" && agents[key] == "" {
			agents[key] = in.ID
		}
		if c.Kind != "" || c.Agent != "" || in.Fork != nil {
			continue
		}
		if m := mains[g]; m == nil || in.Messages > m.Messages {
			mains[g] = in
		}
		if _, ok := byTitle[c.Title]; !ok && c.Title != "" {
			byTitle[c.Title] = in
		}
	}
	for i := range list {
		in := &list[i]
		c := client(in)
		if c.Kind == ClientTitle && c.Conversation == "" {
			p := ClientPlace{Group: in.ID}
			if m := byTitle[c.Title]; m != nil {
				p = ClientPlace{Group: places[m.ID].Group, Parent: m.ID}
			}
			places[in.ID] = p
			continue
		}
		p := places[in.ID]
		main := mains[p.Group]
		switch {
		case c.Kind == "" && c.Agent == "":
		case c.Parent != "":
			if s := agents[p.Group+"\x00"+c.Parent]; s != "" && s != in.ID {
				p.Parent = s
			} else if main != nil && main.ID != in.ID {
				p.Parent = main.ID
			}
		case main != nil && main.ID != in.ID:
			p.Parent = main.ID
		}
		places[in.ID] = p
	}
	return places
}
