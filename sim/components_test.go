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

const janusInstruction = "Evaluate the intent stack against the conversation above.\nCurrent stack (outermost first):\n(empty)\nCall update_intents with your decision."

func janusCall(tb testing.TB, m *sim.Model, instruction string, material ...wire.ChatMessage) engine.JanusOutput {
	tb.Helper()
	resp := complete(tb, m, hippocam.CallJanus, componentChat(engine.JanusToolSpec, instruction, material...))
	var out engine.JanusOutput
	decodeCall(tb, resp, engine.JanusTool, &out)
	return out
}

func TestJanus(t *testing.T) {
	tests := []struct {
		name     string
		material []wire.ChatMessage
		close    []engine.JanusClosure
		open     []engine.JanusOpening
	}{
		{
			name:     "OpenNested",
			material: []wire.ChatMessage{user("#open Prepare the invoice report | the report is sent\n#open Read the exports | both exports are read\nStart with the exports.")},
			open:     []engine.JanusOpening{{Label: "Prepare the invoice report", Done: "the report is sent"}, {Label: "Read the exports", Done: "both exports are read"}},
		},
		{
			name:     "CloseInOrderThenOpen",
			material: []wire.ChatMessage{user("hello"), assistant("ok"), user("#close Write the report\n#close Prepare the invoice report\n#open Archive | the files are archived\n!say done")},
			close:    []engine.JanusClosure{{Label: "Write the report"}, {Label: "Prepare the invoice report"}},
			open:     []engine.JanusOpening{{Label: "Archive", Done: "the files are archived"}},
		},
		{
			name:     "ListMarkersAndTags",
			material: []wire.ChatMessage{user("- #close A\n* [good] #open B | b holds")},
			close:    []engine.JanusClosure{{Label: "A"}},
			open:     []engine.JanusOpening{{Label: "B", Done: "b holds"}},
		},
		{
			name:     "OpenWithoutCondition",
			material: []wire.ChatMessage{user("#open Wander")},
			open:     []engine.JanusOpening{{Label: "Wander"}},
		},
		{
			name:     "OnlySinceLastAssistant",
			material: []wire.ChatMessage{user("#open A | a holds"), assistant("ok"), user("and now?")},
		},
		{
			name:     "Skip",
			material: []wire.ChatMessage{user("just talk")},
		},
		{
			name: "ToolResultsCount",
			material: []wire.ChatMessage{
				calling([3]string{"c1", "read_file", `{"path":"a"}`}),
				toolResult("c1", "#open Fix the parser | the tests pass"),
			},
			open: []engine.JanusOpening{{Label: "Fix the parser", Done: "the tests pass"}},
		},
		{
			name: "RecallResultsIgnored",
			material: []wire.ChatMessage{
				user("#open A | a holds"),
				recalling("c1", "r1"),
				toolResult("c1", "--- [ref:r2] #close A"),
			},
		},
		{
			name:     "AssistantDirectivesIgnored",
			material: []wire.ChatMessage{user("#open A | a holds"), assistant("#close A")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustModel(t)
			out := janusCall(t, m, janusInstruction, tt.material...)
			// A skip is the empty object: absent lists read as empty ones.
			for _, l := range []*[]engine.JanusClosure{&tt.close, &out.Close} {
				if *l == nil {
					*l = []engine.JanusClosure{}
				}
			}
			for _, l := range []*[]engine.JanusOpening{&tt.open, &out.Open} {
				if *l == nil {
					*l = []engine.JanusOpening{}
				}
			}
			if !reflect.DeepEqual(out.Close, tt.close) || !reflect.DeepEqual(out.Open, tt.open) {
				t.Fatalf("close %v open %v, want close %v open %v", out.Close, out.Open, tt.close, tt.open)
			}
			skip := len(tt.close) == 0 && len(tt.open) == 0
			if skip != (out.Guidance == "") {
				t.Fatalf("guidance %q for skip=%v", out.Guidance, skip)
			}
			for _, l := range strings.Split(out.Guidance, "\n") {
				if !skip && !strings.HasPrefix(l, "I ") {
					t.Fatalf("guidance line %q does not start with \"I \"", l)
				}
			}
			if !sim.PlainText(out.Guidance) {
				t.Fatalf("guidance %q holds a line the simulation would read", out.Guidance)
			}
			// A correction changes only the instruction: the answer stays the same.
			again := janusCall(t, m, janusInstruction+"\n\nYour previous answer was rejected: open \"x\": no.\nCall update_intents again.", tt.material...)
			if fmt.Sprintf("%+v", again) != fmt.Sprintf("%+v", out) { // absent and empty lists alike
				t.Fatalf("corrected answer %+v, want the same %+v", again, out)
			}
		})
	}
}

