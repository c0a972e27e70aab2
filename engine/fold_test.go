package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/tokenizer"
)

// scriptedPalim answers PALIM requests with the given JSON answers in turn (the last one
// repeated) and records their instructions; it answers nothing else.
type scriptedPalim struct {
	mu           sync.Mutex
	answers      []string
	instructions []string
}

func (m *scriptedPalim) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if req.Role != hippocam.CallPalim {
		return nil, fmt.Errorf("unexpected %s call", req.Role)
	}
	m.instructions = append(m.instructions, req.Messages[len(req.Messages)-1].Content)
	answer := m.answers[min(len(m.instructions), len(m.answers))-1]
	return &hippocam.Response{Message: hippocam.Message{Role: hippocam.RoleAssistant, Content: answer}, FinishReason: "stop"}, nil
}

func (m *scriptedPalim) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.instructions)
}

// foldFixture is an engine at W = 8,000 (Δmin = 512) over a scripted PALIM, and a session.
type foldFixture struct {
	t     *testing.T
	e     *Engine
	model *scriptedPalim
	s     *hippocam.Session
}

func newFoldFixture(t *testing.T, answers ...string) *foldFixture {
	t.Helper()
	model := &scriptedPalim{answers: answers}
	e, err := New(ForWindow(8000), model, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &foldFixture{t: t, e: e, model: model, s: NewSession("", "fold", time.Unix(0, 0))}
}

// add appends a message to the session's context.
func (f *foldFixture) add(m hippocam.Message) {
	m.ID = f.s.NextID("m")
	if m.Kind == "" {
		m.Kind = hippocam.KindRaw
	}
	m.Tokens = hippocam.MessageTokens(f.e.tok, &m)
	f.s.Context = append(f.s.Context, m)
}

// addMemory appends a prefix memory holding items, rendered as PALIM's memories are.
func (f *foldFixture) addMemory(items ...hippocam.KnowledgeItem) string {
	st := f.e.newStep(f.s, nil, Input{})
	m := st.prefixMemory(&PalimOutput{Knowledge: items}, nil, 1)
	f.s.Seq = st.s.Seq
	m.ID = f.s.NextID("m")
	f.s.Context = append(f.s.Context, m)
	return m.Ref
}

// fold runs FOLD on the whole context in a fresh step and returns the step.
func (f *foldFixture) fold() *step {
	f.t.Helper()
	st := f.e.newStep(f.s, hippocam.SessionArchive(inmem.New(), "", "fold"), Input{})
	if err := st.fold(context.Background(), 0, len(st.s.Context)); err != nil {
		f.t.Fatal(err)
	}
	f.s = st.s
	return st
}

// words returns n words of plain text without particulars.
func words(n int, seed string) string {
	w := make([]string, n)
	for i := range w {
		w[i] = []string{"river", "stone", "garden", "lantern", "window", "meadow", "harbour", "orchard"}[(i+len(seed))%8]
	}
	return seed + " " + strings.Join(w, " ")
}

func palimAnswer(t *testing.T, out PalimOutput) string {
	t.Helper()
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A fold that cannot save Δmin while keeping the knowledge the span's memories carry is not
// asked for: PALIM is not called at all.
func TestFoldSkippedWhenKnowledgeLeavesNoSaving(t *testing.T) {
	var items []hippocam.KnowledgeItem
	for i := range 30 {
		items = append(items, hippocam.KnowledgeItem{Fact: words(20, fmt.Sprintf("fact%c", 'a'+i%26)), Evaluation: hippocam.EvalNeutral})
	}
	f := newFoldFixture(t, palimAnswer(t, PalimOutput{Narrative: "I talked."}))
	f.addMemory(items...)
	f.add(hippocam.Message{Role: hippocam.RoleUser, Content: words(120, "chat")})
	f.add(hippocam.Message{Role: hippocam.RoleAssistant, Content: "Noted."})
	size := tokens(f.s.Context)
	if size <= f.e.cfg.MinSaving {
		t.Fatalf("the span has %d tokens, no more than Δmin: the test shows nothing", size)
	}
	st := f.fold()
	if n := f.model.calls(); n != 0 {
		t.Fatalf("PALIM called %d times for a %d-token span whose memories' knowledge alone takes %d", n, size, st.foldFloor(0, 3, 1))
	}
	// The same span without the knowledge is asked for.
	g := newFoldFixture(t, palimAnswer(t, PalimOutput{Narrative: "I talked."}))
	g.add(hippocam.Message{Role: hippocam.RoleUser, Content: words(600, "chat")})
	g.add(hippocam.Message{Role: hippocam.RoleAssistant, Content: "Noted."})
	g.fold()
	if g.model.calls() != 1 || g.s.Context[0].Kind != hippocam.KindPrefixMemory {
		t.Fatalf("a span without knowledge: %d calls, first message %s; want one call and a fold", g.model.calls(), g.s.Context[0].Kind)
	}
}

// A span PALIM could not fold by Δmin is not asked again, in a later step, until it has grown by
// enough that a memory as large as the last one would save Δmin.
func TestKeptSpanNotAskedAgainUntilItGrows(t *testing.T) {
	long := words(800, "story") // PALIM keeps it all: the fold saves next to nothing
	f := newFoldFixture(t, palimAnswer(t, PalimOutput{Knowledge: []hippocam.KnowledgeItem{{Fact: long, Evaluation: hippocam.EvalNeutral}}}))
	f.add(hippocam.Message{Role: hippocam.RoleUser, Content: long})
	f.add(hippocam.Message{Role: hippocam.RoleAssistant, Content: "Noted."})
	f.fold()
	first := f.model.calls()
	if first != 1 || f.s.Context[0].Kind != hippocam.KindRaw {
		t.Fatalf("%d calls, first message %s; want 1 call (no narrative left to shorten) and the span kept", first, f.s.Context[0].Kind)
	}
	f.fold() // unchanged
	if n := f.model.calls() - first; n != 0 {
		t.Fatalf("the unchanged kept span was asked again (%d calls)", n)
	}
	f.add(hippocam.Message{Role: hippocam.RoleUser, Content: words(60, "more")})
	f.fold() // grown a little: a memory as large as the last still saves too little
	if n := f.model.calls() - first; n != 0 {
		t.Fatalf("the span grown by %d tokens was asked again (%d calls)", f.s.Context[2].Tokens, n)
	}
	f.add(hippocam.Message{Role: hippocam.RoleUser, Content: words(700, "again")})
	f.fold()
	if f.model.calls() == first {
		t.Fatalf("the span grown by %d tokens was not asked again", f.s.Context[3].Tokens)
	}
	// An answer that still has a narrative to shorten is asked again, up to J times.
	g := newFoldFixture(t, palimAnswer(t, PalimOutput{Narrative: "I read a long story.", Knowledge: []hippocam.KnowledgeItem{{Fact: long, Evaluation: hippocam.EvalNeutral}}}))
	g.add(hippocam.Message{Role: hippocam.RoleUser, Content: long})
	g.add(hippocam.Message{Role: hippocam.RoleAssistant, Content: "Noted."})
	g.fold()
	if n := g.model.calls(); n != 1+g.e.cfg.ConciseTries || !strings.Contains(g.model.instructions[1], ConciseMarker) {
		t.Fatalf("%d calls for a memory with a narrative that saved too little, want %d, the later ones asking for a more concise version", n, 1+g.e.cfg.ConciseTries)
	}
}

var sizeWords = regexp.MustCompile(regexp.QuoteMeta(SizeMarker) + ` (\d+) words`)

// Items of earlier memories are kept by id: the engine copies them verbatim (evaluation and
// revisions included), after which come the answer's own items; an id that names no item of
// the span's memories is quoted back. The request names its size in words, never less than the
// kept knowledge needs.
func TestFoldKeepsItemsByID(t *testing.T) {
	items := []hippocam.KnowledgeItem{
		{Fact: "the boat is blue", Evaluation: hippocam.EvalNeutral},
		{Fact: "the bridge is closed", Evaluation: hippocam.EvalBad, Revises: hippocam.Revisions{"the bridge is open"}},
		{Fact: "the market opens early", Evaluation: hippocam.EvalGood},
	}
	// An item whose note names a statement of the span's memories: kept, the note goes stale.
	ferry := hippocam.KnowledgeItem{Fact: "the ferry is late", Evaluation: hippocam.EvalBad, Revises: hippocam.Revisions{"the market opens early"}}
	items = append(items, ferry)
	f := newFoldFixture(t)
	ref := f.addMemory(items...)
	f.add(hippocam.Message{Role: hippocam.RoleUser, Content: words(700, "chat") + "\nthe boat is red now, and the ferry is late"})
	f.add(hippocam.Message{Role: hippocam.RoleAssistant, Content: "Noted."})
	newItem := hippocam.KnowledgeItem{Fact: "the boat is red", Evaluation: hippocam.EvalNeutral, Revises: hippocam.Revisions{"the boat is blue", "the boat is green"}}
	f.model.answers = []string{
		palimAnswer(t, PalimOutput{Keep: []string{ref + ".K2", "r99.K1", ref + ".K3-K5"}, Knowledge: []hippocam.KnowledgeItem{newItem}}),
		palimAnswer(t, PalimOutput{Keep: []string{ref + ".K2-K3", ref + ".K3", ref + ".K4"}, Knowledge: []hippocam.KnowledgeItem{newItem}}),
	}
	f.fold()
	if f.model.calls() != 2 || !strings.Contains(f.model.instructions[1], `keep names "r99.K1", "`+ref+`.K3-K5"`) {
		t.Fatalf("%d calls; want the unknown id quoted back:\n%s", f.model.calls(), f.model.instructions[len(f.model.instructions)-1])
	}
	m := f.s.Context[0]
	want := []hippocam.KnowledgeItem{items[1], items[2], {Fact: ferry.Fact, Evaluation: ferry.Evaluation}, newItem}
	got, _ := json.Marshal(m.Knowledge)
	wantJSON, _ := json.Marshal(want)
	if m.Kind != hippocam.KindPrefixMemory || string(got) != string(wantJSON) {
		t.Fatalf("memory %s knowledge\n%s\nwant\n%s", m.Kind, got, wantJSON)
	}
	for _, line := range []string{
		"K1 [bad] the bridge is closed\n  " + RevisesLine("the bridge is open"),
		"K3 [bad] the ferry is late\nK4 [neutral] the boat is red\n  (this replaces the earlier statements «the boat is blue», «the boat is green»; the line above is current)",
	} {
		if !strings.Contains(m.Content, line) {
			t.Errorf("memory lacks\n%s\nit reads\n%s", line, m.Content)
		}
	}
	// The size line: words, and room for the kept knowledge.
	match := sizeWords.FindStringSubmatch(f.model.instructions[0])
	if match == nil || strings.Contains(f.model.instructions[0], " tokens") {
		t.Fatalf("the request names no size in words:\n%s", f.model.instructions[0])
	}
	if n, _ := strconv.Atoi(match[1]); n < keptWords(f.s.Context[:1]) {
		t.Fatalf("the request asks for %d words, less than the %d the kept items take", n, keptWords(f.s.Context[:1]))
	}
}

// Revisions read from JSON as a list of strings or as a single string.
func TestRevisionsJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"fact":"a","evaluation":"good","revises":"b"}`:           `["b"]`,
		`{"fact":"a","evaluation":"good","revises":["b","c"]}`:     `["b","c"]`,
		`{"fact":"a","evaluation":"good","revises":null}`:          `null`,
		`{"fact":"a","evaluation":"good","revises":["", " ","d"]}`: `["d"]`,
	} {
		var k hippocam.KnowledgeItem
		if err := json.Unmarshal([]byte(in), &k); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got, _ := json.Marshal(k.Revises); string(got) != want {
			t.Errorf("%s: revises %s, want %s", in, got, want)
		}
	}
	var k hippocam.KnowledgeItem
	if err := json.Unmarshal([]byte(`{"fact":"a","revises":3}`), &k); err == nil {
		t.Error("a number was read as revisions")
	}
}

// The prompts ask for relative dates to be resolved, and PALIM's states the recession rule once,
// with sizes in words.
func TestPromptsResolveDates(t *testing.T) {
	for name, p := range map[string]string{"palim": palimPrompt, "precip": precipPrompt} {
		if !strings.Contains(p, "Resolving a relative date or time against the date of the message") {
			t.Errorf("%s prompt does not ask for relative dates to be resolved", name)
		}
		if strings.Contains(p, "Derive nothing") {
			t.Errorf("%s prompt forbids deriving anything", name)
		}
	}
	if n := strings.Count(strings.Join(strings.Fields(palimPrompt), " "), "brought forward least recently"); n != 1 {
		t.Errorf("the recession rule appears %d times in PALIM's prompt, want once", n)
	}
	if strings.Contains(palimPrompt, "tokens") {
		t.Error("PALIM's prompt speaks of tokens, which the model cannot see")
	}
}
