package regression

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// events splits a simulated panel into events of a few weeks each, overlapping by one week
// (so that some history lines repeat).
func events(w *world) []*Batch {
	var out []*Batch
	for from := 1; from <= 10; from += 3 {
		out = append(out, &Batch{Outcomes: w.panel(from, from+3)})
	}
	return out
}

func TestForget(t *testing.T) {
	rt := Runtime{}
	b := salesBindings
	evs := events(newWorld(31, 5, 10))
	sources := []string{"t0", "t1", "t2", "t3"}

	before := &Data{}
	for i, x := range evs[:3] {
		rt.Ingest(before, &b, x, numeric.Event{Source: sources[i], Index: i})
	}
	after := &Data{}
	for i, x := range evs {
		rt.Ingest(after, &b, x, numeric.Event{Source: sources[i], Index: i})
	}
	if mustJSON(t, before) == mustJSON(t, after) {
		t.Fatal("the fourth event changed nothing")
	}
	rt.Forget(after, []string{"t3"})
	if got, want := mustJSON(t, after), mustJSON(t, before); got != want {
		t.Errorf("ingest then forget differs from never ingesting")
	}

	// Forgetting a middle event: as if the others alone had been ingested.
	skip := &Data{}
	for i, x := range evs {
		if i != 1 {
			rt.Ingest(skip, &b, x, numeric.Event{Source: sources[i], Index: i})
		}
	}
	rt.Forget(after, []string{"t1"})
	rt.Ingest(after, &b, evs[3], numeric.Event{Source: "t3", Index: 3})
	if mustJSON(t, after) != mustJSON(t, skip) {
		t.Error("forgetting the second event differs from never ingesting it")
	}

	rt.Forget(after, sources)
	if !reflect.DeepEqual(*after, Data{}) || rt.Entries(after) != 0 {
		t.Errorf("forgetting every source left %s", mustJSON(t, after))
	}
}

func TestRoundTrip(t *testing.T) {
	rt := Runtime{}
	b := salesBindings
	d := &Data{}
	for i, x := range events(newWorld(32, 6, 10)) {
		rt.Ingest(d, &b, x, numeric.Event{Source: "t" + string(rune('a'+i)), Index: i})
	}
	raw := mustJSON(t, d)
	var back Data
	if err := json.Unmarshal([]byte(raw), &back); err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, &back) != raw {
		t.Error("data changed through JSON")
	}
	current := &Batch{Requested: []numeric.Key{request("s1", "online", "14"), request("s7", "shop", "")}}
	ev := numeric.Event{Source: "now", Index: 9}
	a1, a2 := rt.Advise(d, &b, current, ev), rt.Advise(&back, &b, current, ev)
	if !reflect.DeepEqual(a1, a2) || len(a1.Lines) == 0 {
		t.Errorf("advice before and after JSON:\n%v\n%v", a1, a2)
	}
	// Refitting the decoded records gives the same fit.
	refit(&back)
	if mustJSON(t, &back) != raw {
		t.Error("refitting decoded data changed it")
	}
}

func TestDeterministic(t *testing.T) {
	rt := Runtime{}
	b := salesBindings
	run := func() (string, []string) {
		d := &Data{}
		for i, x := range events(newWorld(33, 8, 10)) {
			rt.Ingest(d, &b, x, numeric.Event{Source: "s", Index: i})
		}
		adv := rt.Advise(d, &b, &Batch{Requested: []numeric.Key{request("s1", "online", "14")}}, numeric.Event{})
		return mustJSON(t, d), adv.Lines
	}
	d1, l1 := run()
	for range 5 {
		if d2, l2 := run(); d1 != d2 || !slices.Equal(l1, l2) {
			t.Fatal("the same input gave different data or advice")
		}
	}
}

func TestIngestKeepsOnlyOutcomes(t *testing.T) {
	rt := Runtime{}
	b := salesBindings
	d := &Data{}
	rt.Ingest(d, &b, &Batch{
		Requested: []numeric.Key{{Target: "sales", Dims: map[string]string{"store": "north"}}},
		Outcomes: []Outcome{
			{Target: "returns", Dims: map[string]string{"store": "north"}, Value: "4"},
			{Target: "sales", Dims: map[string]string{"store": "north", "region": ""}, Value: "40"},
		},
	}, numeric.Event{Source: "a"})
	if len(d.Records) != 1 || d.Records[0].Value != "40" || len(d.Records[0].Dims) != 1 {
		t.Errorf("records %s, want the one sales outcome, its null dimension dropped", mustJSON(t, d.Records))
	}
}
