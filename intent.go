package hippocam

import (
	"fmt"
	"strings"
)

// Intent is one bounded purpose of the agent's work (paper §2.2: i = ⟨p, χ, b⟩).
type Intent struct {
	// Label states the purpose (p).
	Label string `json:"label"`
	// Reason says why the purpose arose now.
	Reason string `json:"reason,omitempty"`
	// Done is the exit condition (χ): when the purpose is achieved or can no longer be pursued.
	Done string `json:"done"`
	// Start is the id of the first message the intent governs (b). It is anchored to an id,
	// not an index, so that replacements elsewhere never shift it. Intents JANUS opens start at
	// the guidance message announcing them.
	Start string `json:"start"`
}

// IntentStack is the nested intent stack I, from the broadest intent (index 0, bottom) to the
// most immediate (last, top).
type IntentStack []Intent

// Closure asks to close one intent. Closures pop from the top of the stack.
type Closure struct {
	Label    string `json:"label"`
	Evidence string `json:"evidence,omitempty"`
}

// StackOps is one JANUS answer: intents to close (top first), intents to open (broadest first)
// and the first-person guidance for the main model. An answer with no operations is a skip.
type StackOps struct {
	Close    []Closure `json:"close,omitempty"`
	Open     []Intent  `json:"open,omitempty"`
	Guidance string    `json:"guidance,omitempty"`
}

// Skip reports whether ops leave the stack as it is.
func (ops StackOps) Skip() bool { return len(ops.Close) == 0 && len(ops.Open) == 0 }

// Top returns the innermost intent, or nil on an empty stack.
func (s IntentStack) Top() *Intent {
	if len(s) == 0 {
		return nil
	}
	return &s[len(s)-1]
}

// Labels returns the labels from the bottom up.
func (s IntentStack) Labels() []string {
	out := make([]string, len(s))
	for i, in := range s {
		out[i] = in.Label
	}
	return out
}

// Apply validates ops as one set against s and returns the new stack and the intents it closed
// (innermost first). Opened intents get Start = start. If any operation is invalid, nothing is
// applied and the EINVALID error lists every reason, so that JANUS can correct them all at once.
//
// The rules: closures pop from the top with exact labels, so a parent never closes before its
// child; a label is closed at most once; opened intents need a label and an exit condition; no
// purpose may appear twice on the resulting stack (labels compare case- and space-insensitively).
func (s IntentStack) Apply(ops StackOps, start string) (IntentStack, []Intent, error) {
	var reasons []string
	depth := len(s)
	for _, c := range ops.Close {
		if depth > 0 && c.Label == s[depth-1].Label {
			depth--
			continue
		}
		switch {
		case depth == 0:
			reasons = append(reasons, fmt.Sprintf("close %q: the stack has nothing left to close", c.Label))
		case s[:depth].index(c.Label) >= 0:
			reasons = append(reasons, fmt.Sprintf("close %q: intents close from the top and %q above it is still open; close that first", c.Label, s[depth-1].Label))
		default:
			reasons = append(reasons, fmt.Sprintf("close %q: no open intent has this label; the next one to close is %q and labels must match exactly", c.Label, s[depth-1].Label))
		}
		break
	}
	seen := map[string]bool{}
	for _, in := range s[:depth] {
		seen[normLabel(in.Label)] = true
	}
	for _, in := range ops.Open {
		key := normLabel(in.Label)
		switch {
		case key == "":
			reasons = append(reasons, "open: an intent needs a non-empty label")
		case strings.TrimSpace(in.Done) == "":
			reasons = append(reasons, fmt.Sprintf("open %q: an intent needs an exit condition (when it succeeds or fails)", in.Label))
		case seen[key]:
			reasons = append(reasons, fmt.Sprintf("open %q: this purpose is already on the stack", in.Label))
		}
		seen[key] = true
	}
	if len(reasons) > 0 {
		return s, nil, Errorf(EINVALID, "%s", strings.Join(reasons, "; "))
	}
	closed := make([]Intent, 0, len(ops.Close))
	for i := len(s) - 1; i >= depth; i-- {
		closed = append(closed, s[i])
	}
	next := append(IntentStack(nil), s[:depth]...)
	for _, in := range ops.Open {
		in.Label = strings.TrimSpace(in.Label)
		in.Start = start
		next = append(next, in)
	}
	return next, closed, nil
}

// DepthAfter returns how deep the stack would be after ops: the closures that pop from the top
// with exact labels, as Apply takes them (up to the first that does not), then every opening.
func (s IntentStack) DepthAfter(ops StackOps) int {
	depth := len(s)
	for _, c := range ops.Close {
		if depth == 0 || c.Label != s[depth-1].Label {
			break
		}
		depth--
	}
	return depth + len(ops.Open)
}

func (s IntentStack) index(label string) int {
	for i, in := range s {
		if in.Label == label {
			return i
		}
	}
	return -1
}

// SameLabel reports whether two labels name the same purpose: equal ignoring case and spacing,
// as Apply compares them.
func SameLabel(a, b string) bool { return normLabel(a) == normLabel(b) }

func normLabel(l string) string { return strings.ToLower(strings.Join(strings.Fields(l), " ")) }
