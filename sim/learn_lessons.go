package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/memory/lessons"
)

// How the simulated judge, inductor and lesson consolidator answer (docs/sim.md, "Lessons"). Each
// reads the instruction the lessons system writes (memory/lessons), by the headings and marks
// that package exports: Markdown sections headed "## …" (and "### …" inside an attempt), of which only a few lines count: the task's tags and
// decide lines, feedback lines, the judge's reflections, and lessons written in the advice form
// "use KEY = VALUE when: TAGS; not when: TAGS". Each answers with its contract's JSON object.

// mdSection is one "## " part of an instruction: its heading and its lines (sub-headings included).
type mdSection struct {
	title string
	lines []string
}

// mdSections splits text at its "## " headings; lines before the first heading are dropped.
func mdSections(text string) []mdSection {
	var out []mdSection
	for _, s := range strings.Split(text, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(s), lessons.SectionMark); ok {
			out = append(out, mdSection{title: strings.TrimSpace(t)})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].lines = append(out[len(out)-1].lines, s)
		}
	}
	return out
}

// mdSubsection returns the lines of the "### title" part of lines (up to the next "### "),
// unquoted.
func mdSubsection(lines []string, title string) []string {
	var out []string
	in := false
	for _, s := range lines {
		if t, ok := strings.CutPrefix(strings.TrimSpace(s), lessons.SubsectionMark); ok {
			in = strings.EqualFold(strings.TrimSpace(t), title)
			continue
		}
		if in {
			out = append(out, unquote(s))
		}
	}
	return out
}

// unquote drops the "> " with which an instruction quotes its material.
func unquote(s string) string {
	if rest, ok := strings.CutPrefix(strings.TrimLeft(s, " \t"), ">"); ok {
		return strings.TrimPrefix(rest, " ")
	}
	return s
}

// feedbackOf reads a quoted line as a feedback line of the stream runner.
func feedbackOf(s string) (*feedbackLine, bool) {
	l := readLine(unquote(s))
	return l.fb, l.kind == kindFeedback
}

// surprising reports whether a feedback line makes its attempt a surprise: the choice was wrong,
// or right while the reference differs from it (right by luck).
func surprising(f *feedbackLine) bool { return !f.right || f.reference != "" }

// ruleLine is a lesson in the advice form (`use KEY = VALUE when: …; not when: …`), optionally
// numbered `#N `, with the evidence the instruction gives for it.
type ruleLine struct {
	number           int
	kind, key, value string
	when, notWhen    []string
	evidence         string
}

// readRuleLine reads one lesson line.
func readRuleLine(s string) (ruleLine, bool) {
	t := strings.TrimSpace(s)
	var r ruleLine
	if rest, ok := strings.CutPrefix(t, lessons.LessonNumberMark); ok {
		num, tail, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(num)
		if err != nil || n <= 0 {
			return ruleLine{}, false
		}
		r.number, t = n, tail
	}
	l := readLine(t)
	if l.kind != kindAdvice {
		return ruleLine{}, false
	}
	r.kind, r.key, r.value = "use", l.adv.key, l.adv.value
	if l.adv.avoid {
		r.kind = "avoid"
	}
	r.when, r.notWhen = slices.Clone(l.adv.when), slices.Clone(l.adv.notWhen)
	return r, true
}

// The contracts' JSON, as memory/lessons reads it.
type (
	judgeVerdict struct {
		Verdict    string `json:"verdict"`
		Diagnosis  string `json:"diagnosis"`
		Reflection string `json:"reflection"`
	}
	lessonJSON struct {
		Kind     string   `json:"kind"`
		Key      string   `json:"key"`
		Value    string   `json:"value"`
		Decision string   `json:"decision"`
		When     []string `json:"when"`
		NotWhen  []string `json:"not_when"`
		Evidence string   `json:"evidence"`
	}
	inductorCandidates struct {
		Candidates []lessonJSON `json:"candidates"`
	}
	lessonDeletion struct {
		Number int    `json:"number"`
		Reason string `json:"reason"`
	}
	lessonDecision struct {
		Action      string           `json:"action"`
		DuplicateOf int              `json:"duplicate_of"`
		Add         []lessonJSON     `json:"add"`
		Delete      []lessonDeletion `json:"delete"`
		Reason      string           `json:"reason"`
	}
)

