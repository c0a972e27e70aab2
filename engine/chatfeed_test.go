package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/tokenizer"
)

// The chat feed: a long chat between two friends, forwarded to an assistant one session per
// request, the shape of a long-conversation memory benchmark. Each session is a dated log of
// small talk with facts about the two of them (written as "KEY := VALUE" lines, which the
// simulated model keeps as knowledge): the session's events, dated relative to the log, and one
// or two facts that revise what an earlier session said. A line
// that asks the assistant to acknowledge it ("!say Noted."), so that every answer reads the
// same. No intent is ever opened: only pressure folds the history (PALIM), as in a chat.

var (
	chatPeople   = [2]string{"Irene", "Tomas"}
	chatOpenings = []string{
		"Hey, long time! How was your week?",
		"Hi! I have news, got a minute?",
		"Good morning! Did you sleep at all after the trip?",
		"Evening! I finally have some time to chat.",
	}
	chatTopics = []string{
		"the garden behind the flat", "the pottery class on Thursdays", "her brother's wedding plans",
		"the night shifts at the clinic", "the bike ride along the canal", "the book club's latest pick",
		"the dog's training sessions", "the new job interview", "the choir rehearsal", "the weekend market stall",
		"the move to a bigger place", "the hiking trip up north", "the cooking experiment with lentils",
		"the volunteering at the shelter", "the old camera she fixed", "the chess tournament at the library",
	}
	chatReplies = []string{
		"That sounds wonderful, tell me more about %s.",
		"I remember you mentioned %s before, how is it going now?",
		"Honestly %s has been the highlight of my month.",
		"I was a bit nervous about %s, but it went better than I expected.",
		"We should do %s together some time, I would love that.",
		"My sister asked about %s yesterday and I did not know what to say.",
		"I spent most of last weekend on %s and I am exhausted but happy.",
		"You always make %s sound so easy, I admire that.",
	}
	chatWhen     = []string{"yesterday", "last weekend", "two days ago", "this morning", "last Tuesday", "next Friday"}
	chatFactKeys = []string{
		"irene_job", "irene_city", "irene_pet", "irene_hobby", "irene_goal",
		"tomas_job", "tomas_city", "tomas_pet", "tomas_hobby", "tomas_goal",
		"shared_plan", "irene_sister", "tomas_kids", "irene_car", "tomas_team",
	}
	chatFactValues = []string{
		"nurse at the north clinic", "Lisbon", "a grey cat named Pixel", "pottery", "a marathon in spring",
		"carpenter", "Porto", "a beagle named Rollo", "choir singing", "opening a workshop",
		"a camping weekend in June", "Marta, a teacher", "two, aged 6 and 9", "an old green hatchback", "the Thursday five-a-side team",
		"nurse manager", "Braga", "a second cat named Byte", "watercolours", "a half marathon",
	}
)

// chatFeed returns the user messages of the feed: sessions of about perSession tokens each.
func chatFeed(seed uint64, sessions, perSession int) []string {
	rng := rand.New(rand.NewPCG(seed, 7))
	tok := tokenizer.MustDefault()
	day := time.Date(2024, time.March, 4, 0, 0, 0, 0, time.UTC)
	out := make([]string, 0, sessions)
	for s := 1; s <= sessions; s++ {
		day = day.AddDate(0, 0, 5+rng.IntN(20))
		var b strings.Builder
		fmt.Fprintf(&b, "Chat log, session %d, %d:%02d pm on %d %s, %d:\n", s, 1+rng.IntN(9), rng.IntN(60), day.Day(), day.Month(), day.Year())
		speaker := rng.IntN(2)
		fmt.Fprintf(&b, "%s: %s\n", chatPeople[speaker], chatOpenings[rng.IntN(len(chatOpenings))])
		revisions, events := 1+rng.IntN(2), 0
		for tok.Count(b.String()) < perSession {
			speaker = 1 - speaker
			topic := chatTopics[rng.IntN(len(chatTopics))]
			fmt.Fprintf(&b, "%s: "+chatReplies[rng.IntN(len(chatReplies))]+"\n", chatPeople[speaker], topic)
			switch rng.IntN(3) {
			case 0: // an event of this session, dated relative to it
				events++
				fmt.Fprintf(&b, "%s_event_s%d_%d := %s, %s, with %s\n", strings.ToLower(chatPeople[speaker]), s, events,
					topic, chatWhen[rng.IntN(len(chatWhen))], chatPeople[1-speaker])
			case 1:
				if revisions > 0 {
					revisions--
					fmt.Fprintf(&b, "%s := %s\n", chatFactKeys[rng.IntN(len(chatFactKeys))], chatFactValues[rng.IntN(len(chatFactValues))])
				}
			}
		}
		b.WriteString("!say Noted.")
		out = append(out, b.String())
	}
	return out
}

// chatFeedFigures are what one run of the feed measures.
type chatFeedFigures struct {
	content           int64 // tokens of the messages fed
	roleInput         int64 // input tokens of JANUS, PRECIP and PALIM
	palimCalls        int
	palimOutput       int64
	prefixConsolidate int
}

// runChatFeed feeds the chat to an engine over the simulated model at window w, one session
// per request, the assistant's system prompt as the agent's framing.
func runChatFeed(tb testing.TB, w int, sessions []string) chatFeedFigures {
	tb.Helper()
	tok := tokenizer.MustDefault()
	e := mustEngine(tb, engine.ForWindow(w), mustSim(tb))
	st := inmem.New()
	framing := []hippocam.Message{{Role: hippocam.RoleSystem, Content: "You are a personal assistant with a long memory. The user forwards chat logs between two friends, one session at a time. Acknowledge each log briefly."}}
	var f chatFeedFigures
	for i, text := range sessions {
		m := hippocam.Message{Role: hippocam.RoleUser, Content: text}
		f.content += int64(hippocam.MessageTokens(tok, &m))
		res, err := e.Advance(context.Background(), st, "", "chat", engine.Input{Messages: []hippocam.Message{m}, Framing: framing})
		if err != nil {
			tb.Fatalf("session %d: %v", i+1, err)
		}
		for role, u := range res.Usage {
			switch role {
			case hippocam.CallJanus, hippocam.CallPrecip, hippocam.CallPalim:
				f.roleInput += u.Input
			}
			if role == hippocam.CallPalim {
				f.palimCalls += u.Calls
				f.palimOutput += u.Output
			}
		}
		f.prefixConsolidate += res.PrefixConsolidations
	}
	return f
}

// BenchmarkChatFeed runs the chat feed (19 sessions of about 930 tokens, 17.7k in all) at
// W = 8,000 with the simulated model and reports what the consolidation roles cost per token
// of content, and PALIM's calls per committed prefix consolidation. Run it with
// `go test -run XXX -bench ChatFeed -benchtime 1x ./engine/`.
func BenchmarkChatFeed(b *testing.B) {
	sessions := chatFeed(1, 19, 930)
	var f chatFeedFigures
	for b.Loop() {
		f = runChatFeed(b, 8000, sessions)
	}
	b.ReportMetric(float64(f.content), "content-tokens")
	b.ReportMetric(float64(f.roleInput)/float64(f.content), "role-input/content")
	b.ReportMetric(float64(f.palimCalls), "palim-calls")
	b.ReportMetric(float64(f.prefixConsolidate), "prefix-consolidations")
	if f.prefixConsolidate > 0 {
		b.ReportMetric(float64(f.palimCalls)/float64(f.prefixConsolidate), "palim-calls/consolidation")
	}
	b.ReportMetric(float64(f.palimOutput), "palim-output-tokens")
}
