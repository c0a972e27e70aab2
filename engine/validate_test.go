package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// byCall answers the calls of one role as script says, by call number (from 0): a nil reply
// passes the call on to the simulated model. It records the requests of that role.
type byCall struct {
	inner  hippocam.Model
	role   hippocam.CallRole
	script func(n int, req *hippocam.Request) *reply
	mu     sync.Mutex
	calls  int
	seen   []*hippocam.Request
}

type reply struct {
	msg hippocam.Message
	err error
}

func (s *byCall) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if req.Role != s.role {
		return s.inner.Complete(ctx, req)
	}
	s.mu.Lock()
	n := s.calls
	s.calls++
	s.seen = append(s.seen, req)
	s.mu.Unlock()
	r := s.script(n, req)
	switch {
	case r == nil:
		return s.inner.Complete(ctx, req)
	case r.err != nil:
		return nil, r.err
	}
	return &hippocam.Response{Message: r.msg, FinishReason: "stop", Usage: hippocam.CallUsage{Input: 10, Output: 5}}, nil
}

// instruction returns the final message of the i-th recorded request (negative: from the end).
func (s *byCall) instruction(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 {
		i += len(s.seen)
	}
	msgs := s.seen[i].Messages
	return msgs[len(msgs)-1].Content
}

// badOutput is one broken answer of a component and the words its repair request must quote.
type badOutput struct {
	kind   string // malformed, empty, truncated, schema-violating or implausible
	out    hippocam.Message
	reason string
}

func badOutputs(role hippocam.CallRole) []badOutput {
	tool := map[hippocam.CallRole]string{hippocam.CallJanus: engine.JanusTool, hippocam.CallPrecip: engine.PrecipTool, hippocam.CallPalim: engine.PalimTool}[role]
	call := func(args string) hippocam.Message { return toolAnswer(tool, args) }
	common := []badOutput{
		{"Malformed", call("{"), "arguments are not valid JSON"},
		{"Empty", hippocam.Message{Role: hippocam.RoleAssistant}, "the answer holds no JSON object"},
	}
	switch role {
	case hippocam.CallJanus:
		many := make([]string, 40)
		for i := range many {
			many[i] = fmt.Sprintf(`{"label":"Step %d","done":"never"}`, i)
		}
		return append(common,
			badOutput{"Truncated", call(`{"close":[{"label":"Rea`), "unexpected EOF"},
			badOutput{"SchemaViolated", call(`{"close":"all","open":5}`), "cannot unmarshal"},
			badOutput{"ImplausibleDepth", call(`{"close":[],"open":[` + strings.Join(many, ",") + `],"guidance":"I do everything."}`),
				"opening 40 intents would make the stack 42 deep; at most 8"},
			badOutput{"ImplausibleNever", call(`{"close":[],"open":[{"label":"Wait","done":"never"}],"guidance":"I wait."}`),
				`open "Wait": the exit condition "never" can never hold`},
			badOutput{"ImplausibleLabelAsCondition", call(`{"close":[],"open":[{"label":"Read the log","done":"read the log."}],"guidance":"I read."}`),
				"only repeats the label"},
			badOutput{"ImplausibleReopen", call(`{"close":[{"label":"Inner"}],"open":[{"label":"inner","done":"it is done"}],"guidance":"Again."}`),
				"this answer closes that purpose"},
			badOutput{"ImplausibleOpenTwice", call(`{"close":[],"open":[{"label":"Outer","done":"it is done"}],"guidance":"Again."}`),
				"already on the stack"},
		)
	case hippocam.CallPrecip:
		return append(common,
			badOutput{"Truncated", call(`{"memory":"I read the`), "unexpected EOF"},
			badOutput{"SchemaViolated", call(`{"memory":42}`), "cannot unmarshal number"},
			badOutput{"ImplausibleRef", call(`{"memory":"I finished the task; its rows are beneath [ref:r999]."}`),
				`the memory names "[ref:r999]", which the span does not hold`},
			badOutput{"ImplausibleFact", call(`{"memory":"I finished the task.\nprice := 33"}`),
				`the memory states "price := 33", which no line of the span states`},
			badOutput{"ImplausibleNumber", call(`{"memory":"I finished the task: the invoice total was 98765 in ledger_v7."}`),
				`the memory names "98765", "ledger_v7", which appear nowhere in the span`},
		)
	default:
		return append(common,
			badOutput{"Truncated", call(`{"narrative":"I`), "unexpected EOF"},
			badOutput{"SchemaViolated", call(`{"narrative":"x","knowledge":[{"fact":"a := 1","evaluation":"great"}]}`), `evaluation is "great"`},
			badOutput{"ImplausibleRef", call(`{"narrative":"I worked; see [ref:r999].","knowledge":[]}`),
				`the narrative names "[ref:r999]", which the span does not hold`},
			badOutput{"ImplausibleFact", call(`{"narrative":"I worked.","knowledge":[{"fact":"price := 33","evaluation":"neutral"}]}`),
				`knowledge[0] states "price := 33", which no line of the span states`},
			badOutput{"ImplausibleIdentifier", call(`{"narrative":"I worked.","knowledge":[{"fact":"The build uses acme_v9 from /opt/acme/bin","evaluation":"good"}]}`),
				`knowledge[0] names "acme_v9", "opt/acme/bin", which appear nowhere in the span`},
		)
	}
}

