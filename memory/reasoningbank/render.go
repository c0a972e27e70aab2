package reasoningbank

import (
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// advisoryHead opens the advisory: where the notes come from, and that they may not fit.
const advisoryHead = "Notes kept from an earlier task that resembles this one. They may not fit it: " +
	"follow a note only where the situation it describes is the situation here."

// renderItems renders notes for a task's context, in order, as many as fit budget tokens with
// the heading; it returns the text and how many notes it holds ("" and 0 when none fits).
func renderItems(tok hippocam.Tokenizer, items []Item, budget int) (string, int) {
	text, n := advisoryHead, 0
	for i, it := range items {
		next := text + fmt.Sprintf("\n\n### Note %d: %s\nApplies: %s\n%s", i+1, it.Title, oneLine(it.Description), it.Content)
		if tok.Count(next) > budget {
			break
		}
		text, n = next, n+1
	}
	if n == 0 {
		return "", 0
	}
	return text, n
}

// renderTrajectory shows what the agent did, one message after another, each under its sender.
// What a memory system added to the context (an advisory) is not the agent's work and is left
// out, as are the engine's hidden bookkeeping marks.
func renderTrajectory(t *hippocam.Trajectory) string {
	var b strings.Builder
	for _, m := range t.Messages {
		if m.Kind == hippocam.KindAdvisory || m.Kind.Hidden() {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%s]", sender(&m))
		if c := strings.TrimSpace(m.Content); c != "" {
			b.WriteString("\n")
			b.WriteString(c)
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "\n(calls %s with %s)", c.Name, c.Arguments)
		}
	}
	if b.Len() == 0 {
		return "(nothing)"
	}
	return b.String()
}

// sender names who wrote a message, for a reader of the trajectory.
func sender(m *hippocam.Message) string {
	switch {
	case m.Role == hippocam.RoleAssistant:
		return "agent"
	case m.Role == hippocam.RoleTool:
		return "tool result"
	case m.Role == hippocam.RoleSystem:
		return "instructions"
	case m.Kind != hippocam.KindRaw && m.Kind != "":
		return "memory note"
	}
	return "user"
}
