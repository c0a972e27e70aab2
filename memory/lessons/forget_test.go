package lessons_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/lessons"
)

// Forgetting deleted sessions: their attempts leave every lesson's provenance and the applied
// list; a lesson that rested only on them is marked for review, kept and shown (in the export
// too), never dropped; forgetting what the state does not hold changes nothing.
func TestForget(t *testing.T) {
	st := &lessons.State{Next: 3, Updates: 1, Applied: []string{"a1", "a2", "b1"}, Lessons: []lessons.Lesson{
		{ID: "L1", Draft: lessons.Draft{Kind: "use", Key: "k", Value: "x", Decision: "choose x for k"}, Status: lessons.Active,
			Provenance: lessons.Provenance{Tasks: []string{"a"}, Attempts: []string{"a1", "a2"}}},
		{ID: "L2", Draft: lessons.Draft{Kind: "avoid", Key: "k", Value: "y", Decision: "do not choose y for k"}, Status: lessons.Active,
			Provenance: lessons.Provenance{Tasks: []string{"a", "b"}, Attempts: []string{"a1", "b1"}}},
	}}
	state, _ := json.Marshal(st)
	sys := lessons.New(nil)
	next, err := sys.Forget(state, []string{"a1", "a2"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := lessons.ParseState(next)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Applied, ",") != "b1" {
		t.Fatalf("applied %v", got.Applied)
	}
	l1, l2 := got.Lessons[0], got.Lessons[1]
	if !l1.Review || len(l1.Provenance.Attempts) != 0 || l1.Status != lessons.Active || len(l1.History) != 1 {
		t.Fatalf("L1 rested only on the deleted attempts: %+v", l1)
	}
	if l2.Review || strings.Join(l2.Provenance.Attempts, ",") != "b1" {
		t.Fatalf("L2 keeps another attempt: %+v", l2)
	}
	md, err := lessons.Export(next)
	if err != nil || !strings.Contains(string(md), "- review: yes") {
		t.Fatalf("the export does not show the review mark (%v):\n%s", err, md)
	}
	same, err := sys.Forget(next, []string{"zz"})
	if err != nil || string(same) != string(next) {
		t.Fatalf("forgetting nothing changed the state (%v)", err)
	}
	if string(state) == string(next) {
		t.Fatal("Forget changed nothing")
	}
}
