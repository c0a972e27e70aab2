package lessons

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
)

// The lessons file: the state as Markdown, one entry per lesson, for a person to read, edit and
// keep under version control.
//
//	## L3: use status_filter = shipped
//
//	- decision: keep only shipped orders in revenue figures
//	- when: amazon, revenue
//	- not when: refunds
//	- evidence: 2 of 4 ok; chosen status_filter: shipped, all, shipped, pending
//	- tasks: sales-report
//	- attempts: sales-report#1, sales-report#2, sales-report#3, sales-report#4
//	- status: active
//	- history:
//	  - update 4: added — 2 of 4 ok
//
// A superseded lesson's status reads "superseded by L5, L6 — reason" (or "superseded — reason").
// Import reads such a file back into a state (Import).

// fileTitle is the first line of every lessons file Export writes.
const fileTitle = "# Lessons"

const fileHead = fileTitle + "\n\n" +
	"Lessons learned by comparing attempts at tasks, one entry each. A decision, its conditions or " +
	"its status may be edited and the file imported again; an entry whose heading has no id is a " +
	"new lesson, and an entry left out withdraws its lesson (it is kept, marked superseded).\n"

// Export renders state as a lessons file, every lesson (superseded ones included) in the order
// they were made. EINVALID if the state cannot be read.
func Export(state json.RawMessage) ([]byte, error) {
	st, err := ParseState(state)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(fileHead)
	for i := range st.Lessons {
		writeEntry(&b, &st.Lessons[i])
	}
	return []byte(b.String()), nil
}

func writeEntry(b *strings.Builder, l *Lesson) {
	fmt.Fprintf(b, "\n## %s: %s %s = %s\n\n", l.ID, l.Kind, l.Key, l.Value)
	field := func(name, value string) {
		if value == "" {
			fmt.Fprintf(b, "- %s:\n", name)
		} else {
			fmt.Fprintf(b, "- %s: %s\n", name, value)
		}
	}
	field("decision", l.Decision)
	field("when", strings.Join(l.When, ", "))
	field("not when", strings.Join(l.NotWhen, ", "))
	field("evidence", l.Evidence)
	field("tasks", strings.Join(l.Provenance.Tasks, ", "))
	field("attempts", strings.Join(l.Provenance.Attempts, ", "))
	field("status", statusText(l))
	if l.Review {
		field("review", "yes, "+ReviewNote)
	}
	if len(l.History) > 0 {
		b.WriteString("- history:\n")
		for _, c := range l.History {
			fmt.Fprintf(b, "  - update %d: %s", c.Update, c.Event)
			if c.Note != "" {
				b.WriteString(" — " + c.Note)
			}
			b.WriteString("\n")
		}
	}
}

func statusText(l *Lesson) string {
	s := string(l.Status)
	if len(l.SupersededBy) > 0 {
		s += " by " + strings.Join(l.SupersededBy, ", ")
	}
	if l.Reason != "" {
		s += " — " + l.Reason
	}
	return s
}

// Import reads a lessons file into state and returns the new state, as ImportFile does without
// options: a file that holds no entry is refused.
func Import(state json.RawMessage, md []byte) (json.RawMessage, error) {
	res, err := ImportFile(state, md, ImportOptions{})
	if err != nil {
		return nil, err
	}
	return res.State, nil
}

// ImportOptions change what ImportFile accepts.
type ImportOptions struct {
	// ReplaceAll lets a file that holds no entry (an empty file, or the title alone) withdraw
	// every lesson in force. Without it such a file is refused: a body that is no lessons file
	// at all (plain text, an error page, random bytes) reads as one without entries, and must
	// not wipe the lessons out by mistake.
	ReplaceAll bool
}

// ImportResult is what an import did, or would do: the state after it and the lessons by what
// happened to them. Every lesson of the state after is in exactly one list.
type ImportResult struct {
	State json.RawMessage
	// Changed is false when the file matched the state (State then holds the same lessons).
	Changed bool
	// Added are the lessons the file brought in (entries with a new id or none), Edited those
	// it changed, Withdrawn the lessons in force it left out, Unchanged every other lesson
	// (those the file repeats as they are, and superseded lessons it leaves out).
	Added, Edited, Withdrawn, Unchanged []string
	// Lessons counts the lessons after the import, Active those in force.
	Lessons, Active int
}

