package sim

import (
	"slices"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/memory/reasoningbank"
)

// The reasoning_bank roles (docs/sim.md, "Reasoning bank"). Both read only the final instruction
// of their request, whose layout is memory/reasoningbank's: the task, the trajectory, the
// feedback, and for rb_extract a line "Outcome: success" or "Outcome: failure".

// rbOutcomeLine starts the line of an rb_extract instruction that gives the verdict.
const rbOutcomeLine = reasoningbank.OutcomeLine

// rbVerdict and rbNotes are the JSON answers of memory/reasoningbank's contracts.
type rbVerdict struct {
	Outcome   string `json:"outcome"`
	Rationale string `json:"rationale"`
}

type rbNote struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Content     string `json:"content"`
}

type rbNotes struct {
	Items []rbNote `json:"items"`
}

// rbMaxItems is the most notes one trajectory gives.
const rbMaxItems = 3

// rbJudge answers success when every feedback line of the instruction says right (a reference
// value does not matter here), and failure otherwise.
func rbJudge(r *request) (answer, error) {
	instruction, err := rbInstruction(r, hippocam.CallRBJudge)
	if err != nil {
		return answer{}, err
	}
	v := rbVerdict{Outcome: "success", Rationale: "I found no feedback line that reports a mistake."}
	for _, s := range strings.Split(instruction, "\n") {
		fb, ok := rbFeedback(Body(s))
		if ok && fb.verdict != "right" {
			v = rbVerdict{Outcome: "failure", Rationale: "I read in the feedback that " + fb.key + " was answered wrong."}
			break
		}
	}
	return contractAnswer(r, string(hippocam.CallRBJudge), v)
}

// rbExtract writes, per decide key of the task in order and at most rbMaxItems in all, one note
// whose content is `use KEY = X when: TAGS` after a success and `avoid KEY = X when: TAGS` after a
// failure, X the value the agent chose and TAGS the task's tags; the title is KEY and the
// description `when: TAGS`. Facts never become notes.
func rbExtract(r *request) (answer, error) {
	instruction, err := rbInstruction(r, hippocam.CallRBExtract)
	if err != nil {
		return answer{}, err
	}
	var tags []string
	var keys []string
	options := map[string][]string{}
	chosen := map[string]string{}   // from the feedback
	answered := map[string]string{} // from answer lines KEY = X, the latest
	outcome, haveTags := "", false
	for _, s := range strings.Split(instruction, "\n") {
		body := Body(s)
		if rest, ok := strings.CutPrefix(body, rbOutcomeLine); ok {
			outcome = strings.TrimSpace(rest)
			continue
		}
		if t, ok := rbTags(body); ok && !haveTags {
			tags, haveTags = t, true
			continue
		}
		if key, opts, ok := rbDecide(body); ok {
			if _, seen := options[key]; !seen {
				keys = append(keys, key)
				options[key] = opts
			}
			continue
		}
		if fb, ok := rbFeedback(body); ok && !fb.fact {
			chosen[fb.key] = fb.value
			continue
		}
		if key, value, ok := strings.Cut(body, " = "); ok && keyLen(key) == len(key) && key != "" && !strings.Contains(value, " ") {
			answered[key] = value
		}
	}
	kind := "use"
	if outcome != "success" {
		kind = "avoid"
	}
	when := strings.Join(tags, " ")
	notes := rbNotes{Items: []rbNote{}}
	for _, key := range keys {
		x, ok := chosen[key]
		if !ok {
			if x, ok = answered[key]; !ok || !slices.Contains(options[key], x) {
				continue
			}
		}
		if len(notes.Items) == rbMaxItems {
			break
		}
		note := rbNote{Title: key, Description: "when: " + when, Content: kind + " " + key + " = " + x}
		if when == "" {
			note.Description = "when: any task"
		} else {
			note.Content += " when: " + when
		}
		notes.Items = append(notes.Items, note)
	}
	return contractAnswer(r, string(hippocam.CallRBExtract), notes)
}

// rbInstruction returns the final instruction of a reasoning_bank request; EINVALID when the
// request does not end with one.
func rbInstruction(r *request, role hippocam.CallRole) (string, error) {
	n := len(r.msgs)
	if n == 0 || r.msgs[n-1].Role != hippocam.RoleUser {
		return "", hippocam.Errorf(hippocam.EINVALID, "a %s request must end with the instruction as a user message", role)
	}
	return r.msgs[n-1].Content, nil
}

// rbFeedbackLine is one feedback line the stream runner writes: `feedback: KEY = X right`,
// `… wrong`, `… right, reference KEY = Y`, or for a question `feedback: KEY := X right` / `wrong`.
type rbFeedbackLine struct {
	key, value, verdict, reference string
	fact                           bool // KEY := X
}

// rbFeedback reads a feedback line (body: a line without its list marker).
func rbFeedback(body string) (rbFeedbackLine, bool) {
	rest, ok := strings.CutPrefix(body, "feedback:")
	if !ok {
		return rbFeedbackLine{}, false
	}
	var fb rbFeedbackLine
	main, ref, hasRef := strings.Cut(strings.TrimSpace(rest), ", reference ")
	if hasRef {
		if _, v, ok := strings.Cut(ref, "="); ok {
			fb.reference = strings.TrimSpace(v)
		}
	}
	i := strings.LastIndexAny(main, " \t")
	if i < 0 {
		return rbFeedbackLine{}, false
	}
	fb.verdict = main[i+1:]
	if fb.verdict != "right" && fb.verdict != "wrong" {
		return rbFeedbackLine{}, false
	}
	stmt := strings.TrimSpace(main[:i])
	n := keyLen(stmt)
	if n == 0 {
		return rbFeedbackLine{}, false
	}
	fb.key = stmt[:n]
	after := strings.TrimLeft(stmt[n:], " \t")
	switch {
	case strings.HasPrefix(after, ":="):
		fb.fact, fb.value = true, strings.TrimSpace(after[2:])
	case strings.HasPrefix(after, "="):
		fb.value = strings.TrimSpace(after[1:])
	default:
		return rbFeedbackLine{}, false
	}
	return fb, true
}

// rbTags reads a `tags: T1 T2 …` line.
func rbTags(body string) ([]string, bool) {
	rest, ok := strings.CutPrefix(body, "tags:")
	if !ok {
		return nil, false
	}
	return strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' }), true
}

// rbDecide reads a `decide KEY: A | B | C` line.
func rbDecide(body string) (string, []string, bool) {
	rest, ok := cutWord(body, "decide")
	if !ok {
		return "", nil, false
	}
	n := keyLen(rest)
	if n == 0 || !strings.HasPrefix(rest[n:], ":") {
		return "", nil, false
	}
	var opts []string
	for _, o := range strings.Split(rest[n+1:], "|") {
		if o = strings.TrimSpace(o); o != "" {
			opts = append(opts, o)
		}
	}
	return rest[:n], opts, len(opts) > 0
}