func (r ruleLine) json() lessonJSON {
	verb := "choose"
	if r.kind == "avoid" {
		verb = "do not choose"
	}
	return lessonJSON{Kind: r.kind, Key: r.key, Value: r.value, Decision: verb + " " + r.value + " for " + r.key,
		When: tagsOrEmpty(r.when), NotWhen: tagsOrEmpty(r.notWhen), Evidence: r.evidence}
}

func tagsOrEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// lastInstruction is the text of the request's last message, which must be a user message.
func lastInstruction(r *request, role hippocam.CallRole) (string, error) {
	last := r.msgs[len(r.msgs)-1]
	if last.Role != hippocam.RoleUser {
		return "", hippocam.Errorf(hippocam.EINVALID, "%s: the request must end with its instruction as a user message", role)
	}
	return last.Content, nil
}

// judge answers the judge role. An eval judge's instruction is graded by gradeAnswer; otherwise,
// for the lessons system: surprise when a feedback line of the attempt says wrong, or right
// with another reference; the reflection names each such choice and its reference.
func judge(r *request) (answer, error) {
	text, err := lastInstruction(r, hippocam.CallJudge)
	if err != nil {
		return answer{}, err
	}
	if reference, given, ok := gradingSections(text); ok {
		return gradeAnswer(r, reference, given)
	}
	v := judgeVerdict{Verdict: lessons.VerdictOK}
	var notes []string
	for _, sec := range mdSections(text) {
		if !strings.EqualFold(sec.title, lessons.HeadingFeedback) {
			continue
		}
		for _, s := range sec.lines {
			f, ok := feedbackOf(s)
			if !ok || !surprising(f) {
				continue
			}
			op := " = "
			if f.question {
				op = " := "
			}
			note := "chose " + f.key + op + f.value
			if f.reference != "" {
				note += "; reference " + f.key + " = " + f.reference
			} else {
				note += "; marked wrong"
			}
			notes = append(notes, note)
		}
	}
	if len(notes) > 0 {
		v.Verdict = lessons.VerdictSurprise
		v.Diagnosis = fmt.Sprintf("the feedback faults %d of the choices made", len(notes))
		v.Reflection = strings.Join(notes, "\n")
	}
	return contractAnswer(r, string(hippocam.CallJudge), v)
}

// inducedAttempt is what the inductor reads of one attempt.
type inducedAttempt struct {
	ok         bool
	chosen     map[string]string
	references map[string][]string
}