// ImportFile reads a lessons file into state. An entry whose id is in the state changes that
// lesson where the file differs (recorded in its history as edited); an entry with a new id or
// none adds a lesson (imported); an active lesson the file leaves out is withdrawn: marked
// superseded, never removed. Importing what Export gave changes nothing. The input is not
// changed, so a caller may compute the result and keep it or not (a dry run). EINVALID, naming
// the line, if the file cannot be read or an entry breaks a lesson's rules; EINVALID too for a
// file with no entry unless opts.ReplaceAll.
func ImportFile(state json.RawMessage, md []byte, opts ImportOptions) (*ImportResult, error) {
	st, err := ParseState(state)
	if err != nil {
		return nil, err
	}
	st = st.clone()
	entries, err := readFile(string(md))
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 && !opts.ReplaceAll {
		return nil, hippocam.Errorf(hippocam.EINVALID, "not a lessons file, or an empty one: it holds no lesson entry (\"## ID: …\"), "+
			"and importing it would withdraw every lesson; to withdraw them all on purpose, import it with replace=all")
	}
	update := st.Updates + 1
	res := &ImportResult{}
	inFile := map[string]bool{}
	for _, e := range entries {
		if e.ID != "" && inFile[e.ID] {
			return nil, hippocam.Errorf(hippocam.EINVALID, "lessons file line %d: lesson %s appears twice", e.line, e.ID)
		}
		if l := st.Lesson(e.ID); e.ID != "" && l != nil {
			inFile[e.ID] = true
			if edit(l, &e.Lesson, update) {
				res.Edited = append(res.Edited, l.ID)
			}
			continue
		}
		l := e.Lesson
		if l.ID == "" {
			l.ID = st.newID()
		}
		inFile[l.ID] = true
		res.Added = append(res.Added, l.ID)
		l.History = append(l.History, Change{Update: update, Event: "imported", Note: "from a lessons file"})
		st.Lessons = append(st.Lessons, l)
	}
	for i := range st.Lessons {
		l := &st.Lessons[i]
		switch {
		case !inFile[l.ID] && l.Status == Active:
			st.supersede(l.ID, nil, "left out of an imported lessons file", update)
			l.History[len(l.History)-1].Event = "withdrawn"
			res.Withdrawn = append(res.Withdrawn, l.ID)
		case !slices.Contains(res.Added, l.ID) && !slices.Contains(res.Edited, l.ID):
			res.Unchanged = append(res.Unchanged, l.ID)
		}
	}
	res.Changed = len(res.Added)+len(res.Edited)+len(res.Withdrawn) > 0
	res.Lessons, res.Active = len(st.Lessons), len(st.Active())
	if res.Changed {
		st.Updates = update
	}
	if res.State, err = st.JSON(); err != nil {
		return nil, err
	}
	return res, nil
}

// edit makes l what the file says, reporting whether anything changed.
func edit(l *Lesson, f *Lesson, update int) bool {
	var fields []string
	if l.Draft.Kind != f.Kind || l.Key != f.Key || l.Value != f.Value {
		fields = append(fields, "decision point")
	}
	if l.Decision != f.Decision {
		fields = append(fields, "decision")
	}
	if !slices.Equal(l.When, f.When) || !slices.Equal(l.NotWhen, f.NotWhen) {
		fields = append(fields, "conditions")
	}
	if l.Evidence != f.Evidence {
		fields = append(fields, "evidence")
	}
	if !slices.Equal(l.Provenance.Tasks, f.Provenance.Tasks) || !slices.Equal(l.Provenance.Attempts, f.Provenance.Attempts) {
		fields = append(fields, "provenance")
	}
	if l.Status != f.Status || !slices.Equal(l.SupersededBy, f.SupersededBy) || l.Reason != f.Reason {
		fields = append(fields, "status")
	}
	if len(fields) == 0 {
		return false
	}
	l.Draft, l.Provenance = f.Draft, f.Provenance
	l.Status, l.SupersededBy, l.Reason = f.Status, f.SupersededBy, f.Reason
	l.History = append(l.History, Change{Update: update, Event: "edited", Note: "in a lessons file: " + strings.Join(fields, ", ")})
	return true
}

// fileEntry is one lesson read from a file, with the line its heading is on.
type fileEntry struct {
	Lesson
	line int
}

