package sim_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/tokenizer"
)

func TestAgentDirectives(t *testing.T) {
	type call struct{ name, args string }
	tests := []struct {
		name    string
		msgs    []wire.ChatMessage
		content string
		calls   []call
	}{
		{name: "NoDirective", msgs: []wire.ChatMessage{user("Start with the exports.")}, content: "ok"},
		{name: "Say", msgs: []wire.ChatMessage{user("revenue := 3\n!say corrected the shop revenue")}, content: "corrected the shop revenue"},
		{name: "SayOnlySinceLastAnswer", msgs: []wire.ChatMessage{user("!say old"), assistant("old"), user("nothing new")}, content: "ok"},
		{
			name:  "ParallelCalls",
			msgs:  []wire.ChatMessage{user("!call read_file {\"path\":\"exports/shop.csv\"}\n!call read_file {\"path\":\"exports/market.csv\"}")},
			calls: []call{{"read_file", `{"path":"exports/shop.csv"}`}, {"read_file", `{"path":"exports/market.csv"}`}},
		},
		{name: "CallWithoutArguments", msgs: []wire.ChatMessage{user("!call list_files")}, calls: []call{{"list_files", "{}"}}},
		{
			name: "ToolResultsAfterCalls",
			msgs: []wire.ChatMessage{
				user("!call read_file {\"path\":\"a\"}"),
				calling([3]string{"c1", "read_file", `{"path":"a"}`}),
				toolResult("c1", "revenue_shop := 1200\n!say read it"),
			},
			content: "read it",
		},
		{
			name:    "Combined",
			msgs:    []wire.ChatMessage{user("color := blue\n!say first\n!call ping {}\n!ask color\n- !say second")},
			content: "first\ncolor := blue\nsecond",
			calls:   []call{{"ping", "{}"}},
		},
		{name: "DirectivesInRecallResultsIgnored", msgs: []wire.ChatMessage{user("hi"), recalling("c1", "r1"), toolResult("c1", "--- m1\n!say leaked")}, content: "ok"},
		{name: "JanusDirectivesIgnored", msgs: []wire.ChatMessage{user("#open A | a holds")}, content: "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := complete(t, mustModel(t), hippocam.CallAgent, agentChat(tt.msgs...))
			if got := answerText(t, resp); got != tt.content {
				t.Errorf("content %q, want %q", got, tt.content)
			}
			var got []call
			ids := map[string]bool{}
			for _, c := range resp.Choices[0].Message.ToolCalls {
				got = append(got, call{c.Function.Name, c.Function.Arguments})
				if c.ID == "" || ids[c.ID] {
					t.Errorf("call id %q is empty or repeated", c.ID)
				}
				ids[c.ID] = true
			}
			if !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("calls %v, want %v", got, tt.calls)
			}
			wantFinish := "stop"
			if len(tt.calls) > 0 {
				wantFinish = "tool_calls"
			}
			if f := resp.Choices[0].FinishReason; f != wantFinish {
				t.Errorf("finish reason %q, want %q", f, wantFinish)
			}
		})
	}
}

