package lessons

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
)

//go:embed prompts/inductor.md
var inductorPrompt string

// draftSchema is the JSON schema of a Draft, shared by the inductor's and the consolidator's.
const draftSchema = `{"type":"object","additionalProperties":false,` +
	`"required":["kind","key","value","decision","when","not_when","evidence"],"properties":{` +
	`"kind":{"enum":["use","avoid"]},"key":{"type":"string"},"value":{"type":"string"},` +
	`"decision":{"type":"string"},"when":{"type":"array","items":{"type":"string"}},` +
	`"not_when":{"type":"array","items":{"type":"string"}},"evidence":{"type":"string"}}}`

var inductorSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["candidates"],` +
	`"properties":{"candidates":{"type":"array","items":` + draftSchema + `}}}`)

// maxCandidates bounds what one comparison of attempts may propose.
const maxCandidates = 12

// Induction is the inductor's answer: the candidate lessons of one task key.
type Induction struct {
	Candidates []Draft `json:"candidates"`
}

// judged is one attempt with the judge's verdict on it.
type judged struct {
	traj    *hippocam.Trajectory
	verdict Verdict
}

// induce asks the inductor for the candidates of one task key's attempts (at least one of which
// was not ok). Candidates must be grounded: their key and option appear in what the attempts
// show, and when no attempt was ok, a recommended option appears in the feedback or the
// reflections.
func induce(ctx context.Context, env *learn.Env, attempts []judged) ([]Draft, error) {
	ok := 0
	for _, a := range attempts {
		if a.verdict.OK() {
			ok++
		}
	}
	instruction, seen, told := inductorInstruction(attempts, ok)
	var out Induction
	err := learn.Call(ctx, env, hippocam.CallInductor, inductorPrompt, instruction, inductorSchema, func(args string) error {
		out = Induction{}
		if err := learn.Decode(args, &out); err != nil {
			return err
		}
		return out.validate(seen, told, ok)
	})
	if err != nil {
		return nil, fmt.Errorf("induce lessons of %s: %w", taskKey(attempts[0].traj), err)
	}
	return out.Candidates, nil
}

// inductorInstruction renders the attempts for the inductor; seen is every text the attempts
// show, told the feedback and reflections alone (lowercased, for the grounding checks).
func inductorInstruction(attempts []judged, ok int) (instruction, seen, told string) {
	var b, fb strings.Builder
	b.WriteString("Compare these attempts at one task and write the candidate lessons they support.\n\n")
	writeSection(&b, HeadingTask, quote(attempts[0].traj.Task.Text()))
	writeSection(&b, HeadingOutcome, fmt.Sprintf("%d of %d attempts were judged ok.", ok, len(attempts)))
	for i, a := range attempts {
		verdict := VerdictOK
		if !a.verdict.OK() {
			verdict = VerdictSurprise
		}
		b.WriteString(SectionMark + AttemptHeading(i+1, verdict) + "\n")
		writeSubsection(&b, HeadingTranscript, quote(transcript(a.traj)))
		writeSubsection(&b, HeadingFeedback, quote(orNone(a.traj.Feedback)))
		fb.WriteString(a.traj.Feedback + "\n")
		if !a.verdict.OK() {
			writeSubsection(&b, HeadingDiagnosis, quote(orNone(a.verdict.Diagnosis)))
			writeSubsection(&b, HeadingReflection, quote(orNone(a.verdict.Reflection)))
			fb.WriteString(a.verdict.Reflection + "\n")
		}
		b.WriteString("\n")
	}
	instruction = strings.TrimSpace(b.String())
	return instruction, strings.ToLower(instruction), strings.ToLower(fb.String())
}

// validate checks the inductor's answer against the attempts it was shown.
func (in *Induction) validate(seen, told string, ok int) error {
	if len(in.Candidates) > maxCandidates {
		return fmt.Errorf("at most %d candidates, not %d", maxCandidates, len(in.Candidates))
	}
	var problems []string
	for i := range in.Candidates {
		c := &in.Candidates[i]
		c.normalize()
		if err := c.validate(); err != nil {
			problems = append(problems, fmt.Sprintf("candidate %d: %v", i+1, err))
			continue
		}
		switch {
		case c.Evidence == "":
			problems = append(problems, fmt.Sprintf("candidate %d: evidence must say what the comparison showed", i+1))
		case !strings.Contains(seen, strings.ToLower(c.Key)) || !strings.Contains(seen, strings.ToLower(c.Value)):
			problems = append(problems, fmt.Sprintf("candidate %d: %s and %s must be a decision point and an option the attempts show", i+1, c.Key, c.Value))
		case ok == 0 && c.Kind == Use && !strings.Contains(told, strings.ToLower(c.Value)):
			problems = append(problems, fmt.Sprintf("candidate %d: no attempt was ok, so %q may be recommended only if the feedback names it", i+1, c.Value))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}
