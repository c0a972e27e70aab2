package sessions_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sessions"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// newInlineService is newService with consolidation inside the step, so that every committed
// session is consolidated as far as it will be.
func newInlineService(tb testing.TB, window int) (*sessions.Service, hippocam.Store) {
	return newInlineServiceOver(tb, window, inmem.New())
}

// gateConfig is engine.ForWindow(window) with JANUS asked before the main call (the paper's
// order), for tests that need an intent's consolidation in the very step that closes it.
func gateConfig(window int) engine.Config {
	cfg := engine.ForWindow(window)
	cfg.Janus = engine.JanusGate
	return cfg
}

// newInlineServiceOver is newInlineService over the given store.
func newInlineServiceOver(tb testing.TB, window int, st hippocam.Store) (*sessions.Service, hippocam.Store) {
	tb.Helper()
	return newInlineServiceWith(tb, engine.ForWindow(window), st)
}

// newInlineServiceWith is newInlineServiceOver with the engine's configuration.
func newInlineServiceWith(tb testing.TB, ecfg engine.Config, st hippocam.Store) (*sessions.Service, hippocam.Store) {
	tb.Helper()
	tok := tokenizer.MustDefault()
	model, err := openai.New(openai.Config{BaseURL: "http://sim.local/v1", Model: sim.ModelID,
		HTTPClient: &http.Client{Transport: sim.New(tok).Transport()}})
	if err != nil {
		tb.Fatal(err)
	}
	e, err := engine.New(ecfg, model, tok, nil)
	if err != nil {
		tb.Fatal(err)
	}
	svc, err := sessions.New(sessions.Config{Engine: e, Store: st, Inline: true})
	if err != nil {
		tb.Fatal(err)
	}
	return svc, st
}

// longSession runs a named session of many turns, each with a fact and a detail (a detail is
// not carried into memories: only recall finds it again), until PALIM has folded its prefix.
func longSession(t *testing.T, svc *sessions.Service, name string, turns int) (*client, *hippocam.Session) {
	t.Helper()
	c := &client{framing: []hippocam.Message{{Role: hippocam.RoleSystem, Content: "You help."}}}
	var last *hippocam.Session
	for i := 0; i < turns; i++ {
		c.history = append(c.history, hippocam.Message{Role: hippocam.RoleUser,
			Content: fmt.Sprintf("fact_%d := %d\n%s\ndetail code_%d := c%d\n!say noted %d", i, i*7, strings.Repeat("Some words of context. ", 30), i, i, i)})
		res, err := svc.Continue(context.Background(), c.request(name, false))
		if err != nil {
			t.Fatal(err)
		}
		c.history = append(c.history, res.Answer)
		last = res.Session
	}
	if last.Usage[hippocam.CallPalim].Calls == 0 || last.Consolidations.Prefix == 0 {
		t.Fatalf("the session was never folded (usage %+v): the test needs a consolidated parent", last.Usage)
	}
	return c, last
}

// shown returns the messages of a context a model is sent (framing and branch marks left out).
func shown(ctx []hippocam.Message) []hippocam.Message {
	var out []hippocam.Message
	for _, m := range ctx {
		if !m.Kind.Hidden() {
			out = append(out, m)
		}
	}
	return out
}

