package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
)

// The structured-output contracts of the components (docs/architecture.md §5). Each component answers
// by calling one tool whose arguments decode into the Go type below; a validator checks them and
// the repair loop (repair.go) quotes its error back to the model a bounded number of times.

// Tool names of the components' contracts and of the main model's recall tool.
const (
	JanusTool  = "update_intents"      // JANUS: close / open intents, write guidance
	PrecipTool = "write_memory"        // PRECIP: the first-person memory of a closed span
	PalimTool  = "write_prefix_memory" // PALIM: narrative and knowledge items of a prefix
	RecallTool = "recall"              // the main model: open one layer of the message tree
)

// ConciseMarker appears in the request PALIM gets when its memory saved too little; it asks for
// a more concise version (Alg. 2, FOLD, up to J times).
const ConciseMarker = "Write a more concise version"

// JanusOutput is JANUS's answer: closures (top first), openings (broadest first) and guidance.
//
// Every field may be left out: a skip is the empty object, so that the decision every main answer
// waits for (docs/architecture.md §7) is a couple of tokens when nothing changes.
type JanusOutput struct {
	Close    []JanusClosure `json:"close,omitempty"`
	Open     []JanusOpening `json:"open,omitempty"`
	Guidance string         `json:"guidance,omitempty"`
}

// JanusClosure closes the intent with exactly this label.
type JanusClosure struct {
	Label    string `json:"label"`
	Evidence string `json:"evidence,omitempty"`
}

// JanusOpening opens an intent.
type JanusOpening struct {
	Label  string `json:"label"`
	Reason string `json:"reason,omitempty"`
	Done   string `json:"done"`
}

// Ops converts the answer to stack operations.
func (o *JanusOutput) Ops() hippocam.StackOps {
	var ops hippocam.StackOps
	for _, c := range o.Close {
		ops.Close = append(ops.Close, hippocam.Closure{Label: c.Label, Evidence: c.Evidence})
	}
	for _, in := range o.Open {
		ops.Open = append(ops.Open, hippocam.Intent{Label: in.Label, Reason: in.Reason, Done: in.Done})
	}
	ops.Guidance = strings.TrimSpace(o.Guidance)
	return ops
}

// PrecipOutput is PRECIP's answer: the memory that replaces a closed span.
type PrecipOutput struct {
	Memory string `json:"memory"`
}

// Validate checks that the memory is there.
func (o *PrecipOutput) Validate() error {
	if strings.TrimSpace(o.Memory) == "" {
		return fmt.Errorf("memory is empty; write the memory of the closed work")
	}
	return nil
}

// PalimOutput is PALIM's answer: a narrative of undertakings, the ids of the earlier memories'
// knowledge items it carries forward unchanged (the engine copies them; KnowledgeID), and its
// own knowledge items: new ones, and those that change or merge earlier ones.
type PalimOutput struct {
	Narrative string                   `json:"narrative"`
	Keep      []string                 `json:"keep,omitempty"`
	Knowledge []hippocam.KnowledgeItem `json:"knowledge"`
}