// Every broken or implausible component answer is repaired with its reason quoted, within the
// bound, then given up: the stack or the span stays as it was, and the step still answers.
func TestBadComponentOutput(t *testing.T) {
	for _, role := range []hippocam.CallRole{hippocam.CallJanus, hippocam.CallPrecip, hippocam.CallPalim} {
		for _, bad := range badOutputs(role) {
			t.Run(string(role)+"/"+bad.kind, func(t *testing.T) {
				cfg := gateWindow(8000)
				f := &byCall{inner: mustSim(t), role: role, script: func(int, *hippocam.Request) *reply { return &reply{msg: bad.out} }}
				if role == hippocam.CallJanus {
					// The first JANUS call is the simulated one and opens two intents; every
					// later one is broken.
					f.script = func(n int, _ *hippocam.Request) *reply {
						if n == 0 {
							return nil
						}
						return &reply{msg: bad.out}
					}
				}
				c := newConversation(t, mustEngine(t, cfg, f))
				if role == hippocam.CallJanus {
					checkJanusUnchanged(t, c, f, cfg, bad)
					return
				}
				runFaultSession(t, c, role) // every step answers, and the last one right
				if f.calls == 0 || f.calls%(1+cfg.Corrections) != 0 {
					t.Fatalf("%s called %d times; want a multiple of 1+%d corrections", role, f.calls, cfg.Corrections)
				}
				checkQuoted(t, f.instruction(-1), bad.reason)
				s := c.session()
				for _, m := range s.Context {
					if (role == hippocam.CallPrecip && m.Kind == hippocam.KindIntentMemory) || (role == hippocam.CallPalim && m.Kind == hippocam.KindPrefixMemory) {
						t.Fatalf("a %s memory was committed from a rejected answer: %s", m.Kind, clip(m.Content))
					}
				}
				c.checkLossless()
			})
		}
	}
}

