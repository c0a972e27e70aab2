package lessons_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/memory/lessons"
)

// learned is a state grown through changes of mind: active and superseded lessons, histories,
// provenance of several tasks.
func learned(tb testing.TB) json.RawMessage {
	tb.Helper()
	env, _ := newEnv(tb)
	sys := lessons.New(env)
	var state json.RawMessage
	state = mustUpdate(tb, sys, state, attempts("a", salesTask, "all wrong", "shipped right"))
	state = mustUpdate(tb, sys, state, attempts("b", salesTask, "shipped wrong", "all right"))
	state = mustUpdate(tb, sys, state, attempts("c", strings.Replace(salesTask, "weekly revenue", "revenue", 1), "pending wrong", "pending wrong", "shipped right, reference status_filter = all"))
	return state
}

func mustExport(tb testing.TB, state json.RawMessage) []byte {
	tb.Helper()
	md, err := lessons.Export(state)
	if err != nil {
		tb.Fatal(err)
	}
	return md
}

func mustImport(tb testing.TB, state json.RawMessage, md []byte) json.RawMessage {
	tb.Helper()
	next, err := lessons.Import(state, md)
	if err != nil {
		tb.Fatal(err)
	}
	return next
}

func TestExportImport(t *testing.T) {
	state := learned(t)
	md := mustExport(t, state)
	st := mustState(t, state)
	if len(st.Lessons) == len(st.Active()) {
		t.Fatal("the test state holds no superseded lesson")
	}
	for _, want := range []string{"## L1: use status_filter = shipped", "- status: superseded by ", "- history:\n  - update 1: added", "- attempts: a#1, a#2"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("the export lacks %q:\n%s", want, md)
		}
	}

	t.Run("RoundTrip", func(t *testing.T) {
		if again := mustImport(t, state, md); !bytes.Equal(again, state) {
			t.Fatalf("importing the export changed the state:\n%s\nwant:\n%s", again, state)
		}
	})
	t.Run("Edited", func(t *testing.T) {
		first := st.Active()[0]
		edited := bytes.Replace(md, []byte("- decision: "+first.Decision+"\n"), []byte("- decision: keep shipped orders only\n"), 1)
		next := mustImport(t, state, edited)
		l := mustState(t, next).Lesson(first.ID)
		if l.Decision != "keep shipped orders only" || l.History[len(l.History)-1].Event != "edited" {
			t.Fatalf("edited lesson: %+v", l)
		}
		if again := mustImport(t, next, mustExport(t, next)); !bytes.Equal(again, next) {
			t.Fatal("re-importing the edited file changed the state again")
		}
	})
	t.Run("LeftOutAndAdded", func(t *testing.T) {
		first := st.Active()[0]
		start := bytes.Index(md, []byte("## "+first.ID+": "))
		end := bytes.Index(md[start+3:], []byte("\n## "))
		cut := append(bytes.Clone(md[:start]), md[start+3+end+1:]...)
		cut = append(cut, []byte("\n## use region = eu\n\n- decision: report European sales separately\n- when: revenue\n")...)
		next := mustImport(t, state, cut)
		after := mustState(t, next)
		l := after.Lesson(first.ID)
		if l.Status != lessons.Superseded || l.History[len(l.History)-1].Event != "withdrawn" {
			t.Errorf("left-out lesson: %+v", l)
		}
		added := after.Lessons[len(after.Lessons)-1]
		if added.Rule() != "use region = eu when: revenue" || added.Status != lessons.Active || added.ID == "" || st.Lesson(added.ID) != nil {
			t.Errorf("added lesson: %+v", added)
		}
		if len(after.Lessons) != len(st.Lessons)+1 {
			t.Errorf("%d lessons after the import, want %d: nothing is removed", len(after.Lessons), len(st.Lessons)+1)
		}
	})
	t.Run("IntoEmptyState", func(t *testing.T) {
		fresh := mustImport(t, nil, md)
		if got, want := rules(t, fresh), rules(t, state); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("a fresh state holds:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if again := mustImport(t, fresh, mustExport(t, fresh)); !bytes.Equal(again, fresh) {
			t.Fatal("re-importing into the fresh state changed it")
		}
	})
}