// TestJanusInvalidOpenIsRejected checks that what the simulation emits for "#open LABEL" with no
// condition is an operation the engine's stack rejects.
func TestJanusInvalidOpenIsRejected(t *testing.T) {
	out := janusCall(t, mustModel(t), janusInstruction, user("#open Wander"))
	if _, _, err := (hippocam.IntentStack{}).Apply(out.Ops(), "m1"); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("Apply: %v, want EINVALID", err)
	}
}

func TestComponentFraming(t *testing.T) {
	m := mustModel(t)
	for _, role := range []hippocam.CallRole{hippocam.CallJanus, hippocam.CallPrecip, hippocam.CallPalim} {
		req := chat(system("prompt"), user("material"), assistant("not an instruction"))
		if _, err := m.Complete(role, req); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("%s without a final instruction: %v, want EINVALID", role, err)
		}
	}
}

func precipMemory(tb testing.TB, instruction string, material ...wire.ChatMessage) []string {
	tb.Helper()
	resp := complete(tb, mustModel(tb), hippocam.CallPrecip, componentChat(engine.PrecipToolSpec, instruction, material...))
	var out engine.PrecipOutput
	decodeCall(tb, resp, engine.PrecipTool, &out)
	if err := out.Validate(); err != nil {
		tb.Fatalf("memory breaks the contract: %v", err)
	}
	return strings.Split(out.Memory, "\n")
}

func precipInstruction(chain, closing string) string {
	return "Write the memory that will replace these messages.\n" + engine.ChainPrefix + chain + "\n" + engine.ClosingPrefix + closing + "\nCall write_memory."
}

func TestPrecip(t *testing.T) {
	tests := []struct {
		name     string
		chain    string
		closing  string
		material []wire.ChatMessage
		want     []string
	}{
		{
			name:    "FactsDetailsImpressions",
			chain:   "Prepare the invoice report > Read the exports",
			closing: "Read the exports",
			material: []wire.ChatMessage{
				user("(Intent guidance) I now pursue \"Read the exports\"; it is done when both exports are read."),
				assistant("ok"),
				user("!call read_file {\"path\":\"exports/shop.csv\"}"),
				calling([3]string{"c1", "read_file", `{"path":"exports/shop.csv"}`}),
				toolResult("c1", "revenue_shop := 1200\ndetail shop_owner := Dana\nrow;1;2;3"),
				user("- [good] margin := 0.3\n!say noted\ndetail shop_owner (in the archive)"),
				assistant("noted"),
				user("detail shop_city := Lyon\ndetail older_thing (in the archive)"),
			},
			want: []string{
				`I finished "Read the exports".`,
				"revenue_shop := 1200",
				"- [good] margin := 0.3",
				"detail shop_owner (in the archive)",
				"detail shop_city (in the archive)",
				"detail older_thing (in the archive)",
			},
		},
		{
			name:    "CoalescedChain",
			chain:   "Prepare the invoice report > Write the report",
			closing: "Write the report > Prepare the invoice report",
			material: []wire.ChatMessage{
				user("[ref:r1] Memory of my finished work on \"Read the exports\".\nI finished \"Read the exports\".\nrevenue_shop := 1200\ndetail shop_owner (in the archive)"),
				user("#close Read the exports\nrevenue_shop := 1250\n!say corrected"),
				assistant("corrected"),
			},
			want: []string{
				`I finished "Write the report", then "Prepare the invoice report".`,
				"revenue_shop := 1200",
				"revenue_shop := 1250",
				"detail shop_owner (in the archive)",
			},
		},
		{
			name:    "RecallResultsIgnored",
			chain:   "A",
			closing: "A",
			material: []wire.ChatMessage{
				user("!ask secret"),
				recalling("c1", "r1"),
				toolResult("c1", "Layer r1:\n--- m1\nsecret := 7\ndetail hidden := x"),
				assistant("secret := 7"),
			},
			want: []string{`I finished "A".`, "secret := 7"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := precipMemory(t, precipInstruction(tt.chain, tt.closing), tt.material...)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("memory\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if !sim.PlainText(got[0]) {
				t.Fatalf("first line %q would be read as a directive or knowledge", got[0])
			}
		})
	}
}

func palimOutput(tb testing.TB, instruction string, material ...wire.ChatMessage) engine.PalimOutput {
	tb.Helper()
	resp := complete(tb, mustModel(tb), hippocam.CallPalim, componentChat(engine.PalimToolSpec, instruction, material...))
	var out engine.PalimOutput
	decodeCall(tb, resp, engine.PalimTool, &out)
	if err := out.Validate(); err != nil {
		tb.Fatalf("palim output breaks the contract: %v", err)
	}
	return out
}

const palimInstruction = "Consolidate every message above into memory. Call write_prefix_memory."

func neutral(facts ...string) []hippocam.KnowledgeItem {
	items := make([]hippocam.KnowledgeItem, len(facts))
	for i, f := range facts {
		items[i] = hippocam.KnowledgeItem{Fact: f, Evaluation: hippocam.EvalNeutral}
	}
	return items
}

