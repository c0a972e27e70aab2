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

//go:embed prompts/judge.md
var judgePrompt string

var judgeSchema = json.RawMessage(`{"type":"object","additionalProperties":false,` +
	`"required":["verdict","diagnosis","reflection"],"properties":{` +
	`"verdict":{"enum":["ok","surprise"]},"diagnosis":{"type":"string"},"reflection":{"type":"string"}}}`)

// Verdict is the judge's answer on one attempt: ok (correct, for sound reasons) or surprise
// (wrong, or right by luck), with a diagnosis and, for a surprise, a reflection naming the
// choices that mattered.
type Verdict struct {
	Verdict    string `json:"verdict"`
	Diagnosis  string `json:"diagnosis"`
	Reflection string `json:"reflection"`
}

// OK reports whether the attempt was judged ok.
func (v *Verdict) OK() bool { return v.Verdict == VerdictOK }

// validate checks the judge's answer.
func (v *Verdict) validate() error {
	v.Verdict = strings.ToLower(strings.TrimSpace(v.Verdict))
	v.Diagnosis, v.Reflection = oneLine(v.Diagnosis), strings.TrimSpace(v.Reflection)
	switch {
	case v.Verdict != VerdictOK && v.Verdict != VerdictSurprise:
		return fmt.Errorf("verdict must be \"ok\" or \"surprise\", not %q", v.Verdict)
	case v.Verdict == VerdictSurprise && v.Reflection == "":
		return fmt.Errorf("a surprise needs a reflection naming the choices that mattered")
	case len(v.Reflection) > 2000:
		return fmt.Errorf("the reflection must stay under 2000 characters (it has %d)", len(v.Reflection))
	}
	return nil
}

// judgeAttempt asks the judge about one attempt. An answer that keeps breaking the contract is an
// error wrapping learn.ErrGaveUp.
func judgeAttempt(ctx context.Context, env *learn.Env, t *hippocam.Trajectory) (Verdict, error) {
	var b strings.Builder
	b.WriteString("Judge the attempt below: was its outcome correct, and for sound reasons?\n\n")
	writeSection(&b, HeadingTask, quote(t.Task.Text()))
	writeSection(&b, HeadingAttempt, quote(transcript(t)))
	writeSection(&b, HeadingFeedback, quote(orNone(t.Feedback)))
	var v Verdict
	err := learn.Call(ctx, env, hippocam.CallJudge, judgePrompt, strings.TrimSpace(b.String()), judgeSchema, func(args string) error {
		v = Verdict{}
		if err := learn.Decode(args, &v); err != nil {
			return err
		}
		return v.validate()
	})
	if err != nil {
		return Verdict{}, fmt.Errorf("judge attempt %s: %w", t.ID, err)
	}
	return v, nil
}

// The material of an instruction is quoted ("> " before every line), so that nothing in a task
// or a transcript can pass for one of the instruction's own headings.

func writeSection(b *strings.Builder, title, body string) {
	b.WriteString(SectionMark + title + "\n" + body + "\n\n")
}

func writeSubsection(b *strings.Builder, title, body string) {
	b.WriteString(SubsectionMark + title + "\n" + body + "\n")
}

func quote(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if l = strings.TrimRight(l, " \t"); l == "" {
			lines[i] = ">"
		} else {
			lines[i] = "> " + l
		}
	}
	return strings.Join(lines, "\n")
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return s
}

// Bounds on what an instruction quotes of one attempt.
const (
	messageChars    = 2000
	transcriptChars = 8000
)

// transcript renders what the agent did in an attempt: its messages after the task's own, without
// system messages, advisories, Hippocam's bookkeeping and the feedback (shown on its own). Long
// messages and long transcripts are shortened in the middle.
func transcript(t *hippocam.Trajectory) string {
	spec := map[string]int{}
	for _, m := range t.Task.Messages {
		spec[string(m.Role)+"\x00"+m.Content]++
	}
	feedback := strings.TrimSpace(t.Feedback)
	var parts []string
	for _, m := range t.Messages {
		if k := string(m.Role) + "\x00" + m.Content; spec[k] > 0 {
			spec[k]--
			continue
		}
		switch {
		case m.Role == hippocam.RoleSystem, m.Kind == hippocam.KindAdvisory, m.Kind == hippocam.KindRecall, m.Kind.Hidden():
			continue
		case m.Role == hippocam.RoleUser && feedback != "" && strings.TrimSpace(m.Content) == feedback:
			continue
		}
		text := shorten(m.Content, messageChars)
		for _, c := range m.ToolCalls {
			text += "\n(calls " + c.Name + " " + shorten(c.Arguments, 300) + ")"
		}
		parts = append(parts, "["+string(m.Role)+"] "+strings.TrimSpace(text))
	}
	if len(parts) == 0 {
		return "(nothing after the task)"
	}
	return shorten(strings.Join(parts, "\n"), transcriptChars)
}

// shorten keeps the first third and the last two thirds of n characters of s, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := cut(s, n/3), s[len(s)-(n-n/3):]
	for len(tail) > 0 && tail[0]&0xC0 == 0x80 { // not inside a character
		tail = tail[1:]
	}
	return fmt.Sprintf("%s\n(… %d characters left out …)\n%s", head, len(s)-len(head)-len(tail), tail)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
