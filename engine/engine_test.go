package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// The docs/sim.md example, with enough rows that the window fills: the later value wins, a detail is
// recalled from the archive, and a key nothing names is unknown without any recall.
func TestStepInvoice(t *testing.T) {
	c := newConversation(t, mustEngine(t, gateWindow(8000), mustSim(t)))
	c.mustUser("#open Prepare the invoice report | the report is sent\n#open Read the exports | both exports are read\nStart with the exports.")
	if got := c.session().Stack.Labels(); strings.Join(got, ">") != "Prepare the invoice report>Read the exports" {
		t.Fatalf("stack = %v", got)
	}
	c.mustUser("!call read_file {\"path\":\"exports/shop.csv\"}\n!call read_file {\"path\":\"exports/market.csv\"}")
	if n := len(c.answer.ToolCalls); n != 2 {
		t.Fatalf("answer has %d tool calls, want 2 parallel calls", n)
	}
	c.mustResults("revenue_shop := 1200\ndetail shop_owner := Dana\n"+filler("shop", 60), "revenue_market := 800\n"+filler("market", 50))
	res := c.mustUser("#close Read the exports\n#open Write the report | the report file exists\nrevenue_shop := 1250\n!say corrected the shop revenue")
	if res.IntentConsolidations != 1 {
		t.Fatalf("closing an intent committed %d intent consolidations, want 1", res.IntentConsolidations)
	}
	c.mustUser("#close Write the report\n#close Prepare the invoice report\n!say done")
	if got := c.session().Stack; len(got) != 0 {
		t.Fatalf("stack = %v, want empty", got.Labels())
	}
	for _, tc := range []struct {
		ask, want string
		recalls   bool
	}{
		{"!ask revenue_shop", "revenue_shop := 1250", false},
		{"!ask shop_owner", "shop_owner := Dana", true},
		{"!ask shop_manager", "shop_manager := unknown", false},
	} {
		res := c.mustUser(tc.ask)
		if res.Answer.Content != tc.want {
			t.Errorf("%s: answer %q, want %q", tc.ask, res.Answer.Content, tc.want)
		}
		// Nothing names shop_manager: one search, which finds nothing, and no recall.
		if opened := res.RecallCalls - res.SearchCalls; (opened > 0) != tc.recalls {
			t.Errorf("%s: %d recall calls (%d searches), want recall=%v", tc.ask, res.RecallCalls, res.SearchCalls, tc.recalls)
		}
		if tc.recalls && len(res.Answer.Trace) == 0 {
			t.Errorf("%s: the answer carries no recall trace", tc.ask)
		}
	}
	s := c.session()
	for _, m := range s.Context {
		if m.Role == hippocam.RoleTool || (m.Role == hippocam.RoleAssistant && len(m.ToolCalls) > 0 && m.ToolCalls[0].Name == engine.RecallTool) {
			if m.Role == hippocam.RoleAssistant || m.ToolCallID != "" && strings.HasPrefix(m.Content, "Recall of") {
				t.Fatalf("a recall exchange stayed in the context: %s", clip(m.Content))
			}
		}
	}
	c.checkLossless()
}