// inductor answers the inductor role by the four success-ratio cases (docs/sim.md, "Lessons").
func inductor(r *request) (answer, error) {
	text, err := lastInstruction(r, hippocam.CallInductor)
	if err != nil {
		return answer{}, err
	}
	var tags, keys []string
	var attempts []inducedAttempt
	for _, sec := range mdSections(text) {
		switch {
		case strings.EqualFold(sec.title, lessons.HeadingTask):
			tags, keys = taskConditions(sec.lines)
		case strings.HasPrefix(sec.title, lessons.HeadingAttempt+" "):
			attempts = append(attempts, readAttempt(sec))
		}
	}
	out := inductorCandidates{Candidates: []lessonJSON{}}
	s, n := 0, len(attempts)
	for _, a := range attempts {
		if a.ok {
			s++
		}
	}
	if n == 0 || s == n {
		return contractAnswer(r, string(hippocam.CallInductor), out)
	}
	for _, key := range keys {
		var won, lost, chosen, refs []string
		for _, a := range attempts {
			if v, ok := a.chosen[key]; ok {
				chosen = append(chosen, v)
				if a.ok {
					won = appendOnce(won, v)
				}
			}
			for _, ref := range a.references[key] {
				refs = appendOnce(refs, ref)
				won = appendOnce(won, ref)
			}
		}
		for _, a := range attempts {
			if v, ok := a.chosen[key]; ok && !a.ok && !slices.Contains(won, v) {
				lost = appendOnce(lost, v)
			}
		}
		evidence := fmt.Sprintf("%d of %d ok; chosen %s: %s", s, n, key, strings.Join(chosen, ", "))
		add := func(kind string, values []string) {
			for _, v := range values {
				c := ruleLine{kind: kind, key: key, value: v, when: tags, evidence: evidence}
				out.Candidates = append(out.Candidates, c.json())
			}
		}
		switch {
		case 2*s > n:
			add("avoid", lost)
		case 2*s == n:
			add("use", won)
			add("avoid", lost)
		case s > 0:
			add("use", won)
		default:
			add("avoid", lost)
			add("use", refs)
		}
	}
	return contractAnswer(r, string(hippocam.CallInductor), out)
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// taskConditions reads a task's tags (its first tags line) and decide keys, in order.
func taskConditions(lines []string) (tags, keys []string) {
	seenTags := false
	for _, s := range lines {
		switch l := readLine(unquote(s)); l.kind {
		case kindTags:
			if !seenTags {
				tags, seenTags = l.tags, true
			}
		case kindDecide:
			keys = appendOnce(keys, l.key)
		}
	}
	return tags, keys
}

// readAttempt reads an "Attempt K: ok|surprise" section: the verdict from its heading, the choices
// from its feedback lines, the references from its reflection.
func readAttempt(sec mdSection) inducedAttempt {
	a := inducedAttempt{chosen: map[string]string{}, references: map[string][]string{}}
	_, verdict, _ := strings.Cut(sec.title, ":")
	a.ok = strings.EqualFold(strings.TrimSpace(verdict), lessons.VerdictOK)
	for _, s := range mdSubsection(sec.lines, lessons.HeadingFeedback) {
		if f, ok := feedbackOf(s); ok && !f.question {
			if _, seen := a.chosen[f.key]; !seen {
				a.chosen[f.key] = f.value
			}
		}
	}
	for _, s := range mdSubsection(sec.lines, lessons.HeadingReflection) {
		for _, part := range strings.Split(s, ";") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(part), "reference ")
			if !ok {
				continue
			}
			k, v, ok := strings.Cut(rest, "=")
			if k, v = strings.TrimSpace(k), strings.TrimSpace(v); ok && k != "" && v != "" {
				a.references[k] = appendOnce(a.references[k], strings.Fields(v)[0])
			}
		}
	}
	return a
}

// lessonsConsolidator answers the lessons role: one candidate against the numbered similar lessons, by
// the rules duplicate, conflict, merge, add, in that order.
func lessonsConsolidator(r *request) (answer, error) {
	text, err := lastInstruction(r, hippocam.CallLessons)
	if err != nil {
		return answer{}, err
	}
	var c ruleLine
	var found bool
	var shown []ruleLine
	for _, sec := range mdSections(text) {
		switch {
		case strings.EqualFold(sec.title, lessons.HeadingCandidate):
			for _, s := range sec.lines {
				if !found {
					c, found = readRuleLine(s)
				}
			}
		case strings.EqualFold(sec.title, lessons.HeadingSimilarLessons):
			for _, s := range sec.lines {
				if l, ok := readRuleLine(s); ok && l.number > 0 {
					shown = append(shown, l)
				}
			}
		}
	}
	if !found {
		return answer{}, hippocam.Errorf(hippocam.EINVALID, "lessons: the instruction holds no candidate lesson")
	}
	c.evidence = candidateEvidence(text)
	return contractAnswer(r, string(hippocam.CallLessons), decideLesson(c, shown))
}

