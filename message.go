package hippocam

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Role is the chat role a message is sent with.
type Role string

// The chat roles. Only the main model's own answers have RoleAssistant: guidance and consolidated
// memories are sent as RoleUser (docs/architecture.md §3), their text saying what they are.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Valid reports whether r is one of the four chat roles.
func (r Role) Valid() bool {
	switch r {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		return true
	}
	return false
}

// Kind says who wrote a message.
type Kind string

// Message kinds (paper §2): raw messages come from the agent, the user or a tool; guidance is
// written by JANUS; intent memories by PRECIP; prefix memories by PALIM.
const (
	KindRaw          Kind = "raw"
	KindGuidance     Kind = "guidance"
	KindIntentMemory Kind = "intent_memory"
	KindPrefixMemory Kind = "prefix_memory"
	// KindFraming marks where the session's framing (the agent's leading system and developer
	// messages) changed; its Ref holds that version's messages. KindBranch stands where an answer
	// was regenerated; its Ref holds the earlier answer. Neither is ever sent to a model.
	KindFraming Kind = "framing"
	KindBranch  Kind = "branch"
	// KindRecall marks the main model's own recall and search exchanges (its calls and their
	// results), archived beneath the memory that reinforced what the answer drew on. They are
	// Hippocam's, not the agent's: no transcript or expansion of the conversation holds them.
	KindRecall Kind = "recall"
	// KindAdvisory is what a memory system read out of a cluster for the task (docs/learning.md):
	// role user, after the framing and before the task's first message. The model sees it; it is
	// Hippocam's, not the agent's, so no transcript holds it.
	KindAdvisory Kind = "advisory"
)

// Hidden reports whether messages of kind k are bookkeeping that no model request carries.
func (k Kind) Hidden() bool { return k == KindFraming || k == KindBranch }

// ToolCall is one call the model asked for. Arguments is JSON text, except for a call of a
// custom tool (Kind ToolCustom), where it is the tool's free-text input. Namespace names the
// group of the tool called, when it was declared in one.
type ToolCall struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Arguments string   `json:"arguments"`
	Kind      ToolKind `json:"kind,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
}

// Evaluation is the direction of a knowledge item's outcome (paper §2.4): it is not confidence.
type Evaluation string

// The three evaluations PALIM may give.
const (
	EvalGood    Evaluation = "good"
	EvalBad     Evaluation = "bad"
	EvalNeutral Evaluation = "neutral"
)

// Valid reports whether e is good, bad or neutral.
func (e Evaluation) Valid() bool { return e == EvalGood || e == EvalBad || e == EvalNeutral }

// KnowledgeItem is one fact a prefix memory keeps, with its evaluation.
type KnowledgeItem struct {
	Fact       string     `json:"fact"`
	Evaluation Evaluation `json:"evaluation"`
	// Revises quotes the earlier statements of the same subject, in earlier memories, that this
	// fact replaces (a merge replaces several): revisions win visibly, so that a reader need not
	// assume the latest wins.
	Revises Revisions `json:"revises,omitempty"`
}

// Revisions are the earlier statements a knowledge item replaces. In JSON they are a list of
// strings; a single string reads as a list of one (the form stored before lists, and the one a
// model may still write).
type Revisions []string

// UnmarshalJSON reads a list of strings, a single string, or null.
func (r *Revisions) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*r = nil
		if strings.TrimSpace(one) != "" {
			*r = Revisions{one}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("revises must be a string or a list of strings")
	}
	*r = nil
	for _, s := range list {
		if strings.TrimSpace(s) != "" {
			*r = append(*r, s)
		}
	}
	return nil
}

// Message is one message of a session: in the context, or archived beneath a consolidated message.
// Messages are immutable once stored; consolidation moves them, it never edits them.
type Message struct {
	ID         string     `json:"id"`
	Role       Role       `json:"role"`
	Kind       Kind       `json:"kind"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Ref names the archive node that holds the originals this message consolidates. Only
	// consolidated messages (intent and prefix memories) have one.
	Ref string `json:"ref,omitempty"`
	// Tokens is the message's size as the tokenizer counts it inside a request.
	Tokens int `json:"tokens"`
	// Knowledge holds a prefix memory's knowledge items (they also appear in Content).
	Knowledge []KnowledgeItem `json:"knowledge,omitempty"`
	// Trace holds the recall exchanges the model made before this answer. They are copies of
	// archived messages, kept for inspection and never treated as new evidence.
	Trace []Message `json:"trace,omitempty"`
	// Extra keeps, verbatim, the fields of an OpenAI chat message Hippocam does not interpret
	// (only the chat format sets it), so that the chat adapter sends them on unchanged.
	Extra json.RawMessage `json:"extra,omitempty"`
	// Parts holds the content that is not text (images, audio, files), in order.
	Parts []Part `json:"parts,omitempty"`
	// Origin is the wire form the message arrived in, byte for byte (raw messages only).
	Origin *Origin `json:"origin,omitempty"`
}