// Long sessions stay within the window: every request fits, the prefix folds, nothing is lost.
func TestStepLongSessionFolds(t *testing.T) {
	c := newConversation(t, mustEngine(t, gateWindow(8000), mustSim(t)))
	maxReq := 0
	for k := 0; k < 14; k++ {
		c.mustUser(fmt.Sprintf("#open Batch %d | batch %d is stored\n!call store {\"batch\":%d}", k, k, k))
		res := c.mustResults(fmt.Sprintf("batch_%d := %d\ndetail batch_%d_checksum := c%04d\n%s", k, 100+k, k, k*31, filler("b", 40)))
		maxReq = max(maxReq, res.MaxRequestTokens)
		res = c.mustUser(fmt.Sprintf("#close Batch %d\n!say stored %d", k, k))
		maxReq = max(maxReq, res.MaxRequestTokens)
		// Work outside any intent stays raw until PALIM folds it.
		c.mustUser(fmt.Sprintf("!call tail_log {\"batch\":%d}", k))
		res = c.mustResults(fmt.Sprintf("log_%d := line %d\n%s", k, k*7, filler("log", 45)))
		maxReq = max(maxReq, res.MaxRequestTokens)
	}
	s := c.session()
	if s.Consolidations.Intent < 10 || s.Consolidations.Prefix < 1 {
		t.Fatalf("consolidations = %+v, want many intent and some prefix", s.Consolidations)
	}
	for _, q := range []struct{ ask, want string }{
		{"!ask batch_0", "batch_0 := 100"},
		{"!ask batch_13", "batch_13 := 113"},
		{"!ask batch_1_checksum", "batch_1_checksum := c0031"},
		{"!ask batch_12_checksum", "batch_12_checksum := c0372"},
		{"!ask log_0", "log_0 := line 0"},
		{"!ask log_11", "log_11 := line 77"},
	} {
		res := c.mustUser(q.ask)
		maxReq = max(maxReq, res.MaxRequestTokens)
		if res.Answer.Content != q.want {
			t.Errorf("%s = %q, want %q", q.ask, res.Answer.Content, q.want)
		}
	}
	if maxReq > 8000 {
		t.Fatalf("largest request %d tokens exceeds the window", maxReq)
	}
	c.checkLossless()
}

func TestStepCapacity(t *testing.T) {
	c := newConversation(t, mustEngine(t, gateWindow(3000), mustSim(t)))
	c.mustUser("!say hello")
	before := c.session()
	_, err := c.user(filler("huge", 300))
	if hippocam.ErrorCode(err) != hippocam.ECAPACITY {
		t.Fatalf("err = %v, want a capacity error", err)
	}
	after := c.session()
	if after.Version != before.Version || len(after.Context) != len(before.Context) {
		t.Fatal("a failed step changed the session")
	}
}

func TestStepBadInput(t *testing.T) {
	c := newConversation(t, mustEngine(t, gateWindow(8000), mustSim(t)))
	for name, msgs := range map[string][]hippocam.Message{
		"ErrEmpty":        nil,
		"ErrOrphanResult": {{Role: hippocam.RoleTool, Content: "x", ToolCallID: "nope"}},
		"ErrAssistant":    {{Role: hippocam.RoleAssistant, Content: "x"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.send(msgs...)
			if hippocam.ErrorCode(err) != hippocam.EINVALID {
				t.Fatalf("err = %v, want EINVALID", err)
			}
		})
	}
	c.mustUser("!call read_file {\"path\":\"a\"}\n!call read_file {\"path\":\"b\"}")
	if _, err := c.user("next"); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("a user message while calls wait: err = %v, want EINVALID", err)
	}
	if _, err := c.send(hippocam.Message{Role: hippocam.RoleTool, Content: "a", ToolCallID: c.answer.ToolCalls[0].ID}); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("half the results: err = %v, want EINVALID", err)
	}
	c.mustResults("a", "b")
	c.checkLossless()
}