// checkJanusUnchanged opens two intents through the simulated JANUS, then sends a step whose
// JANUS answers are all broken: the stack stays as it was and the step answers.
func checkJanusUnchanged(t *testing.T, c *conversation, f *byCall, cfg engine.Config, bad badOutput) {
	t.Helper()
	c.mustUser("#open Outer | the report is sent\n#open Inner | the exports are read\n!say started")
	before := c.session().Stack
	if len(before) != 2 {
		t.Fatalf("stack %v after the opening step, want two intents", before.Labels())
	}
	res := c.mustUser("!say still here")
	if res.Answer.Content != "still here" {
		t.Fatalf("answer %q, want the step to answer as usual", res.Answer.Content)
	}
	if res.JanusFailures != 1 {
		t.Fatalf("JanusFailures = %d, want 1", res.JanusFailures)
	}
	if got := f.calls - 1; got != 1+cfg.Corrections {
		t.Fatalf("JANUS asked %d times in the broken step, want 1+%d corrections", got, cfg.Corrections)
	}
	checkQuoted(t, f.instruction(-1), bad.reason)
	after := c.session()
	if fmt.Sprint(after.Stack) != fmt.Sprint(before) {
		t.Fatalf("stack %v, want it unchanged: %v", after.Stack.Labels(), before.Labels())
	}
	for _, m := range after.Context[len(after.Context)-2:] {
		if m.Kind == hippocam.KindGuidance {
			t.Fatalf("guidance appended from a rejected answer: %s", m.Content)
		}
	}
	c.checkLossless()
}

// checkQuoted checks that a repair request quotes the rejection and its reason.
func checkQuoted(t *testing.T, instruction, reason string) {
	t.Helper()
	i := strings.Index(instruction, "Your previous answer was rejected: ")
	if i < 0 {
		t.Fatalf("the last request is no repair request: %q", clip(instruction))
	}
	if !strings.Contains(instruction[i:], reason) {
		t.Fatalf("the repair request does not quote %q:\n%s", reason, instruction[i:])
	}
}

func TestImpossibleCondition(t *testing.T) {
	for _, tt := range []struct {
		label, done string
		bad         bool
	}{
		{"Read the exports", "both exports are read", false},
		{"Fix the parser", "the tests pass, or the bug turns out to be elsewhere", false},
		{"Wait", "never", true},
		{"Wait", "  Never. ", true},
		{"Wait", "N/A", true},
		{"Wait", "(none)", true},
		{"Wait", "...", true},
		{"Wait", "no exit condition", true},
		{"Read the log", "Read the log", true},
		{"Wait", "", false}, // empty is IntentStack.Apply's to reject
	} {
		if got := engine.ImpossibleCondition(tt.label, tt.done) != ""; got != tt.bad {
			t.Errorf("ImpossibleCondition(%q, %q) = %v, want %v", tt.label, tt.done, got, tt.bad)
		}
	}
}

func TestCheckJanus(t *testing.T) {
	stack := hippocam.IntentStack{{Label: "A", Done: "a", Start: "m1"}, {Label: "B", Done: "b", Start: "m2"}}
	open := func(n int) []hippocam.Intent {
		out := make([]hippocam.Intent, n)
		for i := range out {
			out[i] = hippocam.Intent{Label: fmt.Sprintf("I%d", i), Done: "it is done"}
		}
		return out
	}
	// Within the bound, and closing first makes room.
	if next, _, err := engine.CheckJanus(stack, hippocam.StackOps{Open: open(6)}, "m9", 8); err != nil || len(next) != 8 {
		t.Fatalf("6 opens on 2: %v, %d deep", err, len(next))
	}
	if next, closed, err := engine.CheckJanus(stack, hippocam.StackOps{Close: []hippocam.Closure{{Label: "B"}}, Open: open(7)}, "m9", 8); err != nil || len(next) != 8 || len(closed) != 1 {
		t.Fatalf("close 1, open 7 on 2: %v, %d deep", err, len(next))
	}
	// Beyond it: rejected as a whole, the stack unchanged.
	next, closed, err := engine.CheckJanus(stack, hippocam.StackOps{Open: open(7)}, "m9", 8)
	if err == nil || !strings.Contains(err.Error(), "opening 7 intents would make the stack 9 deep; at most 8") || len(next) != 2 || closed != nil {
		t.Fatalf("7 opens on 2: %v, %d deep", err, len(next))
	}
	// Closing is always allowed, even on a stack deeper than the bound.
	if _, _, err := engine.CheckJanus(stack, hippocam.StackOps{Close: []hippocam.Closure{{Label: "B"}}}, "m9", 1); err != nil {
		t.Fatalf("closing on an over-deep stack: %v", err)
	}
	// Every reason at once.
	_, _, err = engine.CheckJanus(stack, hippocam.StackOps{Close: []hippocam.Closure{{Label: "A"}}, Open: []hippocam.Intent{{Label: "C", Done: "none"}}}, "m9", 8)
	if err == nil || !strings.Contains(err.Error(), `"none" can never hold`) || !strings.Contains(err.Error(), `close "A"`) {
		t.Fatalf("two reasons: %v", err)
	}
}