func TestAgentPad(t *testing.T) {
	tok := tokenizer.MustDefault()
	for _, n := range []int{1, 7, 128, 900, 5000} {
		resp := complete(t, mustModel(t), hippocam.CallAgent, agentChat(user("!say header\n!pad "+itoa(n))))
		got := answerText(t, resp)
		head, filler, ok := strings.Cut(got, "\n")
		if !ok || head != "header" {
			t.Fatalf("pad %d: answer %q does not start with the said text", n, got[:min(len(got), 40)])
		}
		if c := tok.Count(filler); c != n {
			t.Errorf("pad %d: filler has %d tokens", n, c)
		}
		if u := resp.Usage.CompletionTokens; u != tok.Count(got) {
			t.Errorf("pad %d: completion tokens %d, want %d", n, u, tok.Count(got))
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// askCase is one main-model request ending in an !ask or !use, and what the model must do:
// answer, recall a ref or search for a key.
type askCase struct {
	name   string
	msgs   []wire.ChatMessage
	noTool bool   // the request does not offer recall (nor search)
	search bool   // the request offers search beside recall
	answer string // the expected content, if the model answers
	recall string // the expected ref, if the model recalls
	query  string // the expected query, if the model searches
	after  string // the expected "after" of that search
}

func runAsk(t *testing.T, tests []askCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := agentChat(tt.msgs...)
			if tt.search {
				req = withTools(req, engine.SearchToolSpec)
			}
			if tt.noTool {
				req.Tools = nil
			}
			resp := complete(t, mustModel(t), hippocam.CallAgent, req)
			if tt.query != "" {
				var args engine.SearchArgs
				decodeCall(t, resp, engine.SearchTool, &args)
				if args.Query != tt.query || args.After != tt.after {
					t.Fatalf("searched for %q after %q, want %q after %q", args.Query, args.After, tt.query, tt.after)
				}
				return
			}
			if tt.recall != "" {
				var args engine.RecallArgs
				decodeCall(t, resp, engine.RecallTool, &args)
				if args.Ref != tt.recall {
					t.Fatalf("recalled %q, want %q", args.Ref, tt.recall)
				}
				if s := answerText(t, resp); s != "" {
					t.Fatalf("a recall call carries text %q", s)
				}
				return
			}
			msg := resp.Choices[0].Message
			if len(msg.ToolCalls) != 0 {
				t.Fatalf("answer %s calls tools, want the text %q", show(msg), tt.answer)
			}
			if got := answerText(t, resp); got != tt.answer {
				t.Fatalf("answer %q, want %q", got, tt.answer)
			}
		})
	}
}

func TestAgentAsk(t *testing.T) {
	memory := user("[ref:r1] Memory of my finished work on \"Read the exports\".\nI finished \"Read the exports\".\nrevenue_shop := 1200\ndetail shop_owner (in the archive)")
	older := user("[ref:r0] Memory of my finished work on \"Set up\".\nI finished \"Set up\".\ndetail shop_owner (in the archive)")
	prefix := user("[ref:p1] Consolidated memory of my earlier work.\nKnowledge:\n- [neutral] detail shop_owner (in the archive)")
	runAsk(t, []askCase{
		{name: "InContext", msgs: []wire.ChatMessage{memory, user("!ask revenue_shop")}, answer: "revenue_shop := 1200"},
		{name: "LatestWins", msgs: []wire.ChatMessage{memory, user("revenue_shop := 1250"), assistant("ok"), user("!ask revenue_shop")}, answer: "revenue_shop := 1250"},
		{name: "DetailInContext", msgs: []wire.ChatMessage{user("detail shop_owner := Dana"), assistant("ok"), user("!ask shop_owner")}, answer: "shop_owner := Dana"},
		{name: "OwnEarlierAnswer", msgs: []wire.ChatMessage{memory, user("!ask shop_owner"), assistant("shop_owner := Dana"), user("!ask shop_owner")}, answer: "shop_owner := Dana"},
		{name: "RecallTheRefNamingKey", msgs: []wire.ChatMessage{older, memory, user("!ask shop_owner")}, recall: "r1"},
		{name: "RecallFromPrefixMemoryKnowledge", msgs: []wire.ChatMessage{prefix, user("!ask shop_owner")}, recall: "p1"},
		{name: "UnknownNothingNamesKey", msgs: []wire.ChatMessage{memory, user("!ask shop_manager")}, answer: "shop_manager := unknown"},
		{name: "UnknownWithoutRecallTool", msgs: []wire.ChatMessage{memory, user("!ask shop_owner")}, noTool: true, answer: "shop_owner := unknown"},
		{
			name: "FoundInRecallResult",
			msgs: []wire.ChatMessage{
				memory, user("!ask shop_owner"),
				recalling("c1", "r1"),
				toolResult("c1", "Layer r1, 2 messages, oldest first:\n--- m3 (tool)\nrevenue_shop := 1200\ndetail shop_owner := Dana\n--- m4 (assistant)\nok"),
			},
			answer: "shop_owner := Dana",
		},
		{
			name: "DescendIntoChild",
			msgs: []wire.ChatMessage{
				prefix, user("!ask shop_owner"),
				recalling("c1", "p1"),
				toolResult("c1", "Layer p1:\n--- m1\n[ref:r0] Memory of \"Set up\".\ndetail shop_owner (in the archive)\n--- m2\n[ref:r1] Memory of \"Read the exports\".\ndetail shop_owner (in the archive)\n--- m3\nok"),
			},
			recall: "r1",
		},
		{
			name: "NextCandidateAfterDeadEnd",
			msgs: []wire.ChatMessage{
				older, memory, user("!ask shop_owner"),
				recalling("c1", "r1"),
				toolResult("c1", "Layer r1:\n--- m3\nnothing here"),
			},
			recall: "r0",
		},
		{
			name: "LeftOutHandlesLastFirst",
			msgs: []wire.ChatMessage{
				memory, user("!ask shop_owner"),
				recalling("c1", "r1"),
				toolResult("c1", "Layer r1, partly:\n--- [ref:h1] m3 (tool, 900 tokens) left out\n--- m4\nok\n--- [ref:h2] m5 (tool, 700 tokens) left out"),
			},
			recall: "h2",
		},
		{
			name: "LeftOutHandlesOfEarlierResults",
			msgs: []wire.ChatMessage{
				memory, user("!ask shop_owner"),
				recalling("c1", "r1"),
				toolResult("c1", "Layer r1, partly:\n--- [ref:h1] m3 left out\n--- [ref:h2] m5 left out"),
				recalling("c2", "h2"),
				toolResult("c2", "Message h2:\n--- m5\nrows without owner"),
			},
			recall: "h1",
		},
		{
			name: "UnknownWhenEverythingOpened",
			msgs: []wire.ChatMessage{
				memory, user("!ask shop_owner"),
				recalling("c1", "r1"),
				toolResult("c1", "Layer r1, partly:\n--- [ref:h1] m3 left out"),
				recalling("c2", "h1"),
				toolResult("c2", "--- m3\nrows without owner"),
			},
			answer: "shop_owner := unknown",
		},
		{
			name: "EarlierQuestionsRecallIgnored",
			msgs: []wire.ChatMessage{
				memory, user("!ask revenue_shop"),
				recalling("c1", "r1"),
				toolResult("c1", "--- m3\ndetail shop_owner := Dana"),
				assistant("revenue_shop := 1200"),
				user("!ask shop_owner"),
			},
			recall: "r1",
		},
		{
			name:   "AtRecallLimitAnswers",
			msgs:   []wire.ChatMessage{memory, user("!ask shop_owner"), recalling("c1", "r1"), toolResult("c1", "--- [ref:h1] m3 left out")},
			noTool: true,
			answer: "shop_owner := unknown",
		},
		{
			name: "SeveralAsksRecallOneAtATime",
			msgs: []wire.ChatMessage{
				memory, user("!ask revenue_shop\n!ask shop_owner\n!say done"),
				recalling("c1", "r1"),
				toolResult("c1", "--- m3\ndetail shop_owner := Dana"),
			},
			answer: "revenue_shop := 1200\nshop_owner := Dana\ndone",
		},
	})
}

