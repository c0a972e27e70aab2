package hippocam_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hippocam/hippocam"
)

// A pending reinforcement stored as a single object, before several steps' work could wait at
// once, reads as a list of one; a list reads back as it was written.
func TestPendingReinforcementsJSON(t *testing.T) {
	var old hippocam.Pending
	if err := json.Unmarshal([]byte(`{"reinforce":{"answer":"m9"},"start":"m7"}`), &old); err != nil {
		t.Fatal(err)
	}
	if want := (hippocam.Reinforcements{{Answer: "m9"}}); !reflect.DeepEqual(old.Reinforce, want) || old.Start != "m7" {
		t.Fatalf("read %+v", old)
	}
	p := hippocam.Pending{Reinforce: hippocam.Reinforcements{{Answer: "m3", Since: 1}, {Answer: "m9", Start: "m8", Since: 2}}, Steps: 2}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back hippocam.Pending
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, p) {
		t.Fatalf("read back %+v, want %+v", back, p)
	}
	if err := json.Unmarshal([]byte(`{"reinforce":"m9"}`), &back); err == nil {
		t.Fatal("a string read as a reinforcement")
	}
}

// Lag counts the steps answered since the oldest work still pending was left.
func TestPendingLag(t *testing.T) {
	var none *hippocam.Pending
	if none.Lag() != 0 || (&hippocam.Pending{Steps: 5}).Lag() != 0 {
		t.Fatal("nothing pending has a lag")
	}
	p := &hippocam.Pending{Steps: 5,
		Closures:  []hippocam.ClosedSpan{{Guidance: "m4", Since: 3}, {Guidance: "m8", Since: 5}},
		Reinforce: hippocam.Reinforcements{{Answer: "m6", Since: 4}}}
	if got := p.Lag(); got != 2 {
		t.Fatalf("lag %d, want 2", got)
	}
	c := p.Clone()
	c.Closures = c.Closures[1:]
	c.Reinforce[0].Since = 0
	if p.Lag() != 2 || len(p.Closures) != 2 || p.Reinforce[0].Since != 4 {
		t.Fatal("the clone shares its lists with the original")
	}
	if c.Lag() != 5 {
		t.Fatalf("clone's lag %d, want 5", c.Lag())
	}
}
