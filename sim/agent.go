package sim

import (
	"encoding/json"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// The simulated main model. It reacts to the directives (!say, !pad, !call, !ask, !use) of the
// user and tool messages that arrived since its last answer. Its last answer is its last
// assistant message that does not call recall or search, or a consolidated memory that replaced
// answered work: recall and search calls are steps of an exchange, so while it answers through
// them the directives it is answering stay the same, and their results are never read as
// directives. Without a directive it answers "ok".
//
// Several directives combine into one answer, in the order they were written: each !say text and
// each !ask or !use answer is one line of the content; the filler of every !pad (their sizes
// summed) comes after them on a line of its own; every !call is one tool call, in order, made in
// parallel. While an !ask or !use still needs a recall or a search, the answer is that call
// alone; the others wait for the final answer. A !call identical to a call already made since
// the last answer (only a recall or a search can be) is not repeated.

// maxPad bounds one answer's filler, so that a script cannot make the simulation allocate
// without limit.
const maxPad = 1 << 20

// fillerWords are cycled to make filler; each is one token in the common BPE vocabularies, and
// the count is checked with the tokenizer anyway.
var fillerWords = []string{"the", "data", "row", "value", "field", "entry", "item", "note", "list", "line", "page", "word", "text", "part", "unit", "step"}

// agent answers a main-model request; seed is the request's seed (learn_agent.go).
func (m *Model) agent(r *request, seed int64) (answer, error) {
	searchCall, searchResult := searchMarks(r)
	last := -1
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if r.answered(i) && !searchCall[i] {
			last = i
			break
		}
	}
	var dirs []line
	task := r.taskMessage(last)
	for i := last + 1; i < len(r.msgs); i++ {
		if !r.directives(i) || searchResult[i] {
			continue
		}
		for _, l := range r.lines(i) {
			switch l.kind {
			case kindSay, kindPad, kindCall, kindAsk, kindUse:
				dirs = append(dirs, l)
			case kindDecide: // only the task's own decisions, never those an advisory quotes
				if i == task {
					dirs = append(dirs, l)
				}
			}
		}
	}
	if len(dirs) == 0 {
		return answer{content: "ok"}, nil
	}
	x := newExchange(r, last, searchCall)
	var text []string
	var calls []hippocam.ToolCall
	pad := 0
	for _, d := range dirs {
		switch d.kind {
		case kindSay:
			text = append(text, d.text)
		case kindDecide:
			text = append(text, x.decide(task, &d, seed))
		case kindPad:
			pad = min(pad+min(d.n, maxPad), maxPad)
		case kindCall:
			if !x.made(d.tool, d.args) {
				calls = append(calls, hippocam.ToolCall{Name: d.tool, Arguments: d.args})
			}
		case kindAsk, kindUse:
			reply, next := x.ask(d.key, d.kind == kindUse)
			switch next.tool {
			case engine.RecallTool:
				return callAnswer(engine.RecallTool, engine.RecallArgs{Ref: next.arg})
			case engine.SearchTool:
				return callAnswer(engine.SearchTool, engine.SearchArgs{Query: next.arg, After: next.after})
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

// searchMarks marks the assistant messages of r that call the search tool, and the tool
// messages that answer such a call: the steps of a search exchange, which, like recall's, are
// neither answers nor directives.
func searchMarks(r *request) (calls, results []bool) {
	calls, results = make([]bool, len(r.msgs)), make([]bool, len(r.msgs))
	ids := map[string]bool{}
	for i := range r.msgs {
		m := &r.msgs[i]
		switch m.Role {
		case hippocam.RoleAssistant:
			for _, c := range m.ToolCalls {
				if c.Name == engine.SearchTool {
					calls[i], ids[c.ID] = true, true
				}
			}
		case hippocam.RoleTool:
			results[i] = m.ToolCallID != "" && ids[m.ToolCallID]
		}
	}
	return calls, results
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

// exchange is the state of the current question: what the main model has recalled and searched
// since its last answer.
type exchange struct {
	r    *request
	last int // index of the last answer, -1 if none
	// opened holds the refs already passed to recall since the last answer.
	opened map[string]bool
	// results are the indices of the recall results since the last answer, oldest first.
	results []int
	// searched maps each query searched for since the last answer to the index of its result
	// (-1 while it has none).
	searched map[string]int
}

func newExchange(r *request, last int, searchCall []bool) *exchange {
	x := &exchange{r: r, last: last, opened: map[string]bool{}, searched: map[string]int{}}
	for i := last + 1; i < len(r.msgs); i++ {
		if r.recallResult[i] {
			x.results = append(x.results, i)
		}
		if searchCall[i] {
			x.noteSearches(i)
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

// noteSearches records the search calls of message i and where their results are.
func (x *exchange) noteSearches(i int) {
	for _, c := range x.r.msgs[i].ToolCalls {
		var args engine.SearchArgs
		if c.Name != engine.SearchTool || json.Unmarshal([]byte(c.Arguments), &args) != nil {
			continue
		}
		x.searched[args.Query] = -1
		for j := i + 1; j < len(x.r.msgs) && x.r.msgs[j].Role == hippocam.RoleTool; j++ {
			if x.r.msgs[j].ToolCallID == c.ID {
				x.searched[args.Query] = j
			}
		}
	}
}

// next is the call an !ask or !use needs before it can be answered: recall of a ref or search
// for a key (arg), from after a hit when the search reads on (after), or none (tool "").
type next struct{ tool, arg, after string }

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

// ask answers "!ask KEY", or "!use KEY" when use is set (docs/sim.md). It returns either the
// answer ("KEY := VALUE", or "used KEY" for !use; "KEY := unknown" when KEY cannot be found) or
// the call to make next.
//
//  1. The latest "KEY := …" or "detail KEY := …" in the visible context wins. Recall results of
//     earlier questions are not looked at; those of this question are, since they are what came
//     back.
//  2. Otherwise, if recall is offered: the most recent unopened ref of a message, or of a child
//     block of this question's recall results, that names KEY in a fact, detail or impression
//     line. Failing that, the handles of children left out of this question's recall results,
//     the latest result first and, within it, the last handle first.
//  3. Otherwise, if search is offered too: when nothing visible names KEY, a search for KEY,
//     once per question; after it, one by one and latest hit first, each layer its hits name
//     that has not been opened yet. When every layer of the latest page is open and that page
//     says more hits follow, the same search again, after the id it gives: the next page.
//  4. Otherwise KEY is unknown.
func (x *exchange) ask(key string, use bool) (string, next) {
	if value, ok := x.look(key); ok {
		if use {
			return "used " + key, next{}
		}
		return factText(key, value), next{}
	}
	r := x.r
	if r.offers(engine.RecallTool) {
		if ref := x.naming(key); ref != "" {
			return "", next{tool: engine.RecallTool, arg: ref}
		}
		if ref := x.handle(); ref != "" {
			return "", next{tool: engine.RecallTool, arg: ref}
		}
		if r.offers(engine.SearchTool) {
			at, done := x.searched[key]
			switch {
			case !done && !x.named(key):
				return "", next{tool: engine.SearchTool, arg: key}
			case done && at >= 0:
				if ref := x.hitRef(at); ref != "" {
					return "", next{tool: engine.RecallTool, arg: ref}
				}
				if after := x.searchMore(at); after != "" {
					return "", next{tool: engine.SearchTool, arg: key, after: after}
				}
			}
		}
	}
	return factText(key, "unknown"), next{}
}

// look finds the value of key (rule 1): the latest fact or detail line about key in the messages
// it may read.
func (x *exchange) look(key string) (string, bool) {
	r := x.r
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if r.recallResult[i] && i <= x.last {
			continue
		}
		ls := r.lines(i)
		for j := len(ls) - 1; j >= 0; j-- {
			if l := &ls[j]; (l.kind == kindFact || l.kind == kindDetail) && l.key == key {
				return l.value, true
			}
		}
	}
	return "", false
}

// named reports whether a line that rule 1 may read names key, in an impression as well.
func (x *exchange) named(key string) bool {
	r := x.r
	for i := range r.msgs {
		if r.recallResult[i] && i <= x.last {
			continue
		}
		for _, l := range r.lines(i) {
			if l.names(key) {
				return true
			}
		}
	}
	return false
}

// hitRef returns the first ref named by a hit line of the search result at index i that is
// still unopened. A hit names its layer right after engine.SearchInMarker; hits in view name
// none, and tags inside an excerpt are not the hit's.
func (x *exchange) hitRef(i int) string {
	for _, l := range x.r.lines(i) {
		if !l.child {
			continue
		}
		_, rest, ok := strings.Cut(l.raw, engine.SearchInMarker)
		if !ok || !strings.HasPrefix(rest, hippocam.RefTagPrefix) {
			continue
		}
		end := strings.IndexByte(rest, ']')
		if ref := rest[len(hippocam.RefTagPrefix):max(end, len(hippocam.RefTagPrefix))]; end > 0 && ref != "" && !x.opened[ref] {
			return ref
		}
	}
	return ""
}

// searchMore returns the id to read on after, when the search result at index i says that more
// hits follow (its line beginning with engine.SearchMore gives it in quotes after
// engine.SearchAfterMarker); "" when every hit was shown.
func (x *exchange) searchMore(i int) string {
	for _, l := range x.r.lines(i) {
		if !strings.HasPrefix(l.raw, engine.SearchMore) {
			continue
		}
		_, rest, ok := strings.Cut(l.raw, engine.SearchAfterMarker)
		if id, _, closed := strings.Cut(rest, `"`); ok && closed && id != "" {
			return id
		}
	}
	return ""
}

// naming returns the latest unopened ref of a message, or of a block of a recall result, that
// names key.
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