// searching is an assistant message calling search for query, with call id id.
func searching(id, query string) wire.ChatMessage {
	return searchingAfter(id, query, "")
}

// searchingAfter is an assistant message calling search for query's page after the hit after.
func searchingAfter(id, query, after string) wire.ChatMessage {
	args, _ := json.Marshal(engine.SearchArgs{Query: query, After: after})
	return calling([3]string{id, engine.SearchTool, string(args)})
}

// TestAgentSearchPages follows rule 3 of !ask across search pages: once every layer the latest
// page names is open, the model reads on after the id the page gives, and goes on with the next
// page's hits.
func TestAgentSearchPages(t *testing.T) {
	memory := user("[ref:r1] Memory of my finished work on \"Read the exports\".\nrevenue_shop := 1200")
	page1 := toolResult("s1", "Search for \"shop_manager\": the latest matching messages first; more follow.\n"+
		"--- 1 · m57 · tool · in [ref:r12]: …no shop_manager yet…\n"+
		"--- 2 · m40 · user · in [ref:r12]: …shop_manager still open…\n"+
		engine.SearchMore+", older than these: search again with the same query and "+engine.SearchAfterMarker+"m40\".")
	page2 := toolResult("s2", "Search for \"shop_manager\", continued: the matching messages older than m40, latest first, from hit 3 on.\n"+
		"--- 3 · m9 · tool · in [ref:r5]: …shop_manager := Bo…")
	dead := func(id, ref string) []wire.ChatMessage {
		return []wire.ChatMessage{recalling(id, ref), toolResult(id, "Recall of "+ref+":\n--- 1/1 · tool · raw\nrows without a manager")}
	}
	ask := []wire.ChatMessage{memory, user("!ask shop_manager"), searching("s1", "shop_manager"), page1}
	runAsk(t, []askCase{
		{name: "HitsOfThePageFirst", msgs: ask, search: true, recall: "r12"},
		{name: "ReadOnWhenThePageIsDone", msgs: append(ask[:4:4], dead("c1", "r12")...), search: true, query: "shop_manager", after: "m40"},
		{
			name:   "HitsOfTheNextPage",
			msgs:   append(append(ask[:4:4], dead("c1", "r12")...), searchingAfter("s2", "shop_manager", "m40"), page2),
			search: true, recall: "r5",
		},
		{
			name: "UnknownAfterTheLastPage",
			msgs: append(append(append(ask[:4:4], dead("c1", "r12")...), searchingAfter("s2", "shop_manager", "m40"), page2),
				dead("c2", "r5")...),
			search: true, answer: "shop_manager := unknown",
		},
	})
}