// Validate checks every knowledge item has a fact and a known evaluation, and that something
// is said at all. Whether the kept ids name items is checked against the span (Check).
func (o *PalimOutput) Validate() error {
	var errs []string
	if strings.TrimSpace(o.Narrative) == "" && len(o.Knowledge) == 0 && len(o.Keep) == 0 {
		errs = append(errs, "narrative, keep and knowledge are all empty")
	}
	for i, k := range o.Knowledge {
		if strings.TrimSpace(k.Fact) == "" {
			errs = append(errs, fmt.Sprintf("knowledge[%d].fact is empty", i))
		}
		if !k.Evaluation.Valid() {
			errs = append(errs, fmt.Sprintf("knowledge[%d].evaluation is %q; use good, bad or neutral", i, k.Evaluation))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// RecallArgs are the arguments of the recall tool.
type RecallArgs struct {
	Ref string `json:"ref"`
}

// Tool schemas (JSON Schema) of the contracts. They are written loosely (optional fields left out
// of required); hippocam.StrictSchema derives the strict form an OpenAI upstream gets, where
// optional fields are nullable and arrive as null, which the Go types read as absent.
var (
	janusSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"close":{"type":"array","description":"Intents to close, innermost (top of the stack) first; labels exactly as on the stack.","items":{"type":"object","properties":{"label":{"type":"string"},"evidence":{"type":"string","description":"What in the conversation shows the exit condition was met."}},"required":["label"]}},` +
		`"open":{"type":"array","description":"Intents to open, broadest first.","items":{"type":"object","properties":{"label":{"type":"string","description":"The purpose."},"reason":{"type":"string","description":"Why it arises now."},"done":{"type":"string","description":"Exit condition: when it succeeds, and when it fails."}},"required":["label","done"]}},` +
		`"guidance":{"type":"string","description":"First-person guidance for the assistant: what ended, what to pursue next, and when it is done or has failed. Leave it out when skipping."}},"required":[]}`)
	precipSchema = json.RawMessage(`{"type":"object","properties":{"memory":{"type":"string","description":"The self-contained first-person memory that replaces the closed work."}},"required":["memory"]}`)
	palimSchema  = json.RawMessage(`{"type":"object","properties":{` +
		`"narrative":{"type":"string","description":"First person: what I did and what came of it, one undertaking at a time."},` +
		`"keep":{"type":"array","items":{"type":"string"},"description":"Knowledge items of earlier memories in the span that still hold word for word, each named by its memory's ref and its label (r12.K3), or a run of them (r12.K1-K9); each is copied unchanged. Leave out an item you change, merge or revise, and write its new form under knowledge."},` +
		`"knowledge":{"type":"array","description":"New knowledge, and the changed or merged forms of earlier items; not the items listed under keep.","items":{"type":"object","properties":{"fact":{"type":"string","description":"A single claim about a single thing, carrying each particular (names, values, identifiers, dates resolved to the calendar) that pins it down."},"evaluation":{"type":"string","enum":["good","bad","neutral"]},"revises":{"type":"array","items":{"type":"string"},"description":"When this fact replaces different statements of the same subject made in earlier memories, those earlier statements, each quoted; otherwise leave it out."}},"required":["fact","evaluation"]}}},"required":["narrative","knowledge"]}`)
	recallSchema = json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string","description":"A ref from a [ref:…] tag: a memory's ref opens the messages beneath it; a handle of a left-out message or page opens that."}},"required":["ref"]}`)
)

// JanusToolSpec, PrecipToolSpec, PalimToolSpec and RecallToolSpec are the tools the engine
// offers to each role.
var (
	JanusToolSpec  = hippocam.Tool{Name: JanusTool, Description: "Record your decision on the intent stack: close, open, or neither (skip).", Parameters: janusSchema}
	PrecipToolSpec = hippocam.Tool{Name: PrecipTool, Description: "Write the memory that replaces the closed intent's messages.", Parameters: precipSchema}
	PalimToolSpec  = hippocam.Tool{Name: PalimTool, Description: "Write the consolidated memory of the prefix: narrative and knowledge.", Parameters: palimSchema}
	RecallToolSpec = hippocam.Tool{Name: RecallTool, Description: "Open one layer of your archived memory: the messages beneath a [ref:…], oldest first. Large layers come back partly, with a handle for each message left out.", Parameters: recallSchema}
)

// The text format of recall results (recall.go writes it; the simulated model reads it).
// A result starts with a header line, then one block per child. Each block starts with a line
// beginning with ChildMarker. A child shown in full follows its header line; a consolidated child
// shows its own [ref:…] in its text. A child left out shows only a header line carrying its
// handle as [ref:HANDLE] and the word LeftOutMarker.
const (
	ChildMarker   = "--- "
	LeftOutMarker = "left out"
)

// PRECIP and PALIM requests share the main model's: its tools, its system message (with the
// memory instructions) and the context up to the end of the material, then exactly one final user
// message holding the engine's instruction and, unless the role prompts ride in the system message
// (Config.SharedPrompts), the component's role prompt. Sharing the main model's messages lets a
// provider's prompt cache serve the auxiliary calls from the main calls they follow (the Hippocam paper
// §A.9). JANUS reads a view of its own (janusView) behind its role prompt. No request offers a
// tool of its own; the component answers with one JSON object, asked for in prose or natively
// (hippocam.Structured: response_format json_schema, or the contract tool forced; repair.go says
// which role is asked how), and read from the text or from a call of the contract tool.
// Corrections and concise-version requests are part of the final message, never extra messages,
// so the material always ends one message before it. For PRECIP and PALIM the material is only
// the last messages of that prefix, named by the instruction's span lines (below).

