package sim

import (
	"encoding/json"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// The simulated main model. It reacts to the directives (!say, !pad, !call, !ask) of the user and
// tool messages that arrived since its last answer. Its last answer is its last assistant message
// that does not call recall, or a consolidated memory that replaced answered work: recall calls are
// steps of an exchange, so while it answers through recall the directives it is answering stay the
// same. Without a directive it answers "ok".
//
// Several directives combine into one answer, in the order they were written: each !say text and
// each !ask answer is one line of the content; the filler of every !pad (their sizes summed) comes
// after them on a line of its own; every !call is one tool call, in order, made in parallel.
// While an !ask still needs a recall, the answer is that recall call alone; the others wait for
// the final answer. A !call identical to a call already made since the last answer (only a recall
// can be) is not repeated.

// maxPad bounds one answer's filler, so that a script cannot make the simulation allocate
// without limit.
const maxPad = 1 << 20

// fillerWords are cycled to make filler; each is one token in the common BPE vocabularies, and
// the count is checked with the tokenizer anyway.
var fillerWords = []string{"the", "data", "row", "value", "field", "entry", "item", "note", "list", "line", "page", "word", "text", "part", "unit", "step"}

// agent answers a main-model request.
func (m *Model) agent(r *request) (answer, error) {
	last := -1
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if r.answered(i) {
			last = i
			break
		}
	}
	var dirs []line
	for i := last + 1; i < len(r.msgs); i++ {
		if !r.directives(i) {
			continue
		}
		for _, l := range r.lines(i) {
			switch l.kind {
			case kindSay, kindPad, kindCall, kindAsk:
				dirs = append(dirs, l)
			}
		}
	}
	if len(dirs) == 0 {
		return answer{content: "ok"}, nil
	}
	x := newExchange(r, last)
	var text []string
	var calls []hippocam.ToolCall
	pad := 0
	for _, d := range dirs {
		switch d.kind {
		case kindSay:
			text = append(text, d.text)
		case kindPad:
			pad = min(pad+min(d.n, maxPad), maxPad)
		case kindCall:
			if !x.made(d.tool, d.args) {
				calls = append(calls, hippocam.ToolCall{Name: d.tool, Arguments: d.args})
			}
		case kindAsk:
			reply, ref := x.ask(d.key)
			if ref != "" {
				return callAnswer(engine.RecallTool, engine.RecallArgs{Ref: ref})
			}
			text = append(text, reply)
		}
	}
	content := strings.Join(text, "\n")
	if pad > 0 {
		if content != "" {
			content += "\n"
		}
		content += m.filler(pad)
	}
	if content == "" && len(calls) == 0 {
		content = "ok"
	}
	return answer{content: content, calls: calls}, nil
}

// filler returns deterministic text of n tokens, as the tokenizer counts them.
func (m *Model) filler(n int) string {
	build := func(k int) string {
		var b strings.Builder
		for i := 0; i < k; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(fillerWords[i%len(fillerWords)])
		}
		return b.String()
	}
	// Start from one token a word and correct in proportion to the count, then step by one word.
	k := n
	s := build(k)
	for try := 0; try < 16; try++ {
		c := m.tok.Count(s)
		if c == n || c == 0 {
			break
		}
		next := max(1, int(int64(k)*int64(n)/int64(c)))
		if next == k {
			if c < n {
				next++
			} else if next > 1 {
				next--
			}
		}
		if next == k {
			break
		}
		k, s = next, build(next)
	}
	return s
}

// exchange is the state of the current question: what the main model has recalled since its
// last answer.
type exchange struct {
	r    *request
	last int // index of the last answer, -1 if none
	// opened holds the refs already passed to recall since the last answer.
	opened map[string]bool
	// results are the indices of the recall results since the last answer, oldest first.
	results []int
}

func newExchange(r *request, last int) *exchange {
	x := &exchange{r: r, last: last, opened: map[string]bool{}}
	for i := last + 1; i < len(r.msgs); i++ {
		if r.recallResult[i] {
			x.results = append(x.results, i)
		}
		if !r.recallCall[i] {
			continue
		}
		for _, c := range r.msgs[i].ToolCalls {
			var args engine.RecallArgs
			if c.Name == engine.RecallTool && json.Unmarshal([]byte(c.Arguments), &args) == nil && args.Ref != "" {
				x.opened[args.Ref] = true
			}
		}
	}
	return x
}