func TestConfigMaxDepth(t *testing.T) {
	cfg := gateWindow(8000)
	if cfg.MaxDepth != engine.DefaultMaxDepth || engine.DefaultMaxDepth != 8 {
		t.Fatalf("MaxDepth = %d, want the default 8", cfg.MaxDepth)
	}
	cfg.MaxDepth = 0
	if err := cfg.Validate(); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("MaxDepth 0: %v, want EINVALID", err)
	}
}

// What a real model writes is checked for what can be checked: refs, numbers and identifiers
// must come from the span, however they are worded around.
func TestGrounding(t *testing.T) {
	span := []hippocam.Message{
		{ID: "m3", Role: hippocam.RoleUser, Content: "Read exports/shop.csv and check rows 12 to 15."},
		{ID: "m4", Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"exports/shop.csv"}`}}},
		{ID: "m5", Role: hippocam.RoleTool, ToolCallID: "c1", Content: "revenue_shop := 1200\ndetail shop_owner := Dana\nversion 2.4.1 of config.yaml"},
		{ID: "m6", Ref: "r2", Role: hippocam.RoleUser, Content: "[ref:r2] Memory of my finished work.\n- [neutral] region := north"},
	}
	instruction := "Closing: Check build 77"
	ok := []string{
		"I read exports/shop.csv: revenue_shop := 1200, as [ref:r2] and [ref:m5] show.",
		"revenue_shop := 1200",
		"region := north",
		"shop_owner := Dana",
		"Revenue was 1,200 in rows 12-15 of shop.csv; config.yaml is at 2.4.1 (build 77), e.g. for the owner.",
		"detail shop_owner (in the archive)",
	}
	for _, memory := range ok {
		if err := (&engine.PrecipOutput{Memory: memory}).Check(span, 0, instruction); err != nil {
			t.Errorf("PRECIP %q: %v", memory, err)
		}
		out := engine.PalimOutput{Narrative: "I read the export.", Knowledge: []hippocam.KnowledgeItem{{Fact: memory, Evaluation: hippocam.EvalNeutral}}}
		if err := out.Check(span, 0, instruction); err != nil {
			t.Errorf("PALIM %q: %v", memory, err)
		}
	}
	bad := map[string]string{
		"revenue_shop := 1250":                    `"revenue_shop := 1250"`,
		"Revenue was 1300.":                       `"1300"`,
		"See exports/market.csv.":                 `"exports/market.csv"`,
		"It is in [ref:r9].":                      `"[ref:r9]"`,
		"The owner is in shop_owners.":            `"shop_owners"`,
		"Version 2.5.0 is current":                `"2.5.0"`,
		"- [good] price := 19":                    `"price := 19"`,
		"Build 78 failed.":                        `"78"`,
		"Rows live in /var/data/exports/shop.csv": `"var/data/exports/shop.csv"`,
	}
	for memory, quoted := range bad {
		err := (&engine.PrecipOutput{Memory: memory}).Check(span, 0, instruction)
		if err == nil || !strings.Contains(err.Error(), quoted) {
			t.Errorf("PRECIP %q: %v, want a rejection quoting %s", memory, err, quoted)
		}
	}
	// The narrative may count and summarise; only its refs are checked.
	out := engine.PalimOutput{Narrative: "I did 3 things in 2 messages.", Knowledge: []hippocam.KnowledgeItem{}}
	if err := out.Check(span, 0, ""); err != nil {
		t.Errorf("narrative with counts: %v", err)
	}
}
