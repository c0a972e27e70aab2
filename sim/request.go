package sim

import (
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// request is one decoded chat request together with what every role needs to know about its
// messages: which are recall calls and recall results, and the parsed lines of each.
type request struct {
	msgs  []hippocam.Message
	tools []hippocam.Tool
	// noTools is set when the request forbids tool calls (tool_choice "none").
	noTools bool
	// format is the request's response_format json_schema; forced the tool its tool_choice
	// names (Shape).
	format *hippocam.Structured
	forced string
	// recallCall marks assistant messages that call the recall tool. The engine treats such a
	// message as a step in a recall exchange, not as an answer, and so does the simulation.
	recallCall []bool
	// recallResult marks tool messages answering a recall call made in the same request.
	recallResult []bool
	// memory marks consolidated messages: user messages whose text begins with a [ref:…] tag
	// (engine/contract.go). A memory stands for past work that was answered, so, like an answer,
	// it ends the stretch of messages whose directives still wait for one.
	memory []bool
	parsed [][]line
	done   []bool
}

func newRequest(msgs []hippocam.Message, tools []hippocam.Tool) *request {
	r := &request{
		msgs:         msgs,
		tools:        tools,
		recallCall:   make([]bool, len(msgs)),
		recallResult: make([]bool, len(msgs)),
		memory:       make([]bool, len(msgs)),
		parsed:       make([][]line, len(msgs)),
		done:         make([]bool, len(msgs)),
	}
	recallIDs := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case hippocam.RoleAssistant:
			for _, c := range m.ToolCalls {
				if c.Name == engine.RecallTool {
					r.recallCall[i] = true
					recallIDs[c.ID] = true
				}
			}
		case hippocam.RoleTool:
			r.recallResult[i] = m.ToolCallID != "" && recallIDs[m.ToolCallID]
		case hippocam.RoleUser:
			r.memory[i] = strings.HasPrefix(m.Content, hippocam.RefTagPrefix)
		}
	}
	return r
}

// lines returns the parsed lines of message i, parsing them on first use.
func (r *request) lines(i int) []line {
	if !r.done[i] {
		r.parsed[i], r.done[i] = readLines(r.msgs[i].Content), true
	}
	return r.parsed[i]
}

// directives reports whether the directives of message i count: it is a user or tool message
// and not a recall result.
func (r *request) directives(i int) bool {
	role := r.msgs[i].Role
	return (role == hippocam.RoleUser || role == hippocam.RoleTool) && !r.recallResult[i] &&
		!strings.HasPrefix(r.msgs[i].Content, hippocam.AdvisoryHeader) // quotes earlier tasks: nothing to do
}