// Span marking. The span PRECIP or PALIM consolidates always ends with the last message of the
// shared prefix, so the instruction has only to say where it starts; it says so by quoting, not
// by counting. Nothing is inserted into the shared prefix (it stays byte-identical to the main
// model's, for the provider's cache, and messages carry no ids a model could see). Instead the
// instruction quotes the span's first message and, as a check, its last one, with their roles:
//
//	Span: from the message quoted as its start through the last message above, ...
//	Span start: the latest user message above that begins "(Intent guidance) I now work on…"
//	Span end: the last message above, a tool result that reads "revenue_market := 800"
//
// A quote is the message's text with every run of white space shown as one space (SpanText).
// "begins" quotes its first words, ending with "…"; "reads" quotes the whole text; an assistant
// message without text is named by the tools it calls ("only calls tools: read_file, grep"), and
// when that is not enough, by its calls with their arguments (SpanCallText).
// The lead line also says how many messages the span holds ("Span: the last 7 messages above"),
// a check a model can make at a glance. The start quote is made long enough (80 characters,
// then 160, then 320) that no other message of the prefix reads the same way, or at least no
// later message of the span does. When a message of the span repeats the first one word for word
// (a chat whose every answer reads "Noted."), the start is named by a neighbour of another role
// that reads like no other message instead:
//
//	Span start: the assistant message right after the latest user message above that begins "Chat log, session 3…"
//
// Only when no neighbour serves does the start line add an ordinal ("the 2nd latest ... above"),
// counting among identical messages. The simulated model (sim/request.go) finds the start the same way, and rejects a
// request whose end quote does not match its last message. Rejected alternatives: ids or marks
// written into the messages would change the shared prefix (and what clients see), and a list of
// excerpts of every span message costs tokens in proportion to the span for no gain, since the
// span always runs to the end.
const (
	// SpanCountPrefix begins the lead line, which says how many messages the span holds.
	SpanCountPrefix = "Span: the last "
	SpanStartPrefix = "Span start: the "
	// SpanAfter and SpanBefore name the start by a neighbour: "Span start: the assistant
	// message right after the latest user message above that begins …".
	SpanAfter     = "right after the latest "
	SpanBefore    = "right before the latest "
	SpanEndPrefix = "Span end: the last message above, "
	// SpanLatest and SpanAbove frame the role of the message a start line quotes: "the latest user
	// message above that begins …", or "the 2nd latest …".
	SpanLatest = "latest "
	SpanAbove  = " above "
	// SpanBegins, SpanReads and SpanCalls are the ways a quote is introduced.
	SpanBegins = "that begins "
	SpanReads  = "that reads "
	SpanCalls  = "that only calls tools: "
	// SpanCallArgs introduces the calls of a message with their arguments (SpanCallText), when
	// the tools' names alone do not tell it apart.
	SpanCallArgs = "that only calls tools, with these arguments: "
	// SpanEllipsis ends a "begins" quote.
	SpanEllipsis = "…"
)

// spanQuoteLengths are the lengths, in characters, a start quote may grow through.
var spanQuoteLengths = []int{80, 160, 320}

// SpanText is how a span line quotes message m: its text with runs of white space as one space.
func SpanText(m *hippocam.Message) string { return strings.Join(strings.Fields(m.Content), " ") }

// SpanRole is how span lines name a message's role.
func SpanRole(role hippocam.Role) string {
	switch role {
	case hippocam.RoleAssistant:
		return "assistant message"
	case hippocam.RoleTool:
		return "tool result"
	case hippocam.RoleSystem:
		return "system message"
	}
	return "user message"
}

// SpanCallNames lists the tools an assistant message calls, as span lines name them: by the
// names the model knows them by (a tool of a namespace under its hippocam.FlatName).
func SpanCallNames(m *hippocam.Message) string {
	names := make([]string, len(m.ToolCalls))
	for i, c := range m.ToolCalls {
		names[i] = hippocam.UpstreamCall(c).Name
	}
	return strings.Join(names, ", ")
}

