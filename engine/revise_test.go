package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// firstReader reads the context the way a careful real model might, without taking "the latest
// occurrence wins" for granted: the first statement of key counts, unless a later line says, in
// so many words, that it replaces that statement; then the replacing one counts, and so on.
func firstReader(msgs []hippocam.Message, key string) string {
	var lines []string
	for _, m := range msgs {
		lines = append(lines, strings.Split(m.Content, "\n")...)
	}
	current, at := "", -1
	for i, l := range lines {
		if v, ok := factOf(l, key); ok {
			current, at = v, i
			break
		}
	}
	for changed := true; changed && at >= 0; {
		changed = false
		for i := at + 1; i < len(lines); i++ {
			if strings.Contains(lines[i], engine.RevisesMarker) && strings.Contains(lines[i], "«"+key+" := "+current+"»") {
				if v, ok := factOf(lines[i-1], key); ok {
					current, at, changed = v, i-1, true
					break
				}
			}
		}
	}
	return current
}

// factOf reads "KEY := VALUE" from a line, after a list marker, a knowledge id and an
// evaluation tag.
func factOf(line, key string) (string, bool) {
	t := strings.TrimLeft(strings.TrimSpace(line), "-*• ")
	if _, rest, ok := engine.CutKnowledgeID(t); ok {
		t = rest
	}
	if strings.HasPrefix(t, "[") {
		if i := strings.Index(t, "]"); i >= 0 {
			t = strings.TrimSpace(t[i+1:])
		}
	}
	v, ok := strings.CutPrefix(t, key+" := ")
	return strings.TrimSpace(v), ok
}

// Revisions win visibly: when consolidated memories in one context state a fact and its later
// revisions, the context says which statement is current, so that a reader who takes the first
// statement (and follows explicit replacements) reads the latest value.
func TestRevisionsWinVisibly(t *testing.T) {
	for _, rounds := range [][3]int{{6, 6, 6}, {12, 4, 2}, {20, 8, 3}, {3, 3, 3}, {30, 10, 1}} {
		t.Run(fmt.Sprint(rounds), func(t *testing.T) { revisionsWinVisibly(t, rounds) })
	}
}

func revisionsWinVisibly(t *testing.T, rounds [3]int) {
	c := newConversation(t, mustEngine(t, gateWindow(8000), mustSim(t)))
	for i, price := range []int{19, 29, 33} {
		c.mustUser(fmt.Sprintf("#open Round %d | the price is set\n!say opened", i))
		c.mustUser(fmt.Sprintf("!call read_price {\"round\":%d}", i))
		c.mustResults(fmt.Sprintf("price := %d\n%s", price, filler(fmt.Sprintf("p%d", i), 10)))
		for k := 0; k < rounds[i]; k++ {
			c.mustUser(fmt.Sprintf("!call read_file {\"path\":\"r%d-%d\"}", i, k))
			c.mustResults(filler(fmt.Sprintf("r%d-%d", i, k), 40))
		}
		c.mustUser(fmt.Sprintf("#close Round %d\n!say closed", i))
	}
	s := c.session()
	statements := 0
	for _, m := range s.Context {
		statements += strings.Count(m.Content, "price := ")
	}
	if got := firstReader(s.Context, "price"); got != "33" {
		t.Fatalf("a first-statement reader reads price = %q, want 33 (%d statements in view)", got, statements)
	}
	if got := c.mustUser("!ask price").Answer.Content; got != "price := 33" {
		t.Fatalf("!ask price = %q", got)
	}
	if statements < 2 {
		t.Fatalf("%d statements of price in view: the scenario shows nothing", statements)
	}
	t.Logf("%d statements of price in view, %d prefix consolidations", statements, s.Consolidations.Prefix)
}
