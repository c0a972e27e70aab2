package sim_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
)

// TestInvoiceExample walks docs/sim.md's tiny invoice scenario at the level of model calls, playing
// the engine by hand: it sends each role the request the engine would send and feeds the
// simulation's own memories into the later requests.
func TestInvoiceExample(t *testing.T) {
	m := mustModel(t)
	var ctx []wire.ChatMessage // the managed context, without the agent's system prompt
	say := func(msgs ...wire.ChatMessage) { ctx = append(ctx, msgs...) }

	janusOps := func(wantClose []string, wantOpen ...[2]string) string {
		t.Helper()
		out := janusCall(t, m, janusInstruction, ctx...)
		var gotClose []string
		for _, c := range out.Close {
			gotClose = append(gotClose, c.Label)
		}
		var gotOpen [][2]string
		for _, o := range out.Open {
			gotOpen = append(gotOpen, [2]string{o.Label, o.Done})
		}
		if !reflect.DeepEqual(gotClose, wantClose) || !reflect.DeepEqual(gotOpen, wantOpen) {
			t.Fatalf("janus closes %q opens %q, want %q %q", gotClose, gotOpen, wantClose, wantOpen)
		}
		return "(Intent guidance) " + out.Guidance
	}
	agent := func(noRecall bool) *wire.ChatResponse {
		t.Helper()
		req := agentChat(ctx...)
		if noRecall {
			req.Tools = nil
		}
		return complete(t, m, hippocam.CallAgent, req)
	}
	precipOf := func(span []wire.ChatMessage, closing ...string) string {
		t.Helper()
		inst := precipInstruction("Prepare the invoice report > Read the exports", strings.Join(closing, engine.ChainSeparator))
		resp := complete(t, m, hippocam.CallPrecip, componentChat(engine.PrecipToolSpec, inst, span...))
		var out engine.PrecipOutput
		decodeCall(t, resp, engine.PrecipTool, &out)
		return out.Memory
	}
	render := func(ref, memory string, labels ...string) wire.ChatMessage {
		return user(fmt.Sprintf("[ref:%s] Memory of my finished work on %q.\n%s", ref, strings.Join(labels, `" and "`), memory))
	}

	// 1. Two nested intents open.
	say(user("#open Prepare the invoice report | the report is sent\n#open Read the exports | both exports are read\nStart with the exports."))
	g1 := janusOps(nil, [2]string{"Prepare the invoice report", "the report is sent"}, [2]string{"Read the exports", "both exports are read"})
	say(user(g1))
	if got := answerText(t, agent(false)); got != "ok" {
		t.Fatalf("answer %q, want ok", got)
	}
	say(assistant("ok"))
	spanStart := len(ctx) - 1 // "Prepare" stays open at g1, so the span starts after it

	// 2. Two parallel reads and their results.
	say(user("!call read_file {\"path\":\"exports/shop.csv\"}\n!call read_file {\"path\":\"exports/market.csv\"}"))
	janusOps(nil)
	resp := agent(false)
	calls := resp.Choices[0].Message.ToolCalls
	if len(calls) != 2 {
		t.Fatalf("answer %s, want two calls", show(resp.Choices[0].Message))
	}
	say(resp.Choices[0].Message)
	say(toolResult(calls[0].ID, "revenue_shop := 1200\ndetail shop_owner := Dana\n"+rows("shop", 900)))
	say(toolResult(calls[1].ID, "revenue_market := 800\n"+rows("market", 700)))
	janusOps(nil)
	if got := answerText(t, agent(false)); got != "ok" {
		t.Fatalf("answer %q, want ok", got)
	}
	say(assistant("ok"))

	// 3. The reading closes, the writing opens; the shop revenue is corrected.
	say(user("#close Read the exports\n#open Write the report | the report file exists\nrevenue_shop := 1250\n!say corrected the shop revenue"))
	g2 := janusOps([]string{"Read the exports"}, [2]string{"Write the report", "the report file exists"})
	readSpan := append([]wire.ChatMessage(nil), ctx[spanStart:]...)
	say(user(g2))
	if got := answerText(t, agent(false)); got != "corrected the shop revenue" {
		t.Fatalf("answer %q", got)
	}
	say(assistant("corrected the shop revenue"))
	readMemory := precipOf(readSpan, "Read the exports")
	wantRead := "I finished \"Read the exports\".\nrevenue_shop := 1200\nrevenue_market := 800\nrevenue_shop := 1250\ndetail shop_owner (in the archive)"
	if readMemory != wantRead {
		t.Fatalf("memory of the reading:\n%s\nwant\n%s", readMemory, wantRead)
	}
	// REPLACE: the span becomes the memory, before the closing guidance.
	rest := append([]wire.ChatMessage(nil), ctx[spanStart+len(readSpan):]...)
	ctx = append(append(ctx[:spanStart:spanStart], render("r1", readMemory, "Read the exports")), rest...)

	// 4. Both remaining intents close: "Write the report" first, then "Prepare the invoice
	// report", whose span holds both earlier memories (not coalesced: it adds more than guidance).
	say(user("#close Write the report\n#close Prepare the invoice report\n!say done"))
	g3 := janusOps([]string{"Write the report", "Prepare the invoice report"})
	writeSpan := append([]wire.ChatMessage(nil), ctx[3:]...) // from g2
	say(user(g3))
	if got := answerText(t, agent(false)); got != "done" {
		t.Fatalf("answer %q", got)
	}
	say(assistant("done"))
	writeMemory := precipOf(writeSpan, "Write the report")
	if writeMemory != `I finished "Write the report".` {
		t.Fatalf("memory of the writing: %q", writeMemory)
	}
	ctx = []wire.ChatMessage{ctx[0], ctx[1], ctx[2], render("r2", writeMemory, "Write the report"), user(g3), assistant("done")}
	outerSpan := append([]wire.ChatMessage(nil), ctx[1:4]...) // g1 and both memories
	outerMemory := precipOf(outerSpan, "Prepare the invoice report")
	wantOuter := "I finished \"Prepare the invoice report\".\nrevenue_shop := 1200\nrevenue_market := 800\nrevenue_shop := 1250\ndetail shop_owner (in the archive)"
	if outerMemory != wantOuter {
		t.Fatalf("memory of the report:\n%s\nwant\n%s", outerMemory, wantOuter)
	}
	ctx = []wire.ChatMessage{ctx[0], render("r3", outerMemory, "Prepare the invoice report"), user(g3), assistant("done")}

	// 5. The later value wins.
	say(user("!ask revenue_shop"))
	if got := answerText(t, agent(false)); got != "revenue_shop := 1250" {
		t.Fatalf("answer %q, want the later value", got)
	}
	say(assistant("revenue_shop := 1250"))

	// 6. The detail is recalled: r3, then r1 within it, then the answer.
	say(user("!ask shop_owner"))
	exchange := len(ctx)
	listing := func(ref string, children []wire.ChatMessage) string {
		var b strings.Builder
		fmt.Fprintf(&b, "Layer %s, %d messages, oldest first:", ref, len(children))
		for i, c := range children {
			s, _ := c.Text()
			fmt.Fprintf(&b, "\n--- m%d (%s)\n%s", i, c.Role, s)
		}
		return b.String()
	}
	for i, want := range []string{"r3", "r1"} {
		resp := agent(false)
		var args engine.RecallArgs
		decodeCall(t, resp, engine.RecallTool, &args)
		if args.Ref != want {
			t.Fatalf("recall %d opened %q, want %q", i, args.Ref, want)
		}
		children := outerSpan
		if want == "r1" {
			children = readSpan
		}
		id := resp.Choices[0].Message.ToolCalls[0].ID
		say(resp.Choices[0].Message, toolResult(id, listing(want, children)))
	}
	if got := answerText(t, agent(false)); got != "shop_owner := Dana" {
		t.Fatalf("answer %q, want the recalled detail", got)
	}
	ctx = append(ctx[:exchange], assistant("shop_owner := Dana")) // the exchange leaves the context

	// 7. Nothing names the manager: no recall.
	say(user("!ask shop_manager"))
	if got := answerText(t, agent(false)); got != "shop_manager := unknown" {
		t.Fatalf("answer %q", got)
	}
	say(assistant("shop_manager := unknown"))

	// 8. PALIM over the whole context keeps the later value and the impression.
	out := palimOutput(t, palimInstruction, ctx...)
	want := neutral("revenue_shop := 1250", "revenue_market := 800", "detail shop_owner (in the archive)", "shop_owner := Dana", "shop_manager := unknown")
	if !reflect.DeepEqual(out.Knowledge, want) {
		t.Fatalf("knowledge %v\nwant %v", out.Knowledge, want)
	}
	if !strings.HasPrefix(out.Narrative, `I worked through 1 message outside any finished intent.`+"\n"+`I finished "Prepare the invoice report".`) {
		t.Fatalf("narrative %q", out.Narrative)
	}
	if !sim.PlainText(out.Narrative) {
		t.Fatalf("narrative %q would be read", out.Narrative)
	}
}