func TestPalim(t *testing.T) {
	invoice := []wire.ChatMessage{
		user("[ref:p0] Consolidated memory of my earlier work (recall the ref for the messages beneath it).\nNarrative:\nI finished \"Set up\".\nI worked through 2 messages outside any finished intent.\nKnowledge:\n- [neutral] currency := EUR\n- [neutral] detail setup_host (in the archive)"),
		user("[ref:r1] Memory of my finished work on \"Read the exports\".\nI finished \"Read the exports\".\nrevenue_shop := 1200\nrevenue_market := 800\ndetail shop_owner (in the archive)"),
		user("#close Read the exports\nrevenue_shop := 1250\n!say corrected"),
		assistant("corrected"),
		user("[ref:r2] Memory of my finished work on \"Write the report\".\nI finished \"Write the report\".\ncurrency := USD"),
		user("detail report_path := out/report.md"),
		recalling("c1", "r1"),
		toolResult("c1", "--- m1\nrevenue_shop := 1\ndetail shop_owner := Dana"),
		assistant("ok"),
	}
	wantKnowledge := neutral(
		"currency := USD",
		"detail setup_host (in the archive)",
		"revenue_shop := 1250",
		"revenue_market := 800",
		"detail shop_owner (in the archive)",
		"detail report_path (in the archive)",
	)
	t.Run("MergeLatestWins", func(t *testing.T) {
		out := palimOutput(t, palimInstruction, invoice...)
		wantNarrative := []string{
			`I finished "Set up".`,
			"I worked through 2 messages outside any finished intent.",
			`I finished "Read the exports".`,
			"I worked through 2 messages outside any finished intent.",
			`I finished "Write the report".`,
			"I worked through 2 messages outside any finished intent.",
		}
		if got := strings.Split(out.Narrative, "\n"); !reflect.DeepEqual(got, wantNarrative) {
			t.Errorf("narrative\n%s\nwant\n%s", out.Narrative, strings.Join(wantNarrative, "\n"))
		}
		if !reflect.DeepEqual(out.Knowledge, wantKnowledge) {
			t.Errorf("knowledge %v\nwant %v", out.Knowledge, wantKnowledge)
		}
		if !sim.PlainText(out.Narrative) {
			t.Errorf("narrative %q holds a line the simulation would read", out.Narrative)
		}
	})
	t.Run("ConciseDropsNarrative", func(t *testing.T) {
		out := palimOutput(t, palimInstruction+"\n\n"+engine.ConciseMarker+": the memory must be shorter.", invoice...)
		if out.Narrative != "" {
			t.Errorf("narrative %q, want none", out.Narrative)
		}
		if !reflect.DeepEqual(out.Knowledge, wantKnowledge) {
			t.Errorf("knowledge %v\nwant %v", out.Knowledge, wantKnowledge)
		}
	})
	t.Run("ConciseKeepsNarrativeWithoutKnowledge", func(t *testing.T) {
		out := palimOutput(t, palimInstruction+"\n"+engine.ConciseMarker+".", user("hello"), assistant("ok"))
		if out.Narrative != "I worked through 2 messages outside any finished intent." || len(out.Knowledge) != 0 {
			t.Errorf("got %+v", out)
		}
	})
}

// TestLineForms checks how lines are read, through the knowledge PALIM keeps of them.
func TestLineForms(t *testing.T) {
	tests := []struct {
		line string
		want string // the knowledge item, or "" for none
	}{
		{"a := 1", "a := 1"},
		{"  - [bad] a := 1  ", "a := 1"},
		{"* b:=2", "b := 2"},
		{"• [good] detail c := x", "detail c (in the archive)"},
		{"detail d (in the archive)", "detail d (in the archive)"},
		{"- [neutral] detail d (in the archive)", "detail d (in the archive)"},
		{"x.y-z_1 := v w", "x.y-z_1 := v w"},
		{"[neutral]g := 7", "g := 7"},
		{"détail_é := ü", "détail_é := ü"},
		{"detail := 5", "detail := 5"},
		{"not a fact: f := 1", ""},
		{"--- [ref:x] h := 1", ""},
		{"detail two words (in the archive)", ""},
		{"!say k := 1", ""},
		{"#open k := 1 | x", ""},
		{"I finished \"k := 1\".", ""},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			out := palimOutput(t, palimInstruction, user(tt.line))
			var got string
			if len(out.Knowledge) > 1 {
				t.Fatalf("knowledge %v, want at most one item", out.Knowledge)
			} else if len(out.Knowledge) == 1 {
				got = out.Knowledge[0].Fact
			}
			if got != tt.want {
				t.Fatalf("knowledge %q, want %q", got, tt.want)
			}
		})
	}
}