// Every component's broken output is repaired within the bound, then given up safely: the stack
// unchanged, the span intact, the step completed.
func TestComponentFaults(t *testing.T) {
	bad := map[string]hippocam.Message{
		"Malformed":      toolAnswer("x", "{"),
		"Empty":          {Role: hippocam.RoleAssistant},
		"Truncated":      {Role: hippocam.RoleAssistant},
		"SchemaViolated": {Role: hippocam.RoleAssistant},
		"NoToolCall":     {Role: hippocam.RoleAssistant, Content: "I think the memory is fine."},
	}
	shapes := map[hippocam.CallRole]map[string]string{
		hippocam.CallJanus:  {"Malformed": "{", "Empty": "", "Truncated": `{"close":[{"label":"Rea`, "SchemaViolated": `{"close":"all","open":5}`},
		hippocam.CallPrecip: {"Malformed": "{", "Empty": `{"memory":""}`, "Truncated": `{"memory":"I read the`, "SchemaViolated": `{"memory":42}`},
		hippocam.CallPalim:  {"Malformed": "{", "Empty": `{"narrative":"","knowledge":[]}`, "Truncated": `{"narrative":"I`, "SchemaViolated": `{"narrative":"x","knowledge":[{"fact":"a := 1","evaluation":"great"}]}`},
	}
	tools := map[hippocam.CallRole]string{hippocam.CallJanus: engine.JanusTool, hippocam.CallPrecip: engine.PrecipTool, hippocam.CallPalim: engine.PalimTool}
	for role, byName := range shapes {
		for name := range bad {
			t.Run(string(role)+"/"+name, func(t *testing.T) {
				out := bad[name]
				if args, ok := byName[name]; ok {
					out = toolAnswer(tools[role], args)
				}
				f := &faulty{inner: mustSim(t), role: role, outputs: []hippocam.Message{out}}
				cfg := gateWindow(8000)
				c := newConversation(t, mustEngine(t, cfg, f))
				runFaultSession(t, c, role)
				if want := 1 + cfg.Corrections; f.calls%want != 0 || f.calls == 0 {
					t.Fatalf("%s called %d times; want a multiple of 1+%d corrections", role, f.calls, cfg.Corrections)
				}
				last := f.seen[len(f.seen)-1]
				instr := last.Messages[len(last.Messages)-1].Content
				if !strings.Contains(instr, "rejected") {
					t.Fatalf("the correction request does not quote the rejection: %q", clip(instr))
				}
				s := c.session()
				switch role {
				case hippocam.CallJanus:
					if len(s.Stack) != 0 {
						t.Fatalf("stack changed to %v although JANUS never answered validly", s.Stack.Labels())
					}
				case hippocam.CallPrecip:
					if s.Consolidations.Intent != 0 {
						t.Fatalf("%d intent consolidations committed from broken output", s.Consolidations.Intent)
					}
				case hippocam.CallPalim:
					if s.Consolidations.Prefix != 0 {
						t.Fatalf("%d prefix consolidations committed from broken output", s.Consolidations.Prefix)
					}
				}
				c.checkLossless()
			})
		}
	}
}

func runFaultSession(t *testing.T, c *conversation, role hippocam.CallRole) {
	t.Helper()
	for k := 0; k < 4; k++ {
		c.mustUser(fmt.Sprintf("#open Task %d | task %d is done\n!call work {\"n\":%d}", k, k, k))
		c.mustResults(fmt.Sprintf("task_%d := ok\n%s", k, filler("t", 25)))
		c.mustUser(fmt.Sprintf("#close Task %d\n!say finished %d", k, k))
		c.mustUser(fmt.Sprintf("!call look {\"n\":%d}", k))
		c.mustResults(fmt.Sprintf("look_%d := seen\n%s", k, filler("l", 40)))
	}
	res := c.mustUser("!ask task_0")
	if res.Answer.Content != "task_0 := ok" {
		t.Fatalf("after %s faults, !ask task_0 = %q", role, res.Answer.Content)
	}
}

// A recall of an unknown ref is a tool error for the model; the step completes and nothing else
// changes.
func TestRecallUnknownRef(t *testing.T) {
	f := &faulty{inner: mustSim(t), role: hippocam.CallAgent, outputs: []hippocam.Message{
		toolAnswer(engine.RecallTool, `{"ref":"r999"}`),
		{Role: hippocam.RoleAssistant, Content: "nothing there"},
	}}
	c := newConversation(t, mustEngine(t, gateWindow(8000), f))
	res := c.mustUser("what was it?")
	if res.RecallCalls != 1 || len(res.Answer.Trace) != 2 {
		t.Fatalf("recall calls %d, trace %d; want 1 and 2", res.RecallCalls, len(res.Answer.Trace))
	}
	if got := res.Answer.Trace[1].Content; !strings.Contains(got, "Recall error") || !strings.Contains(got, "r999") {
		t.Fatalf("recall result = %q, want a clear error naming r999", got)
	}
	// The exchanges are reinforced: a memory of what the answer drew on stands between the
	// question and the answer, with the exchanges beneath it.
	s := c.session()
	if len(s.Context) != 3 || s.Context[1].Kind != hippocam.KindIntentMemory || s.Context[2].ID != res.Answer.ID {
		t.Fatalf("context holds %d messages, want the question, the memory of the recall and the answer", len(s.Context))
	}
	kids, err := c.st.Children(context.Background(), "", c.id, s.Context[1].Ref)
	if err != nil || len(kids) != 2 || kids[0].Kind != hippocam.KindRecall || kids[1].Kind != hippocam.KindRecall {
		t.Fatalf("beneath the memory: %v %+v", err, kids)
	}
}