// candidateEvidence is the evidence line of the candidate section, carried into what is added.
func candidateEvidence(text string) string {
	for _, sec := range mdSections(text) {
		if strings.EqualFold(sec.title, lessons.HeadingCandidate) {
			for _, s := range sec.lines {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(s), lessons.EvidenceLabel); ok {
					return strings.TrimSpace(rest)
				}
			}
		}
	}
	return ""
}

// decideLesson applies the consolidator's rules to candidate c and the shown lessons.
func decideLesson(c ruleLine, shown []ruleLine) lessonDecision {
	out := lessonDecision{Add: []lessonJSON{}, Delete: []lessonDeletion{}}
	for _, e := range shown {
		if e.kind == c.kind && e.key == c.key && e.value == c.value && tagsEqual(e.when, c.when) && tagsEqual(e.notWhen, c.notWhen) {
			out.Action, out.DuplicateOf = "duplicate", e.number
			out.Reason = fmt.Sprintf("duplicate #%d", e.number)
			return out
		}
	}
	var reasons []string
	for _, e := range shown {
		opposed := e.key == c.key && ((e.kind == c.kind && e.value != c.value) || (e.kind != c.kind && e.value == c.value))
		if !opposed {
			continue
		}
		switch {
		case tagsEqual(e.when, c.when):
			out.Delete = append(out.Delete, lessonDeletion{Number: e.number, Reason: "newer evidence under the same conditions"})
			reasons = append(reasons, fmt.Sprintf("conflict with #%d under the same conditions: the candidate replaces it", e.number))
		case tagsWithin(e.when, c.when):
			out.Delete = append(out.Delete, lessonDeletion{Number: e.number, Reason: "narrowed: it no longer holds where the candidate applies"})
			e.notWhen = tagsUnion(e.notWhen, tagsLess(c.when, e.when))
			e.evidence = ""
			out.Add = append(out.Add, e.json())
			reasons = append(reasons, fmt.Sprintf("conflict with the more general #%d: it is restated to exclude the candidate's conditions", e.number))
		case tagsWithin(c.when, e.when):
			c.notWhen = tagsUnion(c.notWhen, tagsLess(e.when, c.when))
			reasons = append(reasons, fmt.Sprintf("conflict with the more specific #%d: the candidate excludes its conditions, #%d stays", e.number, e.number))
		}
	}
	if len(reasons) > 0 {
		out.Action, out.Reason = "conflict", strings.Join(reasons, "; ")
		out.Add = append(out.Add, c.json())
		return out
	}
	merged := c
	for _, e := range shown {
		if e.kind == c.kind && e.key == c.key && e.value == c.value && len(tagsCommon(e.when, c.when)) > 0 {
			merged.when = tagsCommon(merged.when, e.when)
			merged.notWhen = tagsUnion(merged.notWhen, e.notWhen)
			out.Delete = append(out.Delete, lessonDeletion{Number: e.number, Reason: "merged with the candidate"})
		}
	}
	if len(out.Delete) > 0 {
		var nums []string
		for _, d := range out.Delete {
			nums = append(nums, fmt.Sprintf("#%d", d.Number))
		}
		out.Action, out.Reason = "merge", "merged with "+strings.Join(nums, ", ")+": the same decision under overlapping conditions"
		out.Add = append(out.Add, merged.json())
		return out
	}
	out.Action, out.Reason = "add", "no similar lesson covers it"
	out.Add = append(out.Add, c.json())
	return out
}

func tagsEqual(a, b []string) bool { return tagsWithin(a, b) && tagsWithin(b, a) }

// tagsWithin reports whether every element of a is in b.
func tagsWithin(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func tagsCommon(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func tagsUnion(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		out = appendOnce(out, x)
	}
	return out
}

func tagsLess(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
