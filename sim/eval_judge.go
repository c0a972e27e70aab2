package sim

import (
	"strings"
	"unicode"

	"github.com/hippocam/hippocam/eval"
)

// How the simulated judge grades an answer against a reference (docs/sim.md, "Judge of answers").
// The judge role serves two callers: the lessons system, whose instruction holds a "## Feedback"
// section, and `hippocam eval`, whose instruction holds the sections eval.JudgeReferenceHeading and
// eval.JudgeAnswerHeading. The latter is graded by words: correct when every word of the reference
// appears in the answer, partially correct when some do, wrong when none does.

// gradedAnswer is the eval judge's verdict.
type gradedAnswer struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
}

// gradingSections returns the reference and the answer of an eval judge's instruction, and
// whether it is one.
func gradingSections(text string) (reference, answer string, ok bool) {
	var ref, ans []string
	var haveRef, haveAns bool
	for _, sec := range mdSections(text) {
		switch {
		case strings.EqualFold(sec.title, eval.JudgeReferenceHeading):
			ref, haveRef = sec.lines, true
		case strings.EqualFold(sec.title, eval.JudgeAnswerHeading):
			ans, haveAns = sec.lines, true
		}
	}
	return strings.Join(ref, "\n"), strings.Join(ans, "\n"), haveRef && haveAns
}

// words are the lower-cased runs of letters and digits of s.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// gradeAnswer compares the words of an answer with those of its reference.
func gradeAnswer(r *request, reference, given string) (answer, error) {
	have := map[string]bool{}
	for _, w := range words(given) {
		have[w] = true
	}
	want := words(reference)
	found := 0
	for _, w := range want {
		if have[w] {
			found++
		}
	}
	v := gradedAnswer{Verdict: "wrong", Reason: "the answer has none of the reference's words"}
	switch {
	case len(want) > 0 && found == len(want):
		v = gradedAnswer{Verdict: "correct", Reason: "the answer has every word of the reference"}
	case found > 0:
		v = gradedAnswer{Verdict: "partially_correct", Reason: "the answer has some of the reference's words"}
	}
	return contractAnswer(r, "judge", v)
}
