package sim

import (
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// janus emits exactly the #close and #open lines of the messages it has not reviewed yet, valid
// or not; with none it skips. An answer closes before it opens, so when those messages open an
// intent and then close it (they span steps whose JANUS calls failed), the #open and the
// matching #close cancel out. Those messages are the ones from the review start that the
// instruction quotes (engine.ReviewStartPrefix) through the end of the material, none when the
// instruction says that nothing is new (engine.ReviewNothingNew), and, when it says neither,
// those after the last assistant message (or consolidated memory, which stands for answered
// work). Asked again with the same material (a correction changes only the instruction's
// correction part) it gives the same answer.
func janus(r *request) (answer, error) {
	lo, hi, instruction, err := r.frame(hippocam.CallJanus)
	if err != nil {
		return answer{}, err
	}
	from, said, err := r.reviewStart(lo, hi, instruction)
	if err != nil {
		return answer{}, err
	}
	if !said {
		from = lo
		for i := hi - 1; i >= lo; i-- {
			if r.msgs[i].Role == hippocam.RoleAssistant || r.memory[i] {
				from = i + 1
				break
			}
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
				if n := len(out.Open); n > 0 && out.Open[n-1].Label == l.label {
					// Opened and closed again while unreviewed: the two cancel out, as one
					// answer can only close before it opens.
					out.Open = out.Open[:n-1]
					continue
				}
				out.Close = append(out.Close, engine.JanusClosure{Label: l.label})
			case kindOpen:
				out.Open = append(out.Open, engine.JanusOpening{Label: l.label, Done: l.cond})
			}
		}
	}
	out.Guidance = janusGuidance(&out)
	return contractAnswer(r, engine.JanusTool, out)
}

// reviewStart reads where the instruction says the unreviewed messages of the material [lo, hi)
// begin: the message its review start line quotes (counted back from the end, as span start
// lines are), or hi when it says nothing is new. said is false when the instruction says
// neither. A start line that does not parse, or that no message matches, is EINVALID, so that a
// mistake of the engine surfaces at once.
func (r *request) reviewStart(lo, hi int, instruction string) (from int, said bool, err error) {
	for _, s := range strings.Split(instruction, "\n") {
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, engine.ReviewNothingNew) {
			return hi, true, nil
		}
		rest, found := strings.CutPrefix(s, engine.ReviewStartPrefix)
		if !found {
			continue
		}
		q, ok := readStartQuote(rest)
		if !ok {
			return 0, false, hippocam.Errorf(hippocam.EINVALID, "janus request: cannot read the review start line %q", s)
		}
		seen := 0
		for i := hi - 1; i >= lo; i-- {
			if q.matches(&r.msgs[i]) {
				if seen++; seen == q.nth {
					return i, true, nil
				}
			}
		}
		for i := hi - 1; i >= lo; i-- {
			if q.matchesWithin(&r.msgs[i]) {
				return i, true, nil
			}
		}
		return 0, false, hippocam.Errorf(hippocam.EINVALID, "janus request: no message matches the review start line %q", s)
	}
	return 0, false, nil
}

// readStartQuote reads "latest ROLE above QUOTE" or "Nth latest ROLE above QUOTE", the way a
// review start line (and a span start line) names a message.
func readStartQuote(s string) (spanQuote, bool) {
	q := spanQuote{nth: 1}
	rest, found := strings.CutPrefix(s, engine.SpanLatest)
	if !found {
		var suffix string
		if _, err := fmt.Sscanf(s, "%d%s "+engine.SpanLatest, &q.nth, &suffix); err != nil || q.nth < 1 {
			return q, false
		}
		if _, rest, found = strings.Cut(s, " "+engine.SpanLatest); !found {
			return q, false
		}
	}
	if rest, found = cutRole(rest, &q); !found {
		return q, false
	}
	if rest, found = strings.CutPrefix(rest, engine.SpanAbove); !found || !cutQuote(rest, &q) {
		return q, false
	}
	return q, true
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