// checkHolds fails unless the session's transcript, read from its own tree, is want: every
// message by role and text, in order.
func checkHolds(t *testing.T, st hippocam.Store, id string, want []hippocam.Message) {
	t.Helper()
	ctx := context.Background()
	sess, err := st.Session(ctx, "t", id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sessions.Transcript(ctx, hippocam.SessionArchive(st, "t", id), sess.Context)
	if err != nil {
		t.Fatalf("%s: reading its tree: %v", id, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s holds %d transcript messages, the client sent %d", id, len(got), len(want))
	}
	for i := range want {
		if got[i].Role != want[i].Role || got[i].Content != want[i].Content {
			t.Fatalf("%s: message %d is %s %q, the client's %s %q", id, i, got[i].Role, got[i].Content, want[i].Role, want[i].Content)
		}
	}
}

// A fork of a consolidated session takes over the parent's context at the fork point: its
// import makes no PALIM call, its context opens with the parent's memories (same ids and refs),
// the memories' children are its own to recall, now and after the parent is deleted, and it
// holds its whole history. In every store: the tree is copied through ordinary commits.
func TestForkInheritsConsolidations(t *testing.T) {
	stores := map[string]func(t *testing.T) hippocam.Store{
		"inmem":    func(t *testing.T) hippocam.Store { return inmem.New() },
		"sqlite":   func(t *testing.T) hippocam.Store { return openSQLite(t, filepath.Join(t.TempDir(), "hippocam.db")) },
		"postgres": func(t *testing.T) hippocam.Store { return openPostgres(t, postgresSchema(t)) },
	}
	for _, name := range []string{"inmem", "sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) { testForkInherits(t, stores[name](t)) })
	}
}

func testForkInherits(t *testing.T, store hippocam.Store) {
	svc, st := newInlineServiceOver(t, 8000, store)
	ctx := context.Background()
	c, parent := longSession(t, svc, "long", 40)

	// Rewind three turns and say something else instead.
	cut := len(c.history) - 6
	f := &client{framing: c.framing, history: append(slices.Clone(c.history[:cut]), hippocam.Message{Role: hippocam.RoleUser, Content: "!say forked"})}
	res, err := svc.Continue(ctx, f.request("long", false))
	if err != nil {
		t.Fatal(err)
	}
	if res.Event != sessions.EventForked || res.Session.ID != "long~2" {
		t.Fatalf("the rewound history answered as %s in %s", res.Event, res.Session.ID)
	}
	fork := res.Session
	if fk := fork.Transcript.Fork; fk == nil || fk.From != "long" || fk.At != cut {
		t.Fatalf("fork origin %+v, want from long at %d", fk, cut)
	}
	if n := res.Step.Usage[hippocam.CallPalim].Calls; n != 0 || res.Step.PrefixConsolidations != 0 {
		t.Fatalf("the fork's import made %d PALIM calls: it consolidated its history again", n)
	}
	pc, fc := shown(parent.Context), shown(fork.Context)
	if !pc[0].Consolidated() {
		t.Fatalf("the parent's context does not open with a memory: %+v", pc[0])
	}
	memories := 0
	for i := range pc {
		if !pc[i].Consolidated() {
			break
		}
		if i >= len(fc) || fc[i].ID != pc[i].ID || fc[i].Ref != pc[i].Ref || fc[i].Content != pc[i].Content {
			// The parent's last memory may span the fork point: it is opened, not shared.
			if i == 0 {
				t.Fatalf("fork context message %d is not the parent's memory %s", i, pc[i].ID)
			}
			break
		}
		memories++
	}
	// The children of every inherited memory are the fork's own.
	for _, m := range fc[:memories] {
		want, err := st.Children(ctx, "t", "long", m.Ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.Children(ctx, "t", "long~2", m.Ref)
		if err != nil {
			t.Fatalf("recall of inherited %s from the fork: %v", m.Ref, err)
		}
		if len(got) != len(want) || got[0].ID != want[0].ID || got[len(got)-1].Content != want[len(want)-1].Content {
			t.Fatalf("the fork's children of %s differ from the parent's", m.Ref)
		}
	}
	f.history = append(f.history, res.Answer)
	checkHolds(t, st, "long~2", f.history)
	// The fork's search index holds the inherited messages, archived ones included.
	hits, err := st.Search(ctx, "t", "long~2", "code_3", 5)
	if err != nil || len(hits) == 0 || !strings.Contains(hits[0].Message.Content, "detail code_3 := c3") {
		t.Fatalf("searching the fork for an inherited message: %v %+v", err, hits)
	}

	// A detail is in no memory: the model recalls it from the inherited tree, once stored ...
	f.history = append(f.history, hippocam.Message{Role: hippocam.RoleUser, Content: "!ask code_1"})
	res, err = svc.Continue(ctx, f.request("long", false))
	if err != nil {
		t.Fatal(err)
	}
	if res.Session.ID != "long~2" || res.Answer.Content != "code_1 := c1" {
		t.Fatalf("%s answered %q, want code_1 := c1 (recalled from an inherited memory)", res.Session.ID, res.Answer.Content)
	}
	f.history = append(f.history, res.Answer)
	// ... and in a fork's first step, before its tree is stored.
	g := &client{framing: c.framing, history: append(slices.Clone(c.history[:cut]), hippocam.Message{Role: hippocam.RoleUser, Content: "!ask code_2"})}
	res, err = svc.Continue(ctx, g.request("long", false))
	if err != nil {
		t.Fatal(err)
	}
	if res.Session.ID != "long~3" || res.Answer.Content != "code_2 := c2" {
		t.Fatalf("%s answered %q, want code_2 := c2 (recalled from an inherited memory)", res.Session.ID, res.Answer.Content)
	}
	checkHolds(t, st, "long~3", append(g.history, res.Answer))

	// The parent goes; the fork keeps everything, and recalls from what it inherited.
	if err := svc.Delete(ctx, "t", "long"); err != nil {
		t.Fatal(err)
	}
	f.history = append(f.history, hippocam.Message{Role: hippocam.RoleUser, Content: "!ask code_3"})
	res, err = svc.Continue(ctx, f.request("long", false))
	if err != nil {
		t.Fatal(err)
	}
	if res.Event != sessions.EventContinued || res.Session.ID != "long~2" || res.Answer.Content != "code_3 := c3" {
		t.Fatalf("after the parent's deletion: %s in %s, answer %q", res.Event, res.Session.ID, res.Answer.Content)
	}
	f.history = append(f.history, res.Answer)
	checkHolds(t, st, "long~2", f.history)
}

// The same history with another last question (what eval sends for every question after the
// first) forks at the end of the shared history: nothing of it is consolidated again.
func TestForkSameHistoryAnotherQuestion(t *testing.T) {
	svc, st := newInlineService(t, 8000)
	ctx := context.Background()
	c, _ := longSession(t, svc, "q", 30)
	shared := slices.Clone(c.history)
	c.history = append(c.history, hippocam.Message{Role: hippocam.RoleUser, Content: "!ask fact_29"})
	if _, err := svc.Continue(ctx, c.request("q", false)); err != nil {
		t.Fatal(err)
	}
	for k, key := range []string{"fact_0", "fact_28", "fact_5"} {
		f := &client{framing: c.framing, history: append(slices.Clone(shared), hippocam.Message{Role: hippocam.RoleUser, Content: "!ask " + key})}
		res, err := svc.Continue(ctx, f.request("q", false))
		if err != nil {
			t.Fatal(err)
		}
		if res.Event != sessions.EventForked || res.Session.ID != fmt.Sprintf("q~%d", k+2) {
			t.Fatalf("question %d answered as %s in %s", k, res.Event, res.Session.ID)
		}
		if n := res.Step.Usage[hippocam.CallPalim].Calls; n != 0 {
			t.Fatalf("question %d: the fork's import made %d PALIM calls", k, n)
		}
		if !strings.HasPrefix(res.Answer.Content, key+" := ") || strings.HasSuffix(res.Answer.Content, "unknown") {
			t.Fatalf("question %d answered %q", k, res.Answer.Content)
		}
		checkHolds(t, st, res.Session.ID, append(f.history, res.Answer))
	}
}

// A fork whose point falls inside a memory's span opens that memory and takes over its
// children up to the point; what follows is imported. It still holds its whole history.
func TestForkInsideAMemory(t *testing.T) {
	svc, st := newInlineService(t, 8000)
	ctx := context.Background()
	c, parent := longSession(t, svc, "m", 40)
	first := shown(parent.Context)[0]
	kids, err := sessions.Transcript(ctx, hippocam.SessionArchive(st, "t", "m"), []hippocam.Message{first})
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) < 4 {
		t.Fatalf("the first memory covers %d messages; the test needs a few", len(kids))
	}
	cut := len(kids) / 2
	cut -= cut % 2 // before a user message
	f := &client{framing: c.framing, history: append(slices.Clone(c.history[:cut]), hippocam.Message{Role: hippocam.RoleUser, Content: "!ask fact_0"})}
	res, err := svc.Continue(ctx, f.request("m", false))
	if err != nil {
		t.Fatal(err)
	}
	if res.Event != sessions.EventForked || res.Session.Transcript.Fork.At != cut {
		t.Fatalf("answered as %s, fork %+v; want a fork at %d", res.Event, res.Session.Transcript.Fork, cut)
	}
	beneath := map[string]bool{} // every message in first's tree
	var walk func(ref string)
	walk = func(ref string) {
		kids, err := st.Children(ctx, "t", "m", ref)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			beneath[k.ID] = true
			if k.Ref != "" {
				walk(k.Ref)
			}
		}
	}
	walk(first.Ref)
	opened := 0
	for _, m := range res.Session.Context {
		if m.ID == first.ID {
			t.Fatalf("the fork holds the memory %s, whose span goes past its point", first.ID)
		}
		if beneath[m.ID] {
			opened++
		}
	}
	if opened == 0 {
		t.Fatalf("the fork took over nothing of the memory %s it opened", first.ID)
	}
	if res.Answer.Content != "fact_0 := 0" {
		t.Fatalf("the fork answered %q", res.Answer.Content)
	}
	checkHolds(t, st, res.Session.ID, append(f.history, res.Answer))
}

// A fork made while the parent's consolidation is left to jobs (the server's default) inherits
// what is committed, and ids it allocates never collide with the inherited ones.
func TestForkDeferredConsolidation(t *testing.T) {
	svc, st := newService(t, 8000)
	ctx := context.Background()
	c := &client{framing: []hippocam.Message{{Role: hippocam.RoleSystem, Content: "You help."}}}
	for i := 0; i < 40; i++ {
		c.history = append(c.history, hippocam.Message{Role: hippocam.RoleUser,
			Content: fmt.Sprintf("fact_%d := %d\n%s\n!say noted %d", i, i, strings.Repeat("Some words of context. ", 30), i)})
		res, err := svc.Continue(ctx, c.request("d", false))
		if err != nil {
			t.Fatal(err)
		}
		c.history = append(c.history, res.Answer)
	}
	for k := 0; k < 3; k++ {
		f := &client{framing: c.framing, history: append(slices.Clone(c.history[:len(c.history)-2*k-2]), hippocam.Message{Role: hippocam.RoleUser, Content: fmt.Sprintf("!ask fact_%d", k)})}
		res, err := svc.Continue(ctx, f.request("d", false))
		if err != nil {
			t.Fatal(err)
		}
		if res.Event != sessions.EventForked {
			t.Fatalf("fork %d answered as %s", k, res.Event)
		}
		if res.Answer.Content != fmt.Sprintf("fact_%d := %d", k, k) {
			t.Fatalf("fork %d answered %q", k, res.Answer.Content)
		}
		checkHolds(t, st, res.Session.ID, append(f.history, res.Answer))
	}
}

// A client that rewinds inside a fork forks from that fork, where its history is: the new
// fork takes over the fork's consolidations, not only the shared part of the first session.
func TestForkOfAFork(t *testing.T) {
	svc, st := newInlineServiceWith(t, gateConfig(8000), inmem.New())
	ctx := context.Background()
	c, _ := longSession(t, svc, "ff", 20)
	// Rewind to the start of the session's second half and go on there, long enough to fold.
	c.history = c.history[:20]
	for i := 100; i < 125; i++ {
		c.history = append(c.history, hippocam.Message{Role: hippocam.RoleUser,
			Content: fmt.Sprintf("fact_%d := %d\n%s\ndetail code_%d := c%d\n!say noted %d", i, i*7, strings.Repeat("Some words of context. ", 30), i, i, i)})
		res, err := svc.Continue(ctx, c.request("ff", false))
		if err != nil {
			t.Fatal(err)
		}
		if res.Session.ID != "ff~2" {
			t.Fatalf("turn %d answered in %s", i, res.Session.ID)
		}
		c.history = append(c.history, res.Answer)
	}
	// Now rewind inside ff~2, past what ff shares with it.
	cut := len(c.history) - 4
	f := &client{framing: c.framing, history: append(slices.Clone(c.history[:cut]), hippocam.Message{Role: hippocam.RoleUser, Content: "!say again"})}
	res, err := svc.Continue(ctx, f.request("ff", false))
	if err != nil {
		t.Fatal(err)
	}
	if fk := res.Session.Transcript.Fork; res.Session.ID != "ff~3" || fk == nil || fk.From != "ff~2" || fk.At != cut {
		t.Fatalf("%s forked with origin %+v, want ff~3 from ff~2 at %d", res.Session.ID, res.Session.Transcript.Fork, cut)
	}
	if n := res.Step.Usage[hippocam.CallPalim].Calls; n != 0 {
		t.Fatalf("the fork of a fork made %d PALIM calls", n)
	}
	checkHolds(t, st, "ff~3", append(f.history, res.Answer))
}

// A fork opens with the parent's intents that began before its point and are still open in the
// parent: they were open there.
func TestForkInheritsOpenIntents(t *testing.T) {
	svc, _ := newInlineService(t, 8000)
	ctx := context.Background()
	c := &client{framing: []hippocam.Message{{Role: hippocam.RoleSystem, Content: "You help."}}}
	var parent *hippocam.Session
	for _, text := range []string{"#open Ship the release | the tag is pushed\n!say a", "!say b", "#open Check the build | the build passes\n!say c", "#close Check the build\n!say d", "!say e"} {
		c.history = append(c.history, hippocam.Message{Role: hippocam.RoleUser, Content: text})
		res, err := svc.Continue(ctx, c.request("st", false))
		if err != nil {
			t.Fatal(err)
		}
		c.history = append(c.history, res.Answer)
		parent = res.Session
	}
	if got := parent.Stack.Labels(); !slices.Equal(got, []string{"Ship the release"}) {
		t.Fatalf("the parent's stack is %v", got)
	}
	f := &client{framing: c.framing, history: append(slices.Clone(c.history[:2]), hippocam.Message{Role: hippocam.RoleUser, Content: "!say x"})}
	res, err := svc.Continue(ctx, f.request("st", false))
	if err != nil {
		t.Fatal(err)
	}
	if res.Event != sessions.EventForked || !slices.Equal(res.Session.Stack.Labels(), []string{"Ship the release"}) {
		t.Fatalf("%s: the fork's stack is %v, want the intent open at its point", res.Event, res.Session.Stack.Labels())
	}
	// Before the intent opened, the fork has none.
	g := &client{framing: c.framing, history: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!say y"}}}
	res, err = svc.Continue(ctx, g.request("st", false))
	if err != nil {
		t.Fatal(err)
	}
	if res.Event != sessions.EventForked || len(res.Session.Stack) != 0 {
		t.Fatalf("%s: a fork from the start has the stack %v", res.Event, res.Session.Stack.Labels())
	}
}

// The framing in effect at a fork's point is read from the inherited tree, where a version's mark
// may lie inside a memory: a fork with that same framing records no new version.
func TestForkKeepsTheFramingInEffect(t *testing.T) {
	svc, st := newInlineService(t, 8000)
	ctx := context.Background()
	c := &client{framing: []hippocam.Message{{Role: hippocam.RoleSystem, Content: "You help."}}}
	for i := 0; i < 40; i++ {
		if i == 2 {
			c.framing = []hippocam.Message{{Role: hippocam.RoleSystem, Content: "You help. It is Monday."}}
		}
		c.history = append(c.history, hippocam.Message{Role: hippocam.RoleUser,
			Content: fmt.Sprintf("fact_%d := %d\n%s\n!say noted %d", i, i, strings.Repeat("Some words of context. ", 30), i)})
		res, err := svc.Continue(ctx, c.request("fr", false))
		if err != nil {
			t.Fatal(err)
		}
		c.history = append(c.history, res.Answer)
	}
	parent, err := st.Session(ctx, "t", "fr")
	if err != nil {
		t.Fatal(err)
	}
	marks := 0
	for _, m := range parent.Context {
		if m.Kind == hippocam.KindFraming {
			marks++
		}
	}
	if marks > 1 {
		t.Fatalf("both framing marks are still in the context: the test needs the second one folded")
	}
	f := &client{framing: c.framing, history: append(slices.Clone(c.history[:len(c.history)-6]), hippocam.Message{Role: hippocam.RoleUser, Content: "!say forked"})}
	res, err := svc.Continue(ctx, f.request("fr", false))
	if err != nil {
		t.Fatal(err)
	}
	all, err := hippocam.Expand(ctx, hippocam.SessionArchive(st, "t", res.Session.ID), res.Session.Context)
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, m := range all {
		if m.Role == hippocam.RoleSystem {
			versions = append(versions, m.Content)
		}
	}
	if !slices.Equal(versions, []string{"You help.", "You help. It is Monday."}) {
		t.Fatalf("the fork keeps the framing versions %q, want the parent's two", versions)
	}
}
