package lessons

import "fmt"

// The headings of the instructions the lessons system writes for its judge, inductor and
// consolidator: "## " sections, and "### " subsections inside an inductor's attempt. Whatever
// reads those instructions (the simulated model, docs/sim.md) reads them by these names.
const (
	SectionMark    = "## "
	SubsectionMark = "### "

	HeadingTask           = "Task"
	HeadingAttempt        = "Attempt" // the judge's one attempt; the inductor's are AttemptHeading
	HeadingFeedback       = "Feedback"
	HeadingOutcome        = "Outcome"
	HeadingTranscript     = "Transcript"
	HeadingDiagnosis      = "Diagnosis"
	HeadingReflection     = "Reflection"
	HeadingCandidate      = "Candidate"
	HeadingSimilarLessons = "Similar lessons"
)

// EvidenceLabel begins the line of a lesson shown to the consolidator that gives its evidence,
// and LessonNumberMark numbers each similar lesson ("#2 use …").
const (
	EvidenceLabel    = "evidence:"
	LessonNumberMark = "#"
)

// VerdictOK and VerdictSurprise are the judge's verdicts, as an inductor's attempt heading
// gives them.
const (
	VerdictOK       = "ok"
	VerdictSurprise = "surprise"
)

// AttemptHeading is the heading of the inductor's attempt i (from 1) with its verdict:
// "Attempt 2: surprise".
func AttemptHeading(i int, verdict string) string {
	return fmt.Sprintf("%s %d: %s", HeadingAttempt, i, verdict)
}