// scripted passes calls to the simulated model until armed, then answers the main model's calls
// from its script, in order (the last one repeated).
type scripted struct {
	inner  hippocam.Model
	armed  bool
	script []hippocam.Message
	n      int
}

func (s *scripted) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if !s.armed || req.Role != hippocam.CallAgent {
		return s.inner.Complete(ctx, req)
	}
	out := s.script[min(s.n, len(s.script)-1)]
	s.n++
	return &hippocam.Response{Message: out, FinishReason: "stop"}, nil
}

// A recall made beside several other tool calls in a small window never produces an over-long
// request and never fails the step: the siblings' notes are reserved before the result is sized,
// and the step ends with an answer.
func TestRecallWithSiblingCalls(t *testing.T) {
	m := &scripted{inner: mustSim(t)}
	c := newConversation(t, mustEngine(t, gateWindow(5000), m))
	c.mustUser("#open Collect | all collected\n!say start")
	for i := 0; i < 60; i++ {
		c.mustUser(fmt.Sprintf("!say item %d of the collection, with a few more words to fill the line", i))
	}
	c.mustUser("#close Collect\n!say done")
	ref := ""
	for _, msg := range c.session().Context {
		if msg.Consolidated() {
			ref = msg.Ref
		}
	}
	if ref == "" {
		t.Fatal("nothing was consolidated")
	}
	calls := []hippocam.ToolCall{{ID: "a", Name: engine.RecallTool, Arguments: fmt.Sprintf(`{"ref":%q}`, ref)}}
	for i, name := range []string{"some_agent_tool_with_a_long_name", "another_agent_tool_with_a_long_name", "third_tool", "fourth_tool", "fifth_tool"} {
		calls = append(calls, hippocam.ToolCall{ID: fmt.Sprint("s", i), Name: name, Arguments: `{}`})
	}
	m.armed = true
	m.script = []hippocam.Message{{Role: hippocam.RoleAssistant, ToolCalls: calls}, {Role: hippocam.RoleAssistant, Content: "done"}}
	res := c.mustUser("what did I collect?")
	if res.Answer.Content != "done" || res.MaxRequestTokens > 5000 {
		t.Fatalf("answer %q, max request %d", res.Answer.Content, res.MaxRequestTokens)
	}
	c.checkLossless()
}

// Many prefix folds keep the tree shallow (balanced folds): the depth grows with the logarithm of
// the number of folds, and a detail from the first round is still recalled.
func TestFoldsStayShallow(t *testing.T) {
	c := newConversation(t, mustEngine(t, gateWindow(6000), mustSim(t)))
	c.mustUser("detail first_secret := s-0001\n!say noted")
	for k := 0; k < 60; k++ {
		c.mustUser(fmt.Sprintf("!call look {\"n\":%d}", k))
		c.mustResults(fmt.Sprintf("look_%d := seen\n%s", k, filler("l", 25)))
	}
	s := c.session()
	if s.Consolidations.Prefix < 8 {
		t.Fatalf("%d prefix folds; the test needs many", s.Consolidations.Prefix)
	}
	arch := hippocam.SessionArchive(c.st, "", c.id)
	var depth func(ms []hippocam.Message) int
	depth = func(ms []hippocam.Message) int {
		d := 0
		for _, m := range ms {
			if m.Consolidated() {
				kids, err := arch.Children(context.Background(), m.Ref)
				if err != nil {
					t.Fatal(err)
				}
				d = max(d, 1+depth(kids))
			}
		}
		return d
	}
	bound := 2
	for n := 1; n < s.Consolidations.Prefix; n *= 2 {
		bound++
	}
	if d := depth(s.Context); d > bound {
		t.Fatalf("tree depth %d after %d folds; want at most %d", d, s.Consolidations.Prefix, bound)
	}
	if res := c.mustUser("!ask first_secret"); res.Answer.Content != "first_secret := s-0001" {
		t.Fatalf("answer %q", res.Answer.Content)
	}
	c.checkLossless()
}
