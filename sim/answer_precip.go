package sim

import (
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// precip writes the memory of a closed span: a first line naming the closed intents, every fact
// line of the span as it was written, then one impression per key for each detail of the span
// and each impression already in it. Nothing else of the span survives; recall results are not
// evidence and are skipped.
func precip(r *request) (answer, error) {
	lo, hi, instruction, err := r.frame(hippocam.CallPrecip)
	if err != nil {
		return answer{}, err
	}
	if key, ok := servedQuestion(instruction); ok {
		return reinforce(r, lo, hi, key)
	}
	memory := []string{finishedLine(closingLabels(instruction))}
	earlier := r.memoryFacts(lo)
	var fromDetails, kept []string
	var walk adviceWalk // advice lines stay; feedback becomes advice (learn_agent.go)
	for i := lo; i < hi; i++ {
		if r.recallResult[i] {
			continue
		}
		for _, l := range r.lines(i) {
			if a, ok := walk.see(&l, true); ok {
				memory = append(memory, a.text())
				continue
			}
			switch l.kind {
			case kindFact:
				memory = append(memory, l.raw)
				if old, seen := earlier[l.key]; seen && old != l.value {
					// Revisions win visibly: say which earlier statement this one replaces.
					memory = append(memory, "  "+engine.RevisesLine(factText(l.key, old)))
					earlier[l.key] = l.value
				}
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

// recalledLine opens the memory of reinforced evidence.
const recalledLine = "I recalled from the archive what the question needed."

// reinforce writes the memory of a step's recall exchanges [lo, hi) that served a question about
// key: the fact or detail lines about key in their results, as fact lines (the latest of them),
// unless a fact or detail line outside the exchanges and outside recall results states key.
// Nothing else of the results survives.
func reinforce(r *request, lo, hi int, key string) (answer, error) {
	memory := []string{recalledLine}
	stated := false
	for i := range r.msgs[:len(r.msgs)-1] { // the last message is the instruction
		if (i >= lo && i < hi) || r.recallResult[i] {
			continue
		}
		for _, l := range r.lines(i) {
			if (l.kind == kindFact || l.kind == kindDetail) && l.key == key {
				stated = true
			}
		}
	}
	var found string
	for i := lo; i < hi; i++ {
		if r.msgs[i].Role != hippocam.RoleTool {
			continue
		}
		for _, l := range r.lines(i) {
			if (l.kind == kindFact || l.kind == kindDetail) && l.key == key {
				found = factText(l.key, l.value)
			}
		}
	}
	if found != "" && !stated {
		memory = append(memory, found)
	}
	return contractAnswer(r, engine.PrecipTool, engine.PrecipOutput{Memory: strings.Join(memory, "\n")})
}

// servedQuestion reads the KEY of the question a reinforcement request names (the last !ask or
// !use on its engine.QuestionMarker line).
func servedQuestion(instruction string) (string, bool) {
	for _, s := range strings.Split(instruction, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(s), engine.QuestionMarker)
		if !ok {
			continue
		}
		at := max(strings.LastIndex(rest, "!ask "), strings.LastIndex(rest, "!use "))
		if at < 0 {
			return "", false
		}
		f := strings.Fields(rest[at+len("!ask "):])
		if len(f) == 0 {
			return "", false
		}
		key := strings.TrimRight(f[0], "»")
		return key, key != ""
	}
	return "", false
}

// memoryFacts returns the facts that the memories before message lo state, the latest
// statement of each key.
func (r *request) memoryFacts(lo int) map[string]string {
	facts := map[string]string{}
	for i := 0; i < lo; i++ {
		if !r.memory[i] {
			continue
		}
		for _, l := range r.lines(i) {
			if l.kind == kindFact {
				facts[l.key] = l.value
			}
		}
	}
	return facts
}