// TestAgentSearch follows rule 3 of !ask (docs/sim.md): when nothing in view names the key and
// search is offered, search for it once, then recall the layers of its hits in order.
func TestAgentSearch(t *testing.T) {
	memory := user("[ref:r1] Memory of my finished work on \"Read the exports\".\nrevenue_shop := 1200\ndetail shop_owner (in the archive)")
	hits := toolResult("s1", "Search for \"shop_manager\": 3 matching messages, latest first. Recall a hit's [ref:…] to open the layer that holds it.\n"+
		"--- 1/3 · m57 · tool · in [ref:r12]: …detail shop_manager := Ann…\n"+
		"--- 2/3 · m40 · user · in view (not archived): !ask shop_manager [ref:r99]\n"+
		"--- 3/3 · m9 · tool · in [ref:r5]: …shop_manager := Bo…")
	runAsk(t, []askCase{
		{name: "SearchWhenNothingNamesKey", msgs: []wire.ChatMessage{memory, user("!ask shop_manager")}, search: true, query: "shop_manager"},
		{name: "NoSearchOffered", msgs: []wire.ChatMessage{memory, user("!ask shop_manager")}, answer: "shop_manager := unknown"},
		{name: "RecallBeforeSearch", msgs: []wire.ChatMessage{memory, user("!ask shop_owner")}, search: true, recall: "r1"},
		{
			name:   "NoSearchWhenAnImpressionNamesKey",
			msgs:   []wire.ChatMessage{memory, user("!ask shop_owner"), recalling("c1", "r1"), toolResult("c1", "--- m3\nnothing here")},
			search: true, answer: "shop_owner := unknown",
		},
		{
			name:   "RecallTheLatestHit",
			msgs:   []wire.ChatMessage{memory, user("!ask shop_manager"), searching("s1", "shop_manager"), hits},
			search: true, recall: "r12",
		},
		{
			name: "NextHitAfterDeadEnd",
			msgs: []wire.ChatMessage{memory, user("!ask shop_manager"), searching("s1", "shop_manager"), hits,
				recalling("c1", "r12"), toolResult("c1", "Recall of r12:\n--- 1/1 · tool · raw\nrows without a manager")},
			search: true, recall: "r5", // the hit in view and the tag in its excerpt are skipped
		},
		{
			name: "FoundThroughSearch",
			msgs: []wire.ChatMessage{memory, user("!ask shop_manager"), searching("s1", "shop_manager"), hits,
				recalling("c1", "r12"), toolResult("c1", "Recall of r12:\n--- 1/1 · tool · raw\ndetail shop_manager := Ann")},
			search: true, answer: "shop_manager := Ann",
		},
		{
			name: "UnknownWhenHitsExhausted",
			msgs: []wire.ChatMessage{memory, user("!ask shop_manager"), searching("s1", "shop_manager"), hits,
				recalling("c1", "r12"), toolResult("c1", "--- 1/1\nnothing"), recalling("c2", "r5"), toolResult("c2", "--- 1/1\nnothing")},
			search: true, answer: "shop_manager := unknown",
		},
		{
			name: "SearchOncePerQuestion",
			msgs: []wire.ChatMessage{memory, user("!ask shop_manager"), searching("s1", "shop_manager"),
				toolResult("s1", "Search for \"shop_manager\": no message of this conversation holds all of these words.")},
			search: true, answer: "shop_manager := unknown",
		},
		{
			name: "SearchAgainForALaterQuestion",
			msgs: []wire.ChatMessage{memory, user("!ask shop_manager"), searching("s1", "shop_manager"),
				toolResult("s1", "Search for \"shop_manager\": no message holds these words."), assistant("not found"),
				user("!ask shop_manager")},
			search: true, query: "shop_manager",
		},
		{
			name: "TheQuestionStays",
			msgs: []wire.ChatMessage{memory, user("!say looking\n!ask shop_manager"), searching("s1", "shop_manager"),
				toolResult("s1", "Search for \"shop_manager\": 1 matching messages.\n--- 1/1 · m3 · user · in [ref:r12]: !say leaked !ask other")},
			search: true, recall: "r12",
		},
		{
			name:   "DirectivesInSearchResultsIgnored",
			msgs:   []wire.ChatMessage{user("hi"), searching("s1", "x"), toolResult("s1", "!say leaked\n!ask other")},
			search: true, answer: "ok",
		},
	})
}

