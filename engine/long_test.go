package engine_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/internal/testenv"
)

// longSession drives rounds of held-out-style work at W: nested intents opened and closed,
// tool calls with large results, facts that are revised, details only the archive keeps, and
// questions about any of them. keys bounds the distinct facts (a bounded set of entities when
// small, thousands of distinct facts when large). It returns how many questions were answered
// right and asked, and fails on any step error (a capacity error included).
func longSession(t *testing.T, w, rounds, keys int, seed uint64) (right, asked int, last *engine.Result, c *conversation) {
	t.Helper()
	return longSessionIn(t, w, rounds, keys, seed, consolidateInline)
}

// longSessionIn is longSession with consolidation done as mode says.
func longSessionIn(t *testing.T, w, rounds, keys int, seed uint64, mode consolidation) (right, asked int, last *engine.Result, c *conversation) {
	t.Helper()
	return longSessionWith(t, engine.ForWindow(w), rounds, keys, seed, mode)
}

// longSessionWith is longSessionIn with the engine configured as cfg says.
func longSessionWith(t *testing.T, cfg engine.Config, rounds, keys int, seed uint64, mode consolidation) (right, asked int, last *engine.Result, c *conversation) {
	t.Helper()
	w := cfg.Window
	rng := rand.New(rand.NewPCG(seed, 7))
	c = newConversation(t, mustEngine(t, cfg, mustSim(t)))
	c.mode = mode
	value := map[string]string{}
	var known []string
	depth := 0
	for r := 0; r < rounds; r++ {
		switch {
		case depth < 2 && r%9 == 0:
			c.mustUser(fmt.Sprintf("#open Task %d | task %d is done\nWork on task %d.", r, r, r))
			depth++
		case depth > 0 && r%9 == 5:
			c.mustUser(fmt.Sprintf("#close Task %d\n!say closed", r-5-(r-5)%9))
			depth = max(0, depth-1)
		case r%4 == 1:
			k := fmt.Sprintf("d%d", r) // details are stated once (a serial, an owner), facts revised
			v := fmt.Sprintf("v%d", r)
			value[k] = "detail:" + v
			known = append(known, k)
			c.mustUser(fmt.Sprintf("!call read_file {\"path\":\"f%d\"}", r))
			last = c.mustResults(fmt.Sprintf("detail %s := %s\n%s", k, v, filler(fmt.Sprintf("f%d", r), 25)))
		case r%4 == 3 && len(known) > 0:
			k := known[rng.IntN(len(known))]
			want := value[k]
			if len(want) > 7 && want[:7] == "detail:" {
				want = want[7:]
			}
			res := c.mustUser("!ask " + k)
			asked++
			if res.Answer.Content == k+" := "+want {
				right++
			} else {
				t.Logf("round %d: %q, want %s := %s", r, res.Answer.Content, k, want)
			}
			last = res
		default:
			k := fmt.Sprintf("k%d", rng.IntN(keys))
			v := fmt.Sprintf("w%d", r)
			value[k] = v
			known = append(known, k)
			last = c.mustUser(fmt.Sprintf("%s := %s\n!say noted", k, v))
		}
		if last != nil && last.MaxRequestTokens > w {
			t.Fatalf("round %d: a request of %d tokens, over W = %d", r, last.MaxRequestTokens, w)
		}
	}
	return right, asked, last, c
}

// Long sessions never jam: a thousand rounds at W = 8,000 with a bounded set of entities replay
// to the end with no capacity error and no request over W. Measured: 189 of 194 questions right;
// the misses are revised facts whose latest statement receded to an impression while an older
// statement stayed in a shallower layer, so that the simulated agent's recall meets the older
// one first (a limit of receding by impression, reported in the closing note).
func TestLongSessionNeverJams(t *testing.T) {
	rounds := 1000 // the long step; the everyday step plays the first 120
	if testing.Short() || !testenv.Long() {
		rounds = 120
	}
	right, asked, _, c := longSession(t, 8000, rounds, 40, 1)
	if right*100 < asked*95 {
		t.Fatalf("%d of %d questions right, under 95 %%", right, asked)
	}
	t.Logf("%d of %d questions right", right, asked)
	checkUseReinforces(t, c, rounds)
	c.checkLossless()
}

// detailRound is the last round at or before r in which longSessionWith surely stated a detail:
// details fall on rounds 1 mod 4, unless the round opened or closed a task (0 or 5 mod 9).
func detailRound(r int) int {
	for r -= ((r % 4) + 3) % 4; r%9 == 0 || r%9 == 5; r -= 4 {
	}
	return r
}

// checkUseReinforces: a detail the agent used (!use) in the session's last rounds is answered at
// the end with no recall or search, although the answer that used it never restated it.
func checkUseReinforces(t *testing.T, c *conversation, rounds int) {
	t.Helper()
	r := detailRound(rounds - 39) // a detail stated ten cycles ago, long archived
	key := fmt.Sprintf("d%d", r)
	used := c.mustUser("!use " + key)
	if used.Answer.Content != "used "+key {
		t.Fatalf("!use %s = %q", key, used.Answer.Content)
	}
	for k := 0; k < 12; k++ {
		c.mustUser(fmt.Sprintf("later_%d := %d\n!say noted", k, k))
	}
	for _, m := range c.session().Context {
		if strings.Contains(m.Content, key) {
			t.Logf("in view: %s %s %q", m.ID, m.Kind, clip(m.Content))
		}
	}
	res := c.mustUser("!ask " + key)
	if want := fmt.Sprintf("%s := v%d", key, r); res.Answer.Content != want || res.RecallCalls != 0 {
		t.Fatalf("after !use: %q with %d recall and search calls; want %q with none", res.Answer.Content, res.RecallCalls, want)
	}
}

// Thousands of distinct facts at W = 8,000 over 1,000 rounds: knowledge outgrows any window, so
// the least recently used recedes into the archive; nothing jams, no request exceeds W, and the
// questions are answered through impressions, or search once even those are gone. Measured:
// 192 of 194 right; the two misses are details an impression still names, whose layers the
// simulated agent pages through without reaching the value before its recall room runs out (a
// known limit at this window, with role prompts of about a thousand tokens each).
func TestLongSessionManyFacts(t *testing.T) {
	rounds := 1000 // the long step; the everyday step plays the first 200
	if testing.Short() || !testenv.Long() {
		rounds = 200
	}
	right, asked, _, c := longSession(t, 8000, rounds, 5000, 2)
	if right*100 < asked*98 {
		t.Fatalf("%d of %d questions right, under 98 %%", right, asked)
	}
	t.Logf("%d of %d questions right", right, asked)
	checkUseReinforces(t, c, rounds)
	c.checkLossless()
}