// Consolidated reports whether m stands for archived originals.
func (m *Message) Consolidated() bool { return m.Ref != "" }

// CallIDs returns the ids of m's tool calls.
func (m *Message) CallIDs() []string {
	ids := make([]string, len(m.ToolCalls))
	for i, c := range m.ToolCalls {
		ids[i] = c.ID
	}
	return ids
}

// RefTag is how a consolidated message shows its ref to the model: "[ref:ID]".
func RefTag(ref string) string { return RefTagPrefix + ref + "]" }

// RefTagPrefix begins a ref tag; a consolidated message's text begins with its tag.
const RefTagPrefix = "[ref:"

// ParseRefTags returns the refs named by "[ref:ID]" tags in text, in order.
func ParseRefTags(text string) []string {
	var refs []string
	for {
		i := strings.Index(text, "[ref:")
		if i < 0 {
			return refs
		}
		text = text[i+5:]
		j := strings.IndexByte(text, ']')
		if j < 0 {
			return refs
		}
		if ref := text[:j]; ref != "" && !strings.ContainsAny(ref, " \n\t[") {
			refs = append(refs, ref)
		}
		text = text[j+1:]
	}
}

// ExchangesWhole returns msgs with every system message that stands inside a tool exchange
// (after an assistant message's tool calls, before the last of their results) moved to just
// after that exchange's results, in order. An agent may put a system or developer message there
// (the Responses API takes one anywhere), but the chat and Messages formats want the results
// right after the calls. msgs itself is returned when nothing moves; the transcript keeps the
// order the agent sent.
func ExchangesWhole(msgs []Message) []Message {
	system := false
	for i := range msgs {
		system = system || msgs[i].Role == RoleSystem
	}
	if !system {
		return msgs // nothing that could move (the common case, found without a map)
	}
	inside := func(visit func(i int, open bool)) {
		open := map[string]bool{}
		for i := range msgs {
			m := &msgs[i]
			switch m.Role {
			case RoleAssistant:
				clear(open)
				for _, c := range m.ToolCalls {
					open[c.ID] = true
				}
			case RoleTool:
				delete(open, m.ToolCallID)
			case RoleUser:
				clear(open)
			}
			visit(i, len(open) > 0)
		}
	}
	moves := false
	inside(func(i int, open bool) { moves = moves || open && msgs[i].Role == RoleSystem })
	if !moves {
		return msgs
	}
	out := make([]Message, 0, len(msgs))
	var held []Message
	inside(func(i int, open bool) {
		m := msgs[i]
		if open && m.Role == RoleSystem {
			held = append(held, m)
			return
		}
		if m.Role != RoleTool && m.Role != RoleSystem {
			out, held = append(out, held...), held[:0] // the exchange ended unanswered
		}
		out = append(out, m)
		if !open {
			out, held = append(out, held...), held[:0]
		}
	})
	return append(out, held...)
}