// offers reports whether the request offers the named tool.
func (r *request) offers(name string) bool {
	for _, t := range r.tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// frame splits a JANUS, PRECIP or PALIM request into its material, messages [lo, hi), and the
// text of the final instruction. The leading system messages are the component's prompt. The
// engine's framing (engine/contract.go) ends every such request with one user message; anything
// else is EINVALID, so that a framing mistake in the engine surfaces at once. When the
// instruction names a span (engine.SpanLine), the material is that span: from the message its
// start line quotes through the last message before the instruction, which its end line must
// quote; a start that no message matches, or an end that does not match, is EINVALID too.
func (r *request) frame(role hippocam.CallRole) (lo, hi int, instruction string, err error) {
	n := len(r.msgs)
	if n == 0 || r.msgs[n-1].Role != hippocam.RoleUser {
		return 0, 0, "", hippocam.Errorf(hippocam.EINVALID, "a %s request must end with the instruction as a user message", role)
	}
	for lo < n-1 && r.msgs[lo].Role == hippocam.RoleSystem {
		lo++
	}
	instruction = r.msgs[n-1].Content
	start, end, ok, err := readSpan(instruction)
	if err != nil {
		return 0, 0, "", hippocam.Errorf(hippocam.EINVALID, "%s request: %v", role, err)
	}
	if !ok {
		return lo, n - 1, instruction, nil
	}
	if lo >= n-1 || !end.matches(&r.msgs[n-2]) {
		return 0, 0, "", hippocam.Errorf(hippocam.EINVALID, "%s request: the span's end line does not quote the last message before the instruction", role)
	}
	seen := 0
	for i := n - 2; i >= lo; i-- {
		if start.matches(&r.msgs[i]) {
			if seen++; seen == start.nth {
				at := i + start.near // the start itself, or the neighbour the quote names
				if at < lo || at > n-2 || engine.SpanRole(r.msgs[at].Role) != start.startRole {
					return 0, 0, "", hippocam.Errorf(hippocam.EINVALID, "%s request: the message next to the one the span's start line quotes is no %s", role, start.startRole)
				}
				return at, n - 1, instruction, nil
			}
		}
	}
	return 0, 0, "", hippocam.Errorf(hippocam.EINVALID, "%s request: no message matches the span's start line", role)
}

// spanQuote is a message as a span line quotes it (engine.SpanLine): its role, and its whole
// text, the beginning of its text, or the tools it calls; nth counts matching messages back from
// the end of the material (1: the latest).
type spanQuote struct {
	role  string
	how   string // engine.SpanBegins, engine.SpanReads, engine.SpanCalls or engine.SpanCallArgs
	text  string
	whole bool // for engine.SpanCallArgs: text is all of the calls, not their beginning
	nth   int
	// near is where the start lies from the quoted message: 0 (it is the start), 1 (the start
	// is right after it, engine.SpanAfter) or -1 (right before it, engine.SpanBefore); startRole
	// is the start's role.
	near      int
	startRole string
}

// matches reports whether m is a message the quote describes.
func (q spanQuote) matches(m *hippocam.Message) bool {
	if engine.SpanRole(m.Role) != q.role {
		return false
	}
	text := engine.SpanText(m)
	switch q.how {
	case engine.SpanCalls:
		return text == "" && len(m.ToolCalls) > 0 && engine.SpanCallNames(m) == q.text
	case engine.SpanCallArgs:
		if text != "" || len(m.ToolCalls) == 0 {
			return false
		}
		if q.whole {
			return engine.SpanCallText(m) == q.text
		}
		return strings.HasPrefix(engine.SpanCallText(m), q.text)
	case engine.SpanReads:
		return text == q.text
	}
	return strings.HasPrefix(text, q.text)
}

// matchesWithin reports whether a quote of text names a message that m holds after its first
// line. An Anthropic upstream gets consecutive messages of one role as one turn, which reads back
// as one message, their texts a line apart; a quote of a later one names that turn. Only a quote
// no message matches as a whole is looked for this way.
func (q spanQuote) matchesWithin(m *hippocam.Message) bool {
	if engine.SpanRole(m.Role) != q.role || (q.how != engine.SpanBegins && q.how != engine.SpanReads) {
		return false
	}
	lines := strings.Split(m.Content, "\n")
	for k := 1; k < len(lines); k++ {
		if strings.HasPrefix(strings.Join(strings.Fields(strings.Join(lines[k:], "\n")), " "), q.text) {
			return true
		}
	}
	return false
}

// readSpan reads the span's start and end lines from an instruction; ok is false when it names
// no span (the whole material is the span). A start line without an end line, or a line that
// does not parse, is an error.
func readSpan(instruction string) (start, end spanQuote, ok bool, err error) {
	var haveStart, haveEnd bool
	for _, s := range strings.Split(instruction, "\n") {
		s = strings.TrimSpace(s)
		if rest, found := strings.CutPrefix(s, engine.SpanStartPrefix); found && !haveStart {
			start, haveStart = spanQuote{nth: 1}, true
			if after, ok := cutRole(rest, &start); ok { // named by a neighbour
				start.startRole = start.role
				for how, near := range map[string]int{engine.SpanAfter: 1, engine.SpanBefore: -1} {
					if r, ok := strings.CutPrefix(after, " "+how); ok {
						rest, start.near = engine.SpanLatest+r, near
					}
				}
				if start.near == 0 {
					return start, end, false, fmt.Errorf("cannot read the neighbour in the span's start line %q", s)
				}
			}
			if rest, found = strings.CutPrefix(rest, engine.SpanLatest); !found {
				var suffix string
				if _, err := fmt.Sscanf(rest, "%d%s "+engine.SpanLatest, &start.nth, &suffix); err != nil || start.nth < 1 {
					return start, end, false, fmt.Errorf("cannot read the span's start line %q", s)
				}
				_, rest, _ = strings.Cut(rest, " "+engine.SpanLatest)
			}
			if rest, found = cutRole(rest, &start); !found {
				return start, end, false, fmt.Errorf("cannot read the role in the span's start line %q", s)
			}
			if start.near == 0 {
				start.startRole = start.role
			}
			if rest, found = strings.CutPrefix(rest, engine.SpanAbove); !found || !cutQuote(rest, &start) {
				return start, end, false, fmt.Errorf("cannot read the quote in the span's start line %q", s)
			}
		}
		if rest, found := strings.CutPrefix(s, engine.SpanEndPrefix); found && !haveEnd {
			end, haveEnd = spanQuote{nth: 1}, true
			if after, found := strings.CutPrefix(rest, "an "); found {
				rest = after
			} else {
				rest = strings.TrimPrefix(rest, "a ")
			}
			if rest, found = cutRole(rest, &end); !found {
				return start, end, false, fmt.Errorf("cannot read the role in the span's end line %q", s)
			}
			if !cutQuote(strings.TrimPrefix(rest, " "), &end) {
				return start, end, false, fmt.Errorf("cannot read the quote in the span's end line %q", s)
			}
		}
	}
	if haveStart != haveEnd {
		return start, end, false, fmt.Errorf("the span needs both a start line and an end line")
	}
	return start, end, haveStart, nil
}

// cutRole reads the role at the start of s into q.
func cutRole(s string, q *spanQuote) (string, bool) {
	for _, role := range []hippocam.Role{hippocam.RoleUser, hippocam.RoleAssistant, hippocam.RoleTool, hippocam.RoleSystem} {
		if rest, ok := strings.CutPrefix(s, engine.SpanRole(role)); ok {
			q.role = engine.SpanRole(role)
			return rest, true
		}
	}
	return s, false
}

// cutQuote reads `that begins "TEXT…"`, `that reads "TEXT"`, `that only calls tools: NAMES` or
// `that only calls tools, with these arguments: CALLS` (ending with "…" when cut).
func cutQuote(s string, q *spanQuote) bool {
	if rest, ok := strings.CutPrefix(s, engine.SpanCalls); ok {
		q.how, q.text = engine.SpanCalls, rest
		return rest != ""
	}
	if rest, ok := strings.CutPrefix(s, engine.SpanCallArgs); ok {
		var cut bool
		q.how = engine.SpanCallArgs
		q.text, cut = strings.CutSuffix(rest, engine.SpanEllipsis)
		q.whole = !cut
		return q.text != ""
	}
	for _, how := range []string{engine.SpanBegins, engine.SpanReads} {
		rest, ok := strings.CutPrefix(s, how)
		if !ok || len(rest) < 2 || rest[0] != '"' || rest[len(rest)-1] != '"' {
			continue
		}
		q.how, q.text = how, rest[1:len(rest)-1]
		if how == engine.SpanBegins {
			var cut bool
			if q.text, cut = strings.CutSuffix(q.text, engine.SpanEllipsis); !cut {
				return false
			}
		}
		return true
	}
	return false
}

// answered reports whether message i closes the stretch of answered messages: an answer (an
// assistant message that is not a recall call) or a consolidated memory, which replaced answered
// work. Directives before it have been acted on.
func (r *request) answered(i int) bool {
	return (r.msgs[i].Role == hippocam.RoleAssistant && !r.recallCall[i]) || r.memory[i]
}
