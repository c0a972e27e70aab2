package eval

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
)

// The prompts every condition shares: one framing, one message per conversation session, one
// message per question (or per batch of questions). Only what comes before the question differs
// between conditions.

// agentSystem frames the conversation for the model under test.
const agentSystem = `You are an assistant with a long memory. The user passes you, one at a time, dated sessions of a conversation as they happen. When a session arrives, acknowledge it in one short sentence; do not summarise it. Later the user asks questions about those sessions. Answer each from what the sessions say, briefly (a few words or one sentence), giving the specific names, dates, numbers and details asked for. Work out relative dates ("last Tuesday") against the date of the session they were said in. If the sessions do not say, answer that you do not know.`

// sessionMessage is session i (from 0) of n as one user message: a header with its date, then
// one "Speaker: text" paragraph per turn.
func sessionMessage(s Session, i, n int) hippocam.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Conversation session %d of %d", i+1, n)
	if s.Date != "" {
		fmt.Fprintf(&b, ", %s", s.Date)
	}
	b.WriteString(":\n")
	for _, t := range s.Turns {
		fmt.Fprintf(&b, "\n%s: %s", t.Speaker, t.Text)
	}
	return hippocam.Message{Role: hippocam.RoleUser, Content: b.String()}
}

// questionMessage asks one question.
func questionMessage(q Question) hippocam.Message {
	var b strings.Builder
	b.WriteString("Question")
	if q.Date != "" {
		fmt.Fprintf(&b, " (asked on %s)", q.Date)
	}
	fmt.Fprintf(&b, ": %s\n\nAnswer from the conversation sessions above, briefly.", q.Text)
	return hippocam.Message{Role: hippocam.RoleUser, Content: b.String()}
}

// batchMessage asks several questions in one message, numbered from 1.
func batchMessage(qs []Question) hippocam.Message {
	if len(qs) == 1 {
		return questionMessage(qs[0])
	}
	var b strings.Builder
	b.WriteString("Answer each question below from the conversation sessions above, briefly. Reply with one line per question, in order: its number, a period, then the answer.\n")
	for i, q := range qs {
		fmt.Fprintf(&b, "\n%d. ", i+1)
		if q.Date != "" {
			fmt.Fprintf(&b, "(asked on %s) ", q.Date)
		}
		b.WriteString(q.Text)
	}
	return hippocam.Message{Role: hippocam.RoleUser, Content: b.String()}
}

var numbered = regexp.MustCompile(`^\s*(?:\*\*)?(\d+)\s*[.):](?:\*\*)?\s*(.*)$`)

// splitAnswers reads the answers to n numbered questions out of one reply. Lines that start with
// a number belong to that question, and the lines after one, up to the next number, continue
// it. A reply with no numbered line but exactly n non-blank lines is read in order. A question
// with no answer gets "".
func splitAnswers(reply string, n int) []string {
	out := make([]string, n)
	if n == 1 {
		out[0] = strings.TrimSpace(reply)
		return out
	}
	lines := strings.Split(reply, "\n")
	cur, any := -1, false
	for _, l := range lines {
		if m := numbered.FindStringSubmatch(l); m != nil {
			if k, err := strconv.Atoi(m[1]); err == nil && k >= 1 && k <= n {
				cur, any = k-1, true
				out[cur] = strings.TrimSpace(m[2])
				continue
			}
		}
		if cur >= 0 && strings.TrimSpace(l) != "" {
			out[cur] = strings.TrimSpace(out[cur] + "\n" + strings.TrimSpace(l))
		}
	}
	if any {
		return out
	}
	var nonBlank []string
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			nonBlank = append(nonBlank, strings.TrimSpace(l))
		}
	}
	if len(nonBlank) == n {
		copy(out, nonBlank)
	}
	return out
}

// The verdicts of the judge.
const (
	Correct  = "correct"
	Partial  = "partially_correct"
	Wrong    = "wrong"
	Unjudged = "unjudged" // no verdict: the answer or the judge's call failed, or its reply was unreadable
)

const judgeSystem = `You grade answers about long conversations. You compare the answer given with a reference answer that is known to be right, and reply only with a JSON object.`

// The headings of the judge's instruction under which the reference and the graded answer
// stand (the simulated judge finds them by these).
const (
	JudgeReferenceHeading = "Reference answer"
	JudgeAnswerHeading    = "Answer to grade"
)

// judgeMessage is the judge's instruction for one answer.
func judgeMessage(q Question, answer string) hippocam.Message {
	var b strings.Builder
	b.WriteString(`Grade whether the answer below gives the information of the reference answer.

- correct: it states what the reference states. Other wording, extra details that do not contradict the reference, and dates or numbers written another way are fine.
- partially_correct: it gets part of the reference right (some of the items of a list, the right month but not the day) and contradicts none of it.
- wrong: it misses or contradicts the reference, or says it does not know when the reference gives an answer. When the reference says the question cannot be answered from the conversation, an answer that says so is correct and one that makes something up is wrong.
`)
	fmt.Fprintf(&b, "\n## Question\n\n%s\n", q.Text)
	fmt.Fprintf(&b, "\n## %s\n\n%s\n", JudgeReferenceHeading, q.Gold)
	a := strings.TrimSpace(answer)
	if a == "" {
		a = "(no answer)"
	}
	fmt.Fprintf(&b, "\n## %s\n\n%s\n", JudgeAnswerHeading, a)
	b.WriteString("\nReply with only this JSON object: {\"verdict\": \"correct\" | \"partially_correct\" | \"wrong\", \"reason\": \"one sentence\"}")
	return hippocam.Message{Role: hippocam.RoleUser, Content: b.String()}
}

// readVerdict reads the judge's reply: the verdict (normalised) and its reason.
func readVerdict(reply string) (verdict, reason string, err error) {
	obj, ok := hippocam.JSONObject(reply)
	if !ok {
		return "", "", fmt.Errorf("the judge's reply holds no JSON object: %q", clip(reply, 200))
	}
	var v struct {
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(obj), &v); err != nil {
		return "", "", fmt.Errorf("the judge's reply: %v", err)
	}
	switch strings.NewReplacer(" ", "_", "-", "_").Replace(strings.ToLower(strings.TrimSpace(v.Verdict))) {
	case "correct":
		return Correct, v.Reason, nil
	case "partially_correct", "partial", "partly_correct":
		return Partial, v.Reason, nil
	case "wrong", "incorrect":
		return Wrong, v.Reason, nil
	}
	return "", "", fmt.Errorf("the judge's verdict %q is none of correct, partially_correct, wrong", v.Verdict)
}

// clip shortens s to at most n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
