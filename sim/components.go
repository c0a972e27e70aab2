package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// How the simulated JANUS, PRECIP and PALIM answer. Each reads the material of its request
// (engine/contract.go: system prompt, material, one final instruction) and calls its contract's
// tool. The words they write are chosen so that the simulation never mistakes them for a
// directive, a fact, a detail or an impression: every such line starts with "I ".

// Lines that name an undertaking. PRECIP opens every memory with an undertakingDone line and PALIM
// writes undertakingRun lines for work that no intent memory covers; PALIM carries both forward
// into later prefix memories.
const (
	undertakingDone = "I finished "
	undertakingRun  = "I worked through "
)

// answer is what the simulated model says: text, tool calls, or both. Complete gives the calls
// their ids.
type answer struct {
	content string
	calls   []hippocam.ToolCall
}

// callAnswer is an answer made of one call of tool with args encoded as JSON.
func callAnswer(tool string, args any) (answer, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		return answer{}, hippocam.Errorf(hippocam.EINTERNAL, "encode %s arguments: %v", tool, err)
	}
	return answer{calls: []hippocam.ToolCall{{Name: tool, Arguments: strings.TrimSpace(b.String())}}}, nil
}

// contractAnswer answers in the form the request allows: a call of the contract's tool when the
// request offers it (and does not forbid tool calls), else the same JSON object as the text.
func contractAnswer(r *request, tool string, args any) (answer, error) {
	a, err := callAnswer(tool, args)
	if err != nil || (r.offers(tool) && !r.noTools) {
		return a, err
	}
	return answer{content: a.calls[0].Arguments}, nil
}

// janus emits exactly the #close and #open lines of the messages that arrived after the last
// assistant message (or consolidated memory, which stands for answered work) of the material, valid or not; with none it skips. Asked again with the same
// material (a correction changes only the instruction) it gives the same answer.
func janus(r *request) (answer, error) {
	lo, hi, _, err := r.frame(hippocam.CallJanus)
	if err != nil {
		return answer{}, err
	}
	from := lo
	for i := hi - 1; i >= lo; i-- {
		if r.msgs[i].Role == hippocam.RoleAssistant || r.memory[i] {
			from = i + 1
			break
		}
	}
	out := engine.JanusOutput{Close: []engine.JanusClosure{}, Open: []engine.JanusOpening{}}
	for i := from; i < hi; i++ {
		if !r.directives(i) {
			continue
		}
		for _, l := range r.lines(i) {
			switch l.kind {
			case kindClose:
				out.Close = append(out.Close, engine.JanusClosure{Label: l.label})
			case kindOpen:
				out.Open = append(out.Open, engine.JanusOpening{Label: l.label, Done: l.cond})
			}
		}
	}
	out.Guidance = janusGuidance(&out)
	return contractAnswer(r, engine.JanusTool, out)
}

// janusGuidance says in the first person what ended, what comes next and when it is done. A
// skip has no guidance.
func janusGuidance(out *engine.JanusOutput) string {
	var lines []string
	for _, c := range out.Close {
		lines = append(lines, fmt.Sprintf("I have closed %q.", oneLine(c.Label)))
	}
	for _, o := range out.Open {
		if done := oneLine(o.Done); done != "" {
			lines = append(lines, fmt.Sprintf("I now pursue %q; it is done when %s.", oneLine(o.Label), done))
		} else {
			lines = append(lines, fmt.Sprintf("I now pursue %q.", oneLine(o.Label)))
		}
	}
	if len(out.Open) == 0 && len(out.Close) > 0 {
		lines = append(lines, "I go on with the work that is still open.")
	}
	return strings.Join(lines, "\n")
}

// precip writes the memory of a closed span: a first line naming the closed intents, every fact
// line of the span as it was written, then one impression per key for each detail of the span
// and each impression already in it. Nothing else of the span survives; recall results are not
// evidence and are skipped.
func precip(r *request) (answer, error) {
	lo, hi, instruction, err := r.frame(hippocam.CallPrecip)
	if err != nil {
		return answer{}, err
	}
	memory := []string{finishedLine(closingLabels(instruction))}
	var fromDetails, kept []string
	for i := lo; i < hi; i++ {
		if r.recallResult[i] {
			continue
		}
		for _, l := range r.lines(i) {
			switch l.kind {
			case kindFact:
				memory = append(memory, l.raw)
			case kindDetail:
				fromDetails = append(fromDetails, l.key)
			case kindImpression:
				kept = append(kept, l.key)
			}
		}
	}
	seen := map[string]bool{}
	for _, key := range append(fromDetails, kept...) {
		if !seen[key] {
			seen[key] = true
			memory = append(memory, impressionText(key))
		}
	}
	return contractAnswer(r, engine.PrecipTool, engine.PrecipOutput{Memory: strings.Join(memory, "\n")})
}

// closingLabels reads the labels of the intents being closed, innermost first, from the line of
// the instruction that starts with engine.ClosingPrefix.
func closingLabels(instruction string) []string {
	for _, s := range strings.Split(instruction, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s), engine.ClosingPrefix); ok {
			var labels []string
			for _, label := range strings.Split(rest, engine.ChainSeparator) {
				if label = oneLine(label); label != "" {
					labels = append(labels, label)
				}
			}
			return labels
		}
	}
	return nil
}

// finishedLine is the first line of an intent memory.
func finishedLine(labels []string) string {
	if len(labels) == 0 {
		return undertakingDone + "a part of the work."
	}
	quoted := make([]string, len(labels))
	for i, l := range labels {
		quoted[i] = fmt.Sprintf("%q", l)
	}
	return undertakingDone + strings.Join(quoted, ", then ") + "."
}

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
