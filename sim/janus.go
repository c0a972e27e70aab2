package sim

import (
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

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