// TestAgentUse checks "!use KEY": found as !ask finds it, answered without the value.
func TestAgentUse(t *testing.T) {
	memory := user("[ref:r1] Memory of my finished work.\nrevenue_shop := 1200\ndetail shop_owner (in the archive)")
	runAsk(t, []askCase{
		{name: "InContext", msgs: []wire.ChatMessage{memory, user("!use revenue_shop")}, answer: "used revenue_shop"},
		{name: "ThroughRecall", msgs: []wire.ChatMessage{memory, user("!use shop_owner")}, recall: "r1"},
		{
			name:   "AfterRecall",
			msgs:   []wire.ChatMessage{memory, user("!use shop_owner"), recalling("c1", "r1"), toolResult("c1", "--- m3\ndetail shop_owner := Dana")},
			answer: "used shop_owner",
		},
		{name: "ThroughSearch", msgs: []wire.ChatMessage{memory, user("!use shop_manager")}, search: true, query: "shop_manager"},
		{name: "Unknown", msgs: []wire.ChatMessage{memory, user("!use shop_manager")}, answer: "shop_manager := unknown"},
		{name: "WithOtherDirectives", msgs: []wire.ChatMessage{memory, user("!say first\n!use revenue_shop\n!ask revenue_shop")}, answer: "first\nused revenue_shop\nrevenue_shop := 1200"},
	})
}

// TestAgentRecallCallDoesNotRepeat checks that a scripted !call of recall is made once in an
// exchange: after its result the model answers instead of calling it again.
func TestAgentRecallCallDoesNotRepeat(t *testing.T) {
	req := agentChat(
		user("!call recall {\"ref\":\"r1\"}\n!say looked"),
		recalling("c1", "r1"),
		toolResult("c1", "--- m1\nx := 1"),
	)
	resp := complete(t, mustModel(t), hippocam.CallAgent, req)
	if msg := resp.Choices[0].Message; len(msg.ToolCalls) != 0 || answerText(t, resp) != "looked" {
		t.Fatalf("answer %s, want the text \"looked\" and no call", show(msg))
	}
}

// TestAgentCallIDs checks that call ids differ between requests and repeat for the same request.
func TestAgentCallIDs(t *testing.T) {
	m := mustModel(t)
	a := complete(t, m, hippocam.CallAgent, agentChat(user("!call f {}\n!call f {}")))
	b := complete(t, m, hippocam.CallAgent, agentChat(user("!call f {}\n!call f {}\n")))
	a2 := complete(t, m, hippocam.CallAgent, agentChat(user("!call f {}\n!call f {}")))
	ids := map[string]bool{}
	for _, r := range []*wire.ChatResponse{a, b} {
		for _, c := range r.Choices[0].Message.ToolCalls {
			if ids[c.ID] {
				t.Fatalf("call id %s repeats across requests", c.ID)
			}
			ids[c.ID] = true
		}
	}
	if !reflect.DeepEqual(a.Choices[0].Message.ToolCalls, a2.Choices[0].Message.ToolCalls) {
		t.Fatalf("the same request gave different calls")
	}
}