// readFile parses a lessons file.
func readFile(md string) ([]fileEntry, error) {
	var out []fileEntry
	var cur *fileEntry
	inHistory := false
	bad := func(n int, format string, args ...any) error {
		return hippocam.Errorf(hippocam.EINVALID, "lessons file line %d: %s", n, fmt.Sprintf(format, args...))
	}
	for i, raw := range strings.Split(md, "\n") {
		n := i + 1
		s := strings.TrimRight(raw, " \t\r")
		t := strings.TrimSpace(s)
		switch {
		case strings.HasPrefix(t, "## "):
			if cur != nil {
				if err := finish(cur); err != nil {
					return nil, err
				}
				out = append(out, *cur)
			}
			cur, inHistory = &fileEntry{line: n}, false
			if err := readHeading(&cur.Lesson, strings.TrimSpace(t[3:])); err != nil {
				return nil, bad(n, "%v", err)
			}
		case t == "" || cur == nil:
			continue
		case inHistory && strings.HasPrefix(s, " ") && strings.HasPrefix(t, "- "):
			c, err := readChange(strings.TrimSpace(t[2:]))
			if err != nil {
				return nil, bad(n, "%v", err)
			}
			cur.History = append(cur.History, c)
		case strings.HasPrefix(t, "- "):
			name, value, ok := strings.Cut(t[2:], ":")
			if !ok {
				return nil, bad(n, "expected \"- field: value\"")
			}
			inHistory = false
			if err := readField(&cur.Lesson, strings.TrimSpace(name), oneLine(value)); err != nil {
				return nil, bad(n, "%v", err)
			}
			inHistory = strings.TrimSpace(name) == "history"
		default:
			return nil, bad(n, "cannot read %q: a lesson's lines are \"- field: value\"", clip(t))
		}
	}
	if cur != nil {
		if err := finish(cur); err != nil {
			return nil, err
		}
		out = append(out, *cur)
	}
	return out, nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// readHeading reads "[ID: ]KIND KEY = VALUE".
func readHeading(l *Lesson, h string) error {
	if id, rest, ok := strings.Cut(h, ": "); ok && id != "" && !strings.ContainsAny(id, " \t") {
		l.ID, h = id, rest
	}
	kind, rest, _ := strings.Cut(h, " ")
	key, value, ok := strings.Cut(rest, "=")
	if !ok {
		return fmt.Errorf("a heading reads \"ID: use KEY = VALUE\" or \"ID: avoid KEY = VALUE\"")
	}
	l.Kind, l.Key, l.Value = Kind(kind), strings.TrimSpace(key), strings.TrimSpace(value)
	return nil
}

func readField(l *Lesson, name, value string) error {
	switch name {
	case "decision":
		l.Decision = value
	case "when":
		l.When = list(value)
	case "not when":
		l.NotWhen = list(value)
	case "evidence":
		l.Evidence = value
	case "tasks":
		l.Provenance.Tasks = list(value)
	case "attempts":
		l.Provenance.Attempts = list(value)
	case "status":
		return readStatus(l, value)
	case "review":
		l.Review = strings.HasPrefix(value, "yes")
	case "history":
		if value != "" {
			return fmt.Errorf("history entries go on the lines below, one \"  - update N: event\" each")
		}
	default:
		return fmt.Errorf("unknown field %q (decision, when, not when, evidence, tasks, attempts, status, history)", name)
	}
	return nil
}

// readStatus reads "active" or "superseded[ by ID, ID][ — reason]".
func readStatus(l *Lesson, v string) error {
	v, reason, _ := strings.Cut(v, " — ")
	l.Reason = strings.TrimSpace(reason)
	status, by, _ := strings.Cut(strings.TrimSpace(v), " by ")
	l.Status, l.SupersededBy = Status(strings.TrimSpace(status)), list(by)
	switch {
	case l.Status != Active && l.Status != Superseded:
		return fmt.Errorf("status is %q or %q, not %q", Active, Superseded, l.Status)
	case l.Status == Active && (len(l.SupersededBy) > 0 || l.Reason != ""):
		return fmt.Errorf("an active lesson has no replacement and no reason")
	}
	return nil
}

// readChange reads "update N: EVENT[ — NOTE]".
func readChange(s string) (Change, error) {
	rest, ok := strings.CutPrefix(s, "update ")
	num, rest, ok2 := strings.Cut(rest, ":")
	u, err := strconv.Atoi(strings.TrimSpace(num))
	if !ok || !ok2 || err != nil {
		return Change{}, fmt.Errorf("a history entry reads \"update N: event — note\"")
	}
	event, note, _ := strings.Cut(strings.TrimSpace(rest), " — ")
	return Change{Update: u, Event: strings.TrimSpace(event), Note: strings.TrimSpace(note)}, nil
}

// list splits a comma-separated list.
func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// finish normalizes and checks an entry read from a file.
func finish(e *fileEntry) error {
	e.Draft.normalize()
	if err := e.Draft.validate(); err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "lessons file line %d: lesson %s: %v", e.line, e.ID, err)
	}
	if e.Status == "" {
		e.Status = Active
	}
	return nil
}
