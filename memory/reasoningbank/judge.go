package reasoningbank

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
)

//go:embed prompts/judge.txt
var judgePrompt string

// The judge's outcomes.
const (
	Success = "success"
	Failure = "failure"
)

// Verdict is the judge's answer (role rb_judge): whether the attempt succeeded, and why.
type Verdict struct {
	Outcome   string `json:"outcome"`
	Rationale string `json:"rationale"`
}

// judgeSchema is the JSON schema of a Verdict.
var judgeSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"outcome":{"type":"string","enum":["success","failure"]},` +
	`"rationale":{"type":"string","description":"one or two sentences pointing at the evidence"}},` +
	`"required":["outcome","rationale"],"additionalProperties":false}`)

// maxRationale bounds the judge's reason, in bytes.
const maxRationale = 2000

// Validate checks a verdict: a known outcome and a reason that is there and short.
func (v *Verdict) Validate() error {
	if v.Outcome != Success && v.Outcome != Failure {
		return fmt.Errorf("outcome must be %q or %q, not %q", Success, Failure, v.Outcome)
	}
	r := strings.TrimSpace(v.Rationale)
	switch {
	case r == "":
		return fmt.Errorf("rationale is empty: say what the verdict rests on")
	case len(r) > maxRationale:
		return fmt.Errorf("rationale is %d bytes long; keep it under %d", len(r), maxRationale)
	}
	return nil
}

// judge asks whether the attempt succeeded, from what is visible only.
func (s *System) judge(ctx context.Context, req, shown, feedback string) (*Verdict, error) {
	var v Verdict
	instruction := material(req, shown, feedback) + "\nDid the agent accomplish what the task asked for?"
	err := learn.Call(ctx, s.env, hippocam.CallRBJudge, judgePrompt, instruction, judgeSchema, func(args string) error {
		v = Verdict{}
		if err := learn.Decode(args, &v); err != nil {
			return err
		}
		return v.Validate()
	})
	if err != nil {
		return nil, err
	}
	v.Rationale = strings.TrimSpace(v.Rationale)
	return &v, nil
}

// material is what both calls are shown: the request, the trajectory and the feedback, under
// headings of their own.
func material(req, shown, feedback string) string {
	var b strings.Builder
	b.WriteString("The task:\n")
	b.WriteString(strings.TrimSpace(req))
	b.WriteString("\n\nWhat the agent did, in order:\n")
	b.WriteString(shown)
	b.WriteString("\n\nThe feedback at the end:\n")
	if f := strings.TrimSpace(feedback); f != "" {
		b.WriteString(f)
	} else {
		b.WriteString("(none)")
	}
	b.WriteString("\n")
	return b.String()
}