// SpanCallText lists the calls of an assistant message with their arguments, as span lines
// quote them when the tools' names alone do not tell the message apart: "NAME ARGS; NAME ARGS",
// the arguments as compact JSON with sorted keys, so that a client or provider that re-encodes
// them (as Anthropic's does) quotes them the same way. Calls of namespaced and custom tools are
// quoted as the model saw them (hippocam.UpstreamCall).
func SpanCallText(m *hippocam.Message) string {
	calls := make([]string, len(m.ToolCalls))
	for i, c := range m.ToolCalls {
		c = hippocam.UpstreamCall(c)
		calls[i] = c.Name + " " + canonicalJSON(c.Arguments)
	}
	return strings.Join(calls, "; ")
}

// canonicalJSON re-encodes a JSON text compactly with sorted object keys and no HTML escaping;
// text that does not parse is returned trimmed.
func canonicalJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return strings.TrimSpace(s)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return strings.TrimSpace(s)
	}
	return strings.TrimSpace(b.String())
}

// spanQuote is one way of quoting a message: its introduction ("that begins …") and whether a
// message matches it.
type spanQuote struct {
	role  hippocam.Role
	calls bool   // named by the tools it calls
	args  bool   // ... with their arguments (SpanCallText)
	text  string // the quoted text (without the ellipsis), or the tool names or calls
	whole bool   // text is the whole message (or all of its calls)
}

func (q spanQuote) String() string {
	switch {
	case q.calls && !q.args:
		return SpanCalls + q.text
	case q.calls && q.whole:
		return SpanCallArgs + q.text
	case q.calls:
		return SpanCallArgs + q.text + SpanEllipsis
	case q.whole:
		return SpanReads + `"` + q.text + `"`
	}
	return SpanBegins + `"` + q.text + SpanEllipsis + `"`
}

func (q spanQuote) matches(m *hippocam.Message) bool {
	if m.Role != q.role {
		return false
	}
	switch {
	case q.calls:
		if strings.TrimSpace(m.Content) != "" || len(m.ToolCalls) == 0 {
			return false
		}
		if !q.args {
			return SpanCallNames(m) == q.text
		}
		if q.whole {
			return SpanCallText(m) == q.text
		}
		return strings.HasPrefix(SpanCallText(m), q.text)
	}
	return spanTextMatches(m.Content, q.text, q.whole)
}

// spanTextMatches reports whether SpanText of a message with this content equals quote (whole)
// or begins with it, without building SpanText: it walks the content's words and the quote's
// together. Every JANUS and PRECIP request compares quotes with the whole context, so this runs
// for every message of it.
func spanTextMatches(content, quote string, whole bool) bool {
	i, j := 0, 0 // positions in content and quote
	first := true
	for {
		i = skipSpace(content, i)
		if i == len(content) { // no word left in the content
			return j == len(quote)
		}
		if !first {
			if j == len(quote) {
				return !whole
			}
			if quote[j] != ' ' {
				return false
			}
			j++
		}
		first = false
		for i < len(content) {
			r, n := utf8.DecodeRuneInString(content[i:])
			if unicode.IsSpace(r) {
				break
			}
			for k := 0; k < n; k++ {
				if j == len(quote) {
					return !whole
				}
				if content[i+k] != quote[j] {
					return false
				}
				j++
			}
			i += n
		}
	}
}

// skipSpace returns the index of the first byte at or after i that does not begin a space (as
// strings.Fields reads spaces).
func skipSpace(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			return i
		}
		i += n
	}
	return i
}

// quoteOf quotes m in at most limit characters, cut at a word boundary. A message with tool
// calls and no text is named by its tools at the shortest limit, and by its calls with their
// arguments (cut at limit) at longer ones.
func quoteOf(m *hippocam.Message, limit int) spanQuote {
	text := SpanText(m)
	if text == "" && len(m.ToolCalls) > 0 {
		if limit <= spanQuoteLengths[0] {
			return spanQuote{role: m.Role, calls: true, text: SpanCallNames(m)}
		}
		q := cutQuote(SpanCallText(m), limit)
		q.role, q.calls, q.args = m.Role, true, true
		return q
	}
	q := cutQuote(text, limit)
	q.role = m.Role
	return q
}

// cutQuote is text whole when it has at most limit characters, else its beginning, cut at a
// space in the second half of the limit if there is one.
func cutQuote(text string, limit int) spanQuote {
	r := []rune(text)
	if len(r) <= limit {
		return spanQuote{text: text, whole: true}
	}
	cut := limit
	for cut > limit/2 && r[cut] != ' ' {
		cut--
	}
	if r[cut] != ' ' {
		cut = limit
	}
	return spanQuote{text: strings.TrimRight(string(r[:cut]), " ")}
}

