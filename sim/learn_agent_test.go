package sim_test

import (
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/openai/wire"
)

// pick is rule 2 of a decision, written out independently of the simulation: the option at
// FNV-1a(message, 0, key, 0, seed) mod n.
func pick(message, key string, seed int64, options ...string) string {
	h := fnv.New64a()
	h.Write([]byte(message + "\x00" + key + "\x00" + strconv.FormatInt(seed, 10)))
	return key + " = " + options[h.Sum64()%uint64(len(options))]
}

// seedPicking returns a seed under which rule 2 picks option for message, so that a test can
// tell advice that was followed from a lucky hash.
func seedPicking(t *testing.T, message, key, option string, options ...string) int64 {
	t.Helper()
	for seed := int64(0); seed < 1000; seed++ {
		if pick(message, key, seed, options...) == key+" = "+option {
			return seed
		}
	}
	t.Fatalf("no seed picks %s", option)
	return 0
}

// decideWith asks the simulated agent for msgs with the given seed in the request's extra
// fields, through the JSON a client would send.
func decideWith(t *testing.T, seed int64, msgs ...wire.ChatMessage) string {
	t.Helper()
	req := agentChat(msgs...)
	if seed != 0 {
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		body = []byte(strings.Replace(string(body), "{", `{"seed":`+strconv.FormatInt(seed, 10)+",", 1))
		req = &wire.ChatRequest{}
		if err := json.Unmarshal(body, req); err != nil {
			t.Fatal(err)
		}
	}
	return answerText(t, complete(t, mustModel(t), hippocam.CallAgent, req))
}

func TestDecideWithoutAdvice(t *testing.T) {
	task := "Sales report\ntags: revenue weekly\ndecide status_filter: shipped | all | pending"
	seen := map[string]bool{}
	for seed := int64(0); seed < 12; seed++ {
		got := decideWith(t, seed, user(task))
		if want := pick(task, "status_filter", seed, "shipped", "all", "pending"); got != want {
			t.Fatalf("seed %d: %q, want %q", seed, got, want)
		}
		seen[got] = true
	}
	if len(seen) < 2 {
		t.Errorf("twelve seeds all chose %v: the seed does not vary the choice", seen)
	}
}

func TestDecideAdvice(t *testing.T) {
	const key = "k"
	task := func(tags string) string { return "Pick one\ntags: " + tags + "\ndecide k: a | b | c" }
	tests := []struct {
		name     string
		advisory string // a user message before the task's own
		tags     string
		want     string // "" means rule 2 over hashOver
		hashOver []string
	}{
		{name: "Use", advisory: "use k = b", tags: "x", want: "b"},
		{name: "UseOfNoOptionIgnored", advisory: "use k = z", tags: "x", hashOver: []string{"a", "b", "c"}},
		{name: "OtherKeyIgnored", advisory: "use other = b", tags: "x", hashOver: []string{"a", "b", "c"}},
		{name: "LatestWins", advisory: "use k = a\nuse k = b", tags: "x", want: "b"},
		{name: "LatestWinsReversed", advisory: "use k = b\nuse k = a", tags: "x", want: "a"},
		{name: "LatestOfThree", advisory: "use k = c\nuse k = a\nuse k = b", tags: "x", want: "b"},
		{name: "ListMarkersAndTags", advisory: "- [good] use k = c\n* use k = b", tags: "x", want: "b"},
		{name: "AvoidClearsChoice", advisory: "use k = a\navoid k = a", tags: "x", hashOver: []string{"b", "c"}},
		{name: "AvoidOtherKeepsChoice", advisory: "use k = a\navoid k = b", tags: "x", want: "a"},
		{name: "UseLiftsAvoid", advisory: "avoid k = a\nuse k = a", tags: "x", want: "a"},
		{name: "UseLiftsAvoidForLater", advisory: "avoid k = a\nuse k = a\nuse k = b\navoid k = b", tags: "x", hashOver: []string{"a", "c"}},
		{name: "AvoidedSetSurvivesUse", advisory: "avoid k = a\nuse k = b\navoid k = b", tags: "x", want: "c"},
		{name: "AllAvoided", advisory: "avoid k = a\navoid k = b\navoid k = c", tags: "x", hashOver: []string{"a", "b", "c"}},
		{name: "WhenHolds", advisory: "use k = b when: x y", tags: "y z x", want: "b"},
		{name: "WhenCommas", advisory: "use k = b when: x, y", tags: "x y", want: "b"},
		{name: "WhenMissingTag", advisory: "use k = b when: x y", tags: "x", hashOver: []string{"a", "b", "c"}},
		{name: "NotWhenExcludes", advisory: "use k = b not when: y", tags: "x y", hashOver: []string{"a", "b", "c"}},
		{name: "NotWhenElsewhere", advisory: "use k = b not when: y", tags: "x", want: "b"},
		{name: "WhenAndNotWhen", advisory: "use k = b when: x not when: y", tags: "x", want: "b"},
		{name: "WhenAndNotWhenExcluded", advisory: "use k = b when: x not when: y", tags: "x y", hashOver: []string{"a", "b", "c"}},
		{name: "SemicolonBeforeNotWhen", advisory: "use k = c when: x; not when: y\nuse k = b when: x, not when: z\nuse k = a when: x — not when: y", tags: "x y", want: "b"},
		{name: "LaterInapplicableDoesNotCount", advisory: "use k = c\nuse k = a when: nope", tags: "x", want: "c"},
		{name: "AvoidNotWhen", advisory: "use k = a\navoid k = a not when: x", tags: "x", want: "a"},
		{name: "TrailingWordsNotAdvice", advisory: "use k = b because it worked", tags: "x", hashOver: []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := task(tt.tags)
			for seed := int64(0); seed < 4; seed++ {
				got := decideWith(t, seed, user(tt.advisory), user(msg))
				want := key + " = " + tt.want
				if tt.want == "" {
					want = pick(msg, key, seed, tt.hashOver...)
				}
				if got != want {
					t.Fatalf("seed %d: %q, want %q", seed, got, want)
				}
			}
		})
	}
}

