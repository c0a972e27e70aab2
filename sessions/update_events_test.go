package sessions_test

import (
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/sessions"
)

// TestUpdateEventsDeclared checks that the service counts, from zero, every kind of change the
// offered systems that observe their updates declare, and nothing for the others.
func TestUpdateEventsDeclared(t *testing.T) {
	svc := learningService(t, sessions.LearnRouted, inmem.New())
	want := map[string]bool{}
	systems, err := library.Library(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sys := range systems {
		if o, ok := sys.(hippocam.UpdateObserver); ok {
			for _, ev := range o.UpdateEvents() {
				want[sys.Name()+"/"+ev.Kind] = true
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("no system of the library observes its updates (lessons does)")
	}
	got := svc.Stats().UpdateEvents
	for _, c := range got {
		if !want[c.System+"/"+c.Kind] || c.Count != 0 || c.Help == "" {
			t.Errorf("counter %+v: not declared, not at zero, or without help", c)
		}
		delete(want, c.System+"/"+c.Kind)
	}
	for k := range want {
		t.Errorf("no counter for %s", k)
	}
	if n := svc.Stats().UpdateEventCount("no_such_system", "added"); n != 0 {
		t.Errorf("UpdateEventCount of an unknown system = %d", n)
	}
}