// SpanLine is the instruction's span lines for the span context[lo:hi) of a request whose
// prefix ends with context[hi-1]: the lead line, the start line and the end line, as described
// above. Hidden messages (which no request carries) are neither quoted nor compared.
func SpanLine(context []hippocam.Message, lo, hi int) string {
	var shown []*hippocam.Message // the visible messages of context[:hi]
	first := -1                   // index in shown of the span's first message
	for i := range context[:hi] {
		if context[i].Kind.Hidden() {
			continue
		}
		if i >= lo && first < 0 {
			first = len(shown)
		}
		shown = append(shown, &context[i])
	}
	if first < 0 {
		return ""
	}
	count := func(q spanQuote, from int) int {
		n := 0
		for i := from; i < len(shown); i++ {
			if i != first && q.matches(shown[i]) {
				n++
			}
		}
		return n
	}
	var start spanQuote
	found := false
	for _, scope := range []int{0, first + 1} { // unique in the whole prefix, else after the start
		for _, limit := range spanQuoteLengths {
			if q := quoteOf(shown[first], limit); count(q, scope) == 0 {
				start, found = q, true
				break
			}
		}
		if found {
			break
		}
	}
	var startLine string
	switch {
	case found:
		startLine = SpanStartPrefix + SpanLatest + SpanRole(start.role) + SpanAbove + start.String()
	default:
		// The first message reads like another of the prefix ("Noted."): name it by a neighbour
		// that reads like no other message, rather than make the model count repeats.
		if line, ok := spanNeighbourLine(shown, first); ok {
			startLine = line
			break
		}
		start = quoteOf(shown[first], spanQuoteLengths[len(spanQuoteLengths)-1])
		startLine = SpanStartPrefix + ordinal(1+count(start, first+1)) + " " + SpanLatest + SpanRole(start.role) + SpanAbove + start.String()
	}
	end := quoteOf(shown[len(shown)-1], spanQuoteLengths[0])
	return fmt.Sprintf("%s%d %s, from the one quoted as its start through the last one, quoted as its end; what comes before the start is context only. Quotes show line breaks as spaces.\n",
		SpanCountPrefix, len(shown)-first, plural(len(shown)-first, "message above", "messages above")) +
		startLine + "\n" +
		SpanEndPrefix + article(SpanRole(end.role)) + " " + end.String()
}

// spanNeighbourLine names shown[first] as the message right after the message before it, or
// right before the message after it, when that neighbour has another role and a quote that no
// other message of the prefix matches.
func spanNeighbourLine(shown []*hippocam.Message, first int) (string, bool) {
	for _, n := range []struct {
		at  int
		how string
	}{{first - 1, SpanAfter}, {first + 1, SpanBefore}} {
		if n.at < 0 || n.at >= len(shown) || shown[n.at].Role == shown[first].Role {
			continue
		}
		for _, limit := range spanQuoteLengths {
			q := quoteOf(shown[n.at], limit)
			unique := true
			for i := range shown {
				if i != n.at && q.matches(shown[i]) {
					unique = false
					break
				}
			}
			if unique {
				return SpanStartPrefix + SpanRole(shown[first].Role) + " " + n.how + SpanRole(q.role) + SpanAbove + q.String(), true
			}
		}
	}
	return "", false
}

// article puts "a" or "an" before a role's name.
func article(name string) string {
	if strings.HasPrefix(name, "a") {
		return "an " + name
	}
	return "a " + name
}

// ordinal writes n as "2nd", "3rd", "11th".
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// ClosingPrefix starts the line of PRECIP's instruction that names the intents being closed,
// innermost first, separated by ChainSeparator.
const (
	ClosingPrefix  = "Closing: "
	ChainPrefix    = "Intent chain: "
	ChainSeparator = " > "
)

// A consolidated message (intent or prefix memory) always begins with its own [ref:ID] tag; the
// simulated model relies on this to tell memories from other user messages.

// ImpressionSuffix ends an impression line: "detail KEY (in the archive)" says that a detail
// about KEY sits in the archive beneath the memory that carries the line.
const ImpressionSuffix = " (in the archive)"