func TestImportErrors(t *testing.T) {
	tests := []struct {
		name, md, line string
	}{
		{"UnknownField", "# Lessons\n\n## L1: use a = b\n- decision: d\n- colour: red\n", "line 5"},
		{"BadHeading", "## L1: something else\n- decision: d\n", "line 1"},
		{"StrayText", "## L1: use a = b\n- decision: d\nan afterthought\n", "line 3"},
		{"ContradictoryConditions", "## L1: use a = b\n- decision: d\n- when: x\n- not when: x\n", "line 1"},
		{"NoDecision", "## use a = b\n- when: x\n", "line 1"},
		{"BadStatus", "## use a = b\n- decision: d\n- status: retired\n", "line 3"},
		{"Twice", "## L1: use a = b\n- decision: d\n\n## L1: use a = c\n- decision: e\n", "line 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := lessons.Import(nil, []byte(tt.md))
			if hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(err.Error(), tt.line) {
				t.Fatalf("err = %v, want EINVALID naming %s", err, tt.line)
			}
		})
	}
}

// A body that parses but holds no entry (an error page, plain text, random bytes, or a lessons
// file with its title alone) is refused instead of withdrawing every lesson; only an import that
// asks to replace everything may do that.
func TestImportNotALessonsFile(t *testing.T) {
	state, err := lessons.Import(nil, []byte("# Lessons\n\n## use a = b\n- decision: d\n"))
	if err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 3000)
	for i := range random {
		random[i] = byte(i*7919 + i/3)
	}
	for name, body := range map[string][]byte{
		"Text":         []byte("hello world"),
		"HTML":         []byte("<!doctype html><html><body><h1>502 Bad Gateway</h1></body></html>"),
		"Random":       random,
		"EmptyExport":  []byte("# Lessons\n"),
		"Nothing":      nil,
		"OnlyTheTitle": []byte("# Lessons\n\nLessons learned by comparing attempts at tasks.\n"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := lessons.Import(state, body)
			if hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(err.Error(), "no lesson entry") || !strings.Contains(err.Error(), "replace=all") {
				t.Fatalf("err = %v, want EINVALID saying it holds no entry", err)
			}
		})
	}
	res, err := lessons.ImportFile(state, []byte("# Lessons\n"), lessons.ImportOptions{ReplaceAll: true})
	if err != nil {
		t.Fatalf("an empty file with ReplaceAll: %v", err)
	}
	st, err := lessons.ParseState(res.State)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Active()) != 0 || !res.Changed || !slices.Equal(res.Withdrawn, []string{"L1"}) || res.Active != 0 || res.Lessons != 1 {
		t.Errorf("%d lessons still in force after replacing them all with nothing; result %+v", len(st.Active()), res)
	}
}

// ImportFile says what an import does, lesson by lesson, and leaves its input as it was, so that
// a caller may show it without keeping it.
func TestImportFileResult(t *testing.T) {
	state, err := lessons.Import(nil, []byte("# Lessons\n\n## use a = b\n- decision: d\n\n## use c = d\n- decision: e\n\n## use e = f\n- decision: g\n\n## use g = h\n- decision: i\n"))
	if err != nil {
		t.Fatal(err)
	}
	if state, _, err = lessons.Delete(state, "L4"); err != nil { // superseded: left out, it stays as it is
		t.Fatal(err)
	}
	md, err := lessons.Export(state)
	if err != nil {
		t.Fatal(err)
	}
	file := string(md)
	file = strings.Replace(file, "- decision: e\n", "- decision: e, rewritten\n", 1)       // L2 edited
	file = file[:strings.Index(file, "\n## L3:")] + file[strings.Index(file, "\n## L4:"):] // L3 left out
	file += "\n## use x = y\n- decision: new\n"                                            // added as L5
	before := string(state)
	res, err := lessons.ImportFile(state, []byte(file), lessons.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(state) != before {
		t.Fatal("ImportFile changed its input")
	}
	want := &lessons.ImportResult{Changed: true, Added: []string{"L5"}, Edited: []string{"L2"}, Withdrawn: []string{"L3"},
		Unchanged: []string{"L1", "L4"}, Lessons: 5, Active: 3}
	res.State = nil
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("result %+v, want %+v", res, want)
	}
	same, err := lessons.ImportFile(state, md, lessons.ImportOptions{})
	if err != nil || same.Changed || len(same.Unchanged) != 4 || len(same.Added)+len(same.Edited)+len(same.Withdrawn) != 0 {
		t.Fatalf("re-importing the export: %+v, %v", same, err)
	}
}