func TestDecideFeedbackAsAdvice(t *testing.T) {
	msg := func(tags string) string { return "Pick one\ntags: " + tags + "\ndecide k: a | b" }
	earlier := "Pick one\ntags: x\ndecide k: a | b"
	tests := []struct {
		name, advisory, tags, want string
	}{
		{"Wrong", earlier + "\nk = a\nfeedback: k = a wrong", "x", "b"},
		{"Right", "tags: x\nfeedback: k = b right", "x", "b"},
		{"Reference", "tags: x\nfeedback: k = a right, reference k = b", "x", "b"},
		{"NearestTags", "tags: x\nfeedback: k = a wrong\ntags: y\nfeedback: k = b wrong", "y", "a"},
		{"NearestTagsEarlier", "tags: x\nfeedback: k = a wrong\ntags: y\nfeedback: k = b wrong", "x", "b"},
		{"NoTagsAppliesEverywhere", "feedback: k = a wrong", "anything", "b"},
		{"AdviceAfterFeedbackWins", "tags: x\nfeedback: k = b right\nuse k = a", "x", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A seed under which the hash alone would choose the other value.
			other := map[string]string{"a": "b", "b": "a"}[tt.want]
			seed := seedPicking(t, msg(tt.tags), "k", other, "a", "b")
			if got := decideWith(t, seed, user(tt.advisory), user(msg(tt.tags))); got != "k = "+tt.want {
				t.Errorf("%q, want k = %s", got, tt.want)
			}
		})
	}
	t.Run("FeedbackOfOtherTagsIgnored", func(t *testing.T) {
		m := msg("y")
		seed := seedPicking(t, m, "k", "a", "a", "b")
		if got := decideWith(t, seed, user("tags: x\nfeedback: k = a wrong"), user(m)); got != "k = a" {
			t.Errorf("%q, want the hash's k = a: the feedback was for tags x", got)
		}
	})
	t.Run("OwnFeedbackIgnored", func(t *testing.T) {
		m := msg("x") + "\nfeedback: k = a wrong"
		seed := seedPicking(t, m, "k", "a", "a", "b")
		if got := decideWith(t, seed, user(m)); got != "k = a" {
			t.Errorf("%q, want the hash's k = a: feedback in the task's own message is not advice", got)
		}
	})
	t.Run("QuestionFeedbackIsNotAFact", func(t *testing.T) {
		got := decideWith(t, 0, user("feedback: budget := 40 right"), user("!ask budget"))
		if got != "budget := unknown" {
			t.Errorf("%q, want budget := unknown", got)
		}
	})
}

func TestDecideLines(t *testing.T) {
	t.Run("InOrderWithOtherDirectives", func(t *testing.T) {
		m := "Two choices\ntags: x\n!say first\ndecide k1: a | b\nbudget := 7\ndecide k2: p | q\n!ask budget"
		got := decideWith(t, 0, user("use k1 = b\nuse k2 = q"), user(m))
		if want := "first\nk1 = b\nk2 = q\nbudget := 7"; got != want {
			t.Errorf("%q, want %q", got, want)
		}
	})
	t.Run("AdvisoryDecisionsNotAnswered", func(t *testing.T) {
		advisory := "An earlier task:\nOld task\ndecide old_key: p | q\nold_key = p\nfeedback: old_key = p right"
		m := "New task\ndecide k: a | b"
		if got, want := decideWith(t, 3, user(advisory), user(m)), pick(m, "k", 3, "a", "b"); got != want {
			t.Errorf("%q, want only the task's own decision %q", got, want)
		}
	})
	t.Run("AnsweredOnce", func(t *testing.T) {
		m := "Task\ndecide k: a | b"
		if got := decideWith(t, 0, user(m), assistant("k = a"), user("thanks")); got != "ok" {
			t.Errorf("%q, want ok: the decision was answered", got)
		}
	})
	t.Run("NotAfterGuidance", func(t *testing.T) {
		m := "Task\ndecide k: a | b"
		got := decideWith(t, 1, user(m), user("(Intent guidance) I now work on \"Task\"; it is done when k is chosen."))
		if want := pick(m, "k", 1, "a", "b"); got != want {
			t.Errorf("%q, want %q", got, want)
		}
	})
	t.Run("MalformedIsText", func(t *testing.T) {
		if got := decideWith(t, 0, user("decide k:\ndecide : a | b")); got != "ok" {
			t.Errorf("%q, want ok", got)
		}
	})
}

