package lessons_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/memory/lessons"
)

const twoLessons = `# Lessons

## L1: use status_filter = shipped

- decision: keep only shipped orders
- when: revenue
- tasks: sales
- attempts: sales#1
- status: active

## L2: avoid queue = normal

- decision: do not leave refunds in the normal queue
- when: refunds
- status: active
`

// Delete withdraws a lesson, keeping it with its history, without touching its input; a second
// delete changes nothing, an unknown id is ENOTFOUND.
func TestDelete(t *testing.T) {
	state := seeded(t, twoLessons)
	orig := bytes.Clone(state)
	next, changed, err := lessons.Delete(state, "L1")
	if err != nil || !changed {
		t.Fatalf("Delete: %v, changed %v", err, changed)
	}
	if !bytes.Equal(state, orig) {
		t.Fatal("Delete changed its input")
	}
	v, err := lessons.View(next)
	if err != nil {
		t.Fatal(err)
	}
	l, other := v.Lessons[0], v.Lessons[1]
	last := l.History[len(l.History)-1]
	if len(v.Lessons) != 2 || l.Status != lessons.Superseded || l.Reason != lessons.DeletedByUser || len(l.SupersededBy) != 0 ||
		last.Event != "withdrawn" || last.Update != v.Updates || other.Status != lessons.Active {
		t.Fatalf("after Delete: %+v", v)
	}
	if len(l.Provenance.Attempts) != 1 || l.Provenance.Attempts[0] != "sales#1" {
		t.Fatalf("the deleted lesson lost its provenance: %+v", l.Provenance)
	}
	again, changed, err := lessons.Delete(next, "L1")
	if err != nil || changed || !bytes.Equal(again, next) {
		t.Fatalf("a second Delete: %v, changed %v", err, changed)
	}
	if _, _, err := lessons.Delete(next, "L9"); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Fatalf("an unknown lesson: %v", err)
	}
	// The export shows the deletion, and importing it back changes nothing.
	md, err := lessons.Export(next)
	if err != nil {
		t.Fatal(err)
	}
	back, err := lessons.Import(next, md)
	if err != nil || !bytes.Equal(back, next) {
		t.Fatalf("re-import after Delete: %v\n%s\n%s", err, back, next)
	}
}

// View's lists are never null, whatever the state leaves out.
func TestViewLists(t *testing.T) {
	v, err := lessons.View(seeded(t, twoLessons))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	if bytes.Contains(b, []byte("null")) {
		t.Fatalf("a null list: %s", b)
	}
	if _, err := lessons.View(json.RawMessage(`{"lessons": 3}`)); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("an unreadable state: %v", err)
	}
}
