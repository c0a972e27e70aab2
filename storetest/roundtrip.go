package storetest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
)

// roundTripMessages exercises every field of Message, nil and empty slices told apart, and
// contents that text columns and JSON tend to alter.
func roundTripMessages() []hippocam.Message {
	var binaryish strings.Builder
	for b := 1; b < 256; b++ {
		binaryish.WriteByte(byte(b)) // every byte but NUL, so also invalid UTF-8
	}
	nested := hippocam.Message{ID: "t2", Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw,
		Content: "nested \t tab", Tokens: 3, ToolCalls: []hippocam.ToolCall{}}
	recall := hippocam.Message{
		ID: "t1", Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: "call_0", Ref: "r0",
		Content: "--- recalled <b>&amp;</b> \u2028 \x1b[0m", Tokens: 9,
		Knowledge: []hippocam.KnowledgeItem{{Fact: "x is 1", Evaluation: hippocam.EvalGood}},
		Trace:     []hippocam.Message{nested},
		Extra:     json.RawMessage(`{ "spaced" : [1, 2.50, 1e3],  "html": "<a href=\"x\">&</a>" }`),
	}
	return []hippocam.Message{
		{
			ID: "m1", Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw,
			Content:   "héllo 世界 👋🏽 e\u0301 \u202e rtl \"quoted\" \\ back",
			ToolCalls: []hippocam.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path": "/tmp/a b", "n":1}`}, {ID: "call_2", Name: "noop", Arguments: ""}},
			Tokens:    42,
			Trace:     []hippocam.Message{recall, {ID: "t3", Role: hippocam.RoleUser, Kind: hippocam.KindGuidance}},
			Extra:     json.RawMessage(`{"name":"bob",  "refusal": null, "x": "<>&"}`),
		},
		{ID: "m2", Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: "call_1", Content: binaryish.String(), Tokens: 300},
		{ID: "m3", Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: "call_2", Content: "nul\x00inside\x00"},
		{ID: "m4", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: strings.Repeat("lorem ipsum ünïcödé ✓ ", 50000), Tokens: 250000},
		{ID: "m5", Role: hippocam.RoleUser, Kind: hippocam.KindGuidance},
		{ID: "m9", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "look",
			Parts:  []hippocam.Part{{Type: hippocam.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo=", Detail: "low", Format: hippocam.FormatAnthropic, Raw: `{"type": "image",  "source":{"type":"base64"}}`}},
			Origin: &hippocam.Origin{Format: hippocam.FormatAnthropic, Raw: "{\"role\" :\"user\",\n \"content\": [ {\"x\":\"<&>\"} ] }"}},
		{ID: "m6", Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: "  padded\r\n",
			ToolCalls: []hippocam.ToolCall{}, Knowledge: []hippocam.KnowledgeItem{}, Trace: []hippocam.Message{}, Extra: json.RawMessage{}},
	}
}

func testRoundTrip(t *testing.T, open func(t *testing.T) hippocam.Store) {
	st := open(t)
	s := &hippocam.Session{
		Tenant: "tenant ünïcode", ID: "session/with spaces?",
		Stack: hippocam.IntentStack{
			{Label: "book a trip", Reason: "the user asked", Done: "tickets bought or no flight left", Start: "m1"},
			{Label: "compare fares", Done: "a fare is chosen", Start: "m5"},
		},
		StackLog: []hippocam.StackEvent{{Step: 1, Opened: []string{"book a trip"}, Guidance: "I book."}, {Step: 2, Closed: []string{"x"}}},
		Rounds:   []int{10, 2000, 0},
		Usage: hippocam.Usage{
			hippocam.CallAgent: {Calls: 3, Input: 12000, CachedInput: 8000, Output: 900, CostUSD: 0.1 + 0.2},
			hippocam.CallJanus: {Calls: 1, Input: 1},
		},
		Consolidations: hippocam.Consolidations{Intent: 4, Prefix: 2},
		Transcript: hippocam.Transcript{Count: 2, Hash: "9f86d081884c7d659a2feaa0c55ad015",
			PrevCount: 1, PrevHash: "ünïcode \"quoted\" <&>", Answer: "m0"},
		Seq: 1 << 40,
	}
	if err := st.CreateSession(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if d := diffSession(s, mustSession(t, st, s.Tenant, s.ID)); d != "" {
		t.Fatal("after CreateSession: " + d)
	}
	// Commit must store the new transcript, not keep the one CreateSession stored.
	s.Transcript = hippocam.Transcript{Count: 7, Hash: "a665a45920422f9d417e4867efdc4fb8",
		PrevCount: 5, PrevHash: "9f86d081884c7d659a2feaa0c55ad015", Answer: "m6", RequestKey: "stainless-node-retry-1",
		Framing:     []hippocam.Message{{ID: "m0", Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: "be brief", Origin: &hippocam.Origin{Format: hippocam.FormatChat, Raw: `{"role":"developer","content":"be brief"}`}}},
		FramingHash: "abc", Fork: &hippocam.Fork{From: "origin", At: 4},
		Client: &hippocam.Client{Title: "Fix the \"login\" bug — ünïcode", Conversation: "5f0c2c8e-6f1b-4c7e-9d0a-2b1e7c3d4a5f",
			Agent: "a1b2", Parent: "a0", Kind: hippocam.ClientSubagent},
		Request: &hippocam.RequestSize{Framing: 20000, System: 2500, Tools: 9000, RecallTools: 400, Memory: 300, Messages: 1200,
			Total: 33400, Reported: 33910, ReportedCached: 30000}}
	msgs := roundTripMessages()
	var ops []hippocam.Op
	for _, m := range msgs {
		ops = append(ops, hippocam.AppendOp(m))
	}
	mustCommit(t, st, s, ops...)
	got := mustSession(t, st, s.Tenant, s.ID)
	want := *s
	want.Context = msgs
	if d := diffSession(&want, got); d != "" {
		t.Fatal(d)
	}
	for _, m := range msgs {
		one, err := st.Message(t.Context(), s.Tenant, s.ID, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffMessages([]hippocam.Message{m}, []hippocam.Message{*one}); d != "" {
			t.Error(d)
		}
	}

	prefix := hippocam.Message{
		ID: "m7", Role: hippocam.RoleUser, Kind: hippocam.KindPrefixMemory, Ref: "r1", Tokens: 80,
		Content: "I did everything. " + hippocam.RefTag("r1"),
		Knowledge: []hippocam.KnowledgeItem{
			{Fact: "fares rise on fridays", Evaluation: hippocam.EvalBad},
			{Fact: "the user prefers trains", Evaluation: hippocam.EvalNeutral},
		},
	}
	mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m1", "m2", "m3", "m4", "m5", "m9", "m6"}, prefix))
	kids, err := st.Children(t.Context(), s.Tenant, s.ID, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if d := diffMessages(msgs, kids); d != "" {
		t.Error("archived: " + d)
	}
	got = mustSession(t, st, s.Tenant, s.ID)
	if d := diffMessages([]hippocam.Message{prefix}, got.Context); d != "" {
		t.Error("memory: " + d)
	}
	if !reflect.DeepEqual(got.Transcript, s.Transcript) {
		t.Errorf("Transcript after a replace = %#v, want %#v", got.Transcript, s.Transcript)
	}
	if got.CreatedAt.Location() != time.UTC && got.CreatedAt.Location().String() != "UTC" {
		t.Errorf("CreatedAt is in %v, want UTC", got.CreatedAt.Location())
	}
}

// testCopies checks that callers cannot change stored state through the values they pass in
// or get back.
func testCopies(t *testing.T, open func(t *testing.T) hippocam.Store) {
	st := open(t)
	s := &hippocam.Session{Tenant: "acme", ID: "s1",
		Stack:    hippocam.IntentStack{{Label: "a", Done: "b", Start: "m1"}},
		StackLog: []hippocam.StackEvent{{Step: 1, Opened: []string{"a"}}},
		Rounds:   []int{1, 2},
		Usage:    hippocam.Usage{hippocam.CallAgent: {Calls: 1}},
	}
	if err := st.CreateSession(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	m := roundTripMessages()[0]
	mustCommit(t, st, s, hippocam.AppendOp(m), hippocam.AppendOp(raw("m2", "two")))
	mustCommit(t, st, s, hippocam.ReplaceOp([]string{"m2"}, memory("m3", "r1", "did two")))
	before := capture(t, st, "acme", "s1", []string{"r1"}, []string{"m1", "m2", "m3"})

	// What went in.
	s.Stack[0].Label = "changed"
	s.StackLog[0].Opened[0] = "changed"
	s.Rounds[0] = 99
	s.Usage[hippocam.CallAgent] = hippocam.RoleUsage{Calls: 99}
	m.ToolCalls[0].Name = "changed"
	m.Trace[0].Trace[0].Content = "changed"
	m.Trace[0].Extra[0] = '['
	m.Extra[0] = '['

	// What came out.
	got := mustSession(t, st, "acme", "s1")
	got.Context[0].ToolCalls[0].Name = "changed"
	got.Context[0].Trace[0].Knowledge[0].Fact = "changed"
	got.Context[0].Trace[0].Trace[0].Content = "changed"
	got.Context[0].Extra[1] = 'X'
	got.Stack[0].Label = "changed"
	got.StackLog[0].Opened[0] = "changed"
	got.Rounds[1] = 99
	got.Usage[hippocam.CallJanus] = hippocam.RoleUsage{Calls: 1}
	kids, _ := st.Children(t.Context(), "acme", "s1", "r1")
	kids[0].Content = "changed"
	one, _ := st.Message(t.Context(), "acme", "s1", "m1")
	one.Trace[0].ToolCallID = "changed"

	if d := before.diff(capture(t, st, "acme", "s1", []string{"r1"}, []string{"m1", "m2", "m3"})); d != "" {
		t.Errorf("stored state changed through a caller's value:\n%s", d)
	}
}