func TestDecideSeedThroughExtra(t *testing.T) {
	var req wire.ChatRequest
	body := `{"model":"m","seed":7,"temperature":0,"messages":[{"role":"user","content":"Task\ndecide k: a | b | c | d | e"}]}`
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	got := answerText(t, complete(t, mustModel(t), hippocam.CallAgent, &req))
	if want := pick("Task\ndecide k: a | b | c | d | e", "k", 7, "a", "b", "c", "d", "e"); got != want {
		t.Errorf("%q, want %q (seed 7)", got, want)
	}
}

func TestPrecipAdvice(t *testing.T) {
	instruction := precipInstruction(`"Pick one"`, `"Pick one"`)
	memory := precipMemory(t, instruction,
		user("Pick one\ntags: x y\ndecide k: a | b\ndecide j: p | q\ndecide i: m | n\nuse h = 1 when: x"),
		assistant("k = a\nj = p\ni = m"),
		user("feedback: k = a wrong\nfeedback: j = p right\nfeedback: i = m right, reference i = n\nfeedback: budget := 4 wrong"),
	)
	want := []string{"use h = 1 when: x", "avoid k = a when: x y", "use j = p when: x y", "use i = n when: x y"}
	if got := memory[1:]; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("memory after its first line:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	t.Run("NoTags", func(t *testing.T) {
		memory := precipMemory(t, instruction, user("Pick one\ndecide k: a | b"), assistant("k = b"), user("feedback: k = b right"))
		if got := memory[len(memory)-1]; got != "use k = b" {
			t.Errorf("last line %q, want use k = b", got)
		}
	})
}

func TestPalimAdvice(t *testing.T) {
	out := palimOutput(t, palimInstruction,
		user("Pick one\ntags: x\ndecide k: a | b"),
		assistant("k = a"),
		user("feedback: k = a wrong"),
		user("Pick again\ntags: x\ndecide k: a | b\ncolor := red"),
		assistant("k = b"),
		user("feedback: k = b right"),
		user("use k = a when: y\nuse j = p not when: x"),
		user("avoid j = q not when: z"),
	)
	// avoid k = a when: x is replaced by the later use k = b when: x (same key and when-set,
	// another kind), and moves to where that was said; use j = p (no when) by avoid j = q.
	want := neutral("color := red", "use k = b when: x", "use k = a when: y", "avoid j = q not when: z")
	if len(out.Knowledge) != len(want) {
		t.Fatalf("knowledge %v, want %v", out.Knowledge, want)
	}
	for i := range want {
		if out.Knowledge[i].Fact != want[i].Fact || out.Knowledge[i].Evaluation != want[i].Evaluation {
			t.Errorf("knowledge[%d] = %+v, want %+v", i, out.Knowledge[i], want[i])
		}
	}
	t.Run("MemoryIsAdviceForTheAgent", func(t *testing.T) {
		// The agent reads the knowledge as the engine renders it.
		var lines []string
		for _, k := range out.Knowledge {
			lines = append(lines, "- ["+string(k.Evaluation)+"] "+k.Fact)
		}
		m := "Pick once more\ntags: x\ndecide k: a | b"
		seed := seedPicking(t, m, "k", "a", "a", "b")
		if got := decideWith(t, seed, user("[ref:r1] I consolidated earlier work.\n"+strings.Join(lines, "\n")), user(m)); got != "k = b" {
			t.Errorf("%q, want k = b", got)
		}
	})
}

func TestPalimAdviceFit(t *testing.T) {
	material := []wire.ChatMessage{
		user("use k1 = a when: x"),
		user("budget := 4"),
		user("use k2 = b when: x"),
		user("use k3 = c when: x"),
	}
	full := palimOutput(t, palimInstruction, material...)
	if len(full.Knowledge) != 4 {
		t.Fatalf("knowledge %v, want 4 items", full.Knowledge)
	}
	// Room for about two items: the fact becomes an impression first, then the least recently
	// stated go, advice among them, and the last item says more is in the archive.
	out := palimOutput(t, palimInstruction+"\n"+engine.FitMarker+" 18 words.", material...)
	var facts []string
	for _, k := range out.Knowledge {
		facts = append(facts, k.Fact)
	}
	got := strings.Join(facts, "\n")
	if strings.Contains(got, "k1") || !strings.Contains(got, "use k3 = c when: x") || !strings.HasSuffix(got, "more in the archive") {
		t.Errorf("knowledge cut to 18 words:\n%s\nwant the oldest advice gone, the newest kept, and the archive line last", got)
	}
	if strings.Contains(got, "detail k") {
		t.Errorf("advice turned into an impression:\n%s", got)
	}
}
