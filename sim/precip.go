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