// made reports whether a call of tool with args was already made since the last answer.
func (x *exchange) made(tool, args string) bool {
	for i := x.last + 1; i < len(x.r.msgs); i++ {
		if x.r.msgs[i].Role != hippocam.RoleAssistant {
			continue
		}
		for _, c := range x.r.msgs[i].ToolCalls {
			if c.Name == tool && strings.TrimSpace(c.Arguments) == args {
				return true
			}
		}
	}
	return false
}

// ask answers "!ask KEY" (docs/sim.md). It returns either the answer, "KEY := VALUE" or
// "KEY := unknown", or the ref to recall next.
//
//  1. The latest "KEY := …" or "detail KEY := …" in the visible context wins. Recall results of
//     earlier questions are not looked at; those of this question are, since they are what came
//     back.
//  2. Otherwise, if recall is offered: the most recent unopened ref of a message, or of a child
//     block of this question's recall results, that names KEY in a fact, detail or impression
//     line. Failing that, the handles of children left out of this question's recall results,
//     the latest result first and, within it, the last handle first.
//  3. Otherwise KEY is unknown.
func (x *exchange) ask(key string) (reply, ref string) {
	r := x.r
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if r.recallResult[i] && i <= x.last {
			continue
		}
		ls := r.lines(i)
		for j := len(ls) - 1; j >= 0; j-- {
			if l := &ls[j]; (l.kind == kindFact || l.kind == kindDetail) && l.key == key {
				return factText(key, l.value), ""
			}
		}
	}
	if r.offers(engine.RecallTool) {
		if ref := x.naming(key); ref != "" {
			return "", ref
		}
		if ref := x.handle(); ref != "" {
			return "", ref
		}
	}
	return factText(key, "unknown"), ""
}

// naming returns the most recent unopened ref whose message or recall block names key.
func (x *exchange) naming(key string) string {
	r := x.r
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if !r.recallResult[i] {
			if ref := x.unopened(r.lines(i), key); ref != "" {
				return ref
			}
			continue
		}
		if i <= x.last {
			continue
		}
		ls := r.lines(i)
		blocks := childBlocks(ls)
		for b := len(blocks) - 1; b >= 0; b-- {
			if ref := x.unopened(ls[blocks[b][0]:blocks[b][1]], key); ref != "" {
				return ref
			}
		}
	}
	return ""
}

// unopened returns the first unopened ref tagged in ls, if ls names key.
func (x *exchange) unopened(ls []line, key string) string {
	named := false
	for j := range ls {
		if ls[j].names(key) {
			named = true
			break
		}
	}
	if !named {
		return ""
	}
	for j := range ls {
		for _, ref := range hippocam.ParseRefTags(ls[j].raw) {
			if !x.opened[ref] {
				return ref
			}
		}
	}
	return ""
}

// handle returns the handle of the most recent unopened child left out of a recall result of
// this question.
func (x *exchange) handle() string {
	for k := len(x.results) - 1; k >= 0; k-- {
		ls := x.r.lines(x.results[k])
		for j := len(ls) - 1; j >= 0; j-- {
			if !ls[j].child || !strings.Contains(ls[j].raw, engine.LeftOutMarker) {
				continue
			}
			for _, ref := range hippocam.ParseRefTags(ls[j].raw) {
				if !x.opened[ref] {
					return ref
				}
			}
		}
	}
	return ""
}

// childBlocks splits the lines of a recall result into its child blocks, as [start, end) line
// ranges. The header before the first block is not a child. A result without any block (an error
// text, say) is one block.
func childBlocks(ls []line) [][2]int {
	var blocks [][2]int
	for j := range ls {
		if !ls[j].child {
			continue
		}
		if n := len(blocks); n > 0 {
			blocks[n-1][1] = j
		}
		blocks = append(blocks, [2]int{j, len(ls)})
	}
	if blocks == nil {
		blocks = [][2]int{{0, len(ls)}}
	}
	return blocks
}
