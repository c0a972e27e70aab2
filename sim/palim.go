package sim

import (
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// palim consolidates a prefix. The narrative has one line per undertaking: the undertaking lines
// of the intent memories and earlier prefix memories in it, and one line for each run of other
// messages. The knowledge holds every fact of the prefix, merged so that the latest value of a
// key wins, and one impression per key for the details and impressions in it, in the order their
// keys first appear, all neutral. Asked for a more concise version, it drops the narrative,
// unless the knowledge is empty and the answer would say nothing at all.
func palim(r *request) (answer, error) {
	lo, hi, instruction, err := r.frame(hippocam.CallPalim)
	if err != nil {
		return answer{}, err
	}
	var narrative []string
	var items []hippocam.KnowledgeItem
	at := map[string]int{} // item key ("fact KEY" or "impression KEY") -> index in items
	run := 0
	flush := func() {
		if run > 0 {
			narrative = append(narrative, runLine(run))
			run = 0
		}
	}
	for i := lo; i < hi; i++ {
		if r.recallResult[i] || r.recallCall[i] {
			continue
		}
		own := false
		for _, l := range r.lines(i) {
			if strings.HasPrefix(l.body, undertakingDone) || strings.HasPrefix(l.body, undertakingRun) {
				if !own {
					flush()
				}
				own = true
				narrative = append(narrative, l.body)
			}
			var id, fact string
			switch l.kind {
			case kindFact:
				id, fact = "fact "+l.key, factText(l.key, l.value)
			case kindDetail, kindImpression:
				id, fact = "impression "+l.key, impressionText(l.key)
			default:
				continue
			}
			if j, ok := at[id]; ok {
				items[j].Fact = fact
				continue
			}
			at[id] = len(items)
			items = append(items, hippocam.KnowledgeItem{Fact: fact, Evaluation: hippocam.EvalNeutral})
		}
		if !own {
			run++
		}
	}
	flush()
	out := engine.PalimOutput{Narrative: strings.Join(narrative, "\n"), Knowledge: items}
	if out.Knowledge == nil {
		out.Knowledge = []hippocam.KnowledgeItem{}
	}
	if strings.Contains(instruction, engine.ConciseMarker) && len(items) > 0 {
		out.Narrative = ""
	}
	return contractAnswer(r, engine.PalimTool, out)
}

// runLine is the narrative line for n messages that no memory covers.
func runLine(n int) string {
	if n == 1 {
		return undertakingRun + "1 message outside any finished intent."
	}
	return fmt.Sprintf("%s%d messages outside any finished intent.", undertakingRun, n)
}
