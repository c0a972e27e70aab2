package engine

import (
	"encoding/json"
	"fmt"
	"strings"

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
type JanusOutput struct {
	Close    []JanusClosure `json:"close"`
	Open     []JanusOpening `json:"open"`
	Guidance string         `json:"guidance"`
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

// PalimOutput is PALIM's answer: a narrative of undertakings and knowledge items.
type PalimOutput struct {
	Narrative string                   `json:"narrative"`
	Knowledge []hippocam.KnowledgeItem `json:"knowledge"`
}

// Validate checks every knowledge item has a fact and a known evaluation, and that something
// is said at all.
func (o *PalimOutput) Validate() error {
	var errs []string
	if strings.TrimSpace(o.Narrative) == "" && len(o.Knowledge) == 0 {
		errs = append(errs, "both narrative and knowledge are empty")
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

// Tool schemas (JSON Schema) of the contracts.
var (
	janusSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"close":{"type":"array","description":"Intents to close, innermost (top of the stack) first; labels exactly as on the stack.","items":{"type":"object","properties":{"label":{"type":"string"},"evidence":{"type":"string","description":"What in the conversation shows the exit condition was met."}},"required":["label"]}},` +
		`"open":{"type":"array","description":"Intents to open, broadest first.","items":{"type":"object","properties":{"label":{"type":"string","description":"The purpose."},"reason":{"type":"string","description":"Why it arises now."},"done":{"type":"string","description":"Exit condition: when it succeeds, and when it fails."}},"required":["label","done"]}},` +
		`"guidance":{"type":"string","description":"First-person guidance for the assistant: what ended, what to pursue next, and when it is done or has failed. Empty when skipping."}},"required":["close","open","guidance"]}`)
	precipSchema = json.RawMessage(`{"type":"object","properties":{"memory":{"type":"string","description":"The self-contained first-person memory that replaces the closed work."}},"required":["memory"]}`)
	palimSchema  = json.RawMessage(`{"type":"object","properties":{` +
		`"narrative":{"type":"string","description":"First person: what I did and what came of it, one undertaking at a time."},` +
		`"knowledge":{"type":"array","items":{"type":"object","properties":{"fact":{"type":"string","description":"One statement about one subject, with every particular that identifies it."},"evaluation":{"type":"string","enum":["good","bad","neutral"]}},"required":["fact","evaluation"]}}},"required":["narrative","knowledge"]}`)
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

// Every JANUS, PRECIP and PALIM request has the same shape: the main model's own request prefix
// (its system message with the memory instructions, the context up to the end of the material,
// the same tools), then exactly one final user message holding the component's role prompt and
// the engine's instruction. Sharing the main model's prefix lets a provider's prompt cache serve
// the auxiliary calls (seed 000 §A.9); the tools are offered with tool_choice "none", and the
// component answers with one JSON object in its text (a call of its contract tool is accepted
// too). Corrections and concise-version requests are part of the final message, never extra
// messages, so the material always ends one message before it. For PRECIP and PALIM the material
// is only the last messages of that prefix: the instruction's line SpanPrefix says how many.

// SpanPrefix starts the instruction line "Span: the last N messages above." that tells PRECIP and
// PALIM which messages of their request are the span to consolidate.
const SpanPrefix = "Span: the last "

// SpanLine is the instruction line naming the last n messages as the span.
func SpanLine(n int) string { return fmt.Sprintf("%s%d messages above.", SpanPrefix, n) }

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
