package entities

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

const (
	warmup  = "[user]\nScan 1.\ndet freq=103.42 bw=0.20 power=-45.1 snr=12\ndet freq=99.1 bw=0 power=-70\nestimate-entities power\n"
	current = "[user]\nScan 2.\ndet freq=103.40 bw=0.20 power=-44.9 snr=11\nestimate-entities power\n"
)

func TestCheckBindings(t *testing.T) {
	events := []string{warmup, current}
	for _, c := range []struct {
		name string
		b    Bindings
		err  string
	}{
		{"OK", Bindings{"freq", "bw", ScaleExtent, []string{"power"}}, ""},
		{"OKSD", Bindings{"freq", "bw", ScaleSD, []string{"power", "snr"}}, ""},
		{"ErrScaleKind", Bindings{"freq", "bw", "width", []string{"power"}}, `scale_kind "width" is neither "sd" nor "extent"`},
		{"ErrNoValues", Bindings{"freq", "bw", ScaleSD, nil}, "values is empty"},
		{"ErrEmptyIdentity", Bindings{"", "bw", ScaleSD, []string{"power"}}, "the identity field is empty"},
		{"ErrEmptyValue", Bindings{"freq", "bw", ScaleSD, []string{" "}}, "the value field is empty"},
		{"ErrIdentityUngrounded", Bindings{"frequency", "bw", ScaleSD, []string{"power"}}, `the identity field "frequency" does not occur as "frequency=" in the events`},
		{"ErrScaleUngrounded", Bindings{"freq", "width", ScaleSD, []string{"power"}}, `the scale field "width" does not occur`},
		{"ErrValueUngrounded", Bindings{"freq", "bw", ScaleSD, []string{"gain"}}, `the value field "gain" does not occur`},
		// "estimate" occurs in the events, but never as "estimate=".
		{"ErrValueNotAField", Bindings{"freq", "bw", ScaleSD, []string{"estimate"}}, `the value field "estimate" does not occur`},
		{"ErrIdentityIsScale", Bindings{"freq", "freq", ScaleSD, []string{"power"}}, `the field "freq" is bound twice (as identity and as scale)`},
		{"ErrIdentityIsValue", Bindings{"freq", "bw", ScaleSD, []string{"freq"}}, `the field "freq" is bound twice (as identity and as value)`},
		{"ErrScaleIsValue", Bindings{"freq", "bw", ScaleSD, []string{"power", "bw"}}, `the field "bw" is bound twice (as scale and as value)`},
		{"ErrValueTwice", Bindings{"freq", "bw", ScaleSD, []string{"power", "power"}}, `the field "power" is bound twice (as value and as value)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkErr(t, Runtime{}.CheckBindings(&c.b, events), c.err)
		})
	}
	// A field of the current task only is grounded too.
	b := Bindings{"freq", "bw", ScaleSD, []string{"snr"}}
	if err := (Runtime{}).CheckBindings(&b, []string{"det freq=1 bw=2", "det freq=1 bw=2 snr=3"}); err != nil {
		t.Errorf("field of the second event: %v", err)
	}
}

func TestCheckBatch(t *testing.T) {
	b := testBindings
	good := func() Detection { return det("103.42", "0.20", "-45.1") }
	with := func(f string, n numeric.Number) Detection { d := good(); d[f] = n; return d }
	without := func(f string) Detection { d := good(); delete(d, f); return d }
	for _, c := range []struct {
		name string
		x    Batch
		err  string
	}{
		{"OK", Batch{Requested: []string{"power"}, Detections: []Detection{good()}}, ""},
		{"OKNothing", Batch{}, ""},
		{"OKExtraField", Batch{Detections: []Detection{with("snr", "12")}}, ""},
		{"ErrMissingIdentity", Batch{Detections: []Detection{good(), without("freq")}}, `detection 2: the field "freq" is missing`},
		{"ErrMissingScale", Batch{Detections: []Detection{without("bw")}}, `detection 1: the field "bw" is missing`},
		{"ErrMissingValue", Batch{Detections: []Detection{without("power")}}, `detection 1: the field "power" is missing`},
		{"ErrUngrounded", Batch{Detections: []Detection{with("freq", "103.4")}}, "detection 1, freq: the value 103.4 does not occur in the event"},
		{"ErrTrailingZero", Batch{Detections: []Detection{with("bw", "0.2")}}, "detection 1, bw: the value 0.2 does not occur in the event"},
		{"ErrNotANumber", Batch{Detections: []Detection{with("power", "loud")}}, `detection 1, power: "loud" is not a finite number`},
		{"ErrScaleZero", Batch{Detections: []Detection{with("bw", "0")}}, "detection 1: the scale bw=0 is not positive"},
		{"ErrScaleNegative", Batch{Detections: []Detection{with("bw", "-45.1")}}, "detection 1: the scale bw=-45.1 is not positive"},
		{"ErrExtraUngrounded", Batch{Detections: []Detection{with("gain", "12")}}, `detection 1: the field "gain" does not occur as "gain=" in the event`},
		{"ErrExtraNumber", Batch{Detections: []Detection{with("snr", "13")}}, "detection 1, snr: the value 13 does not occur in the event"},
		{"ErrRequestedNotValue", Batch{Requested: []string{"freq"}}, `requested field 1: "freq" is not a value field (the value fields are "power")`},
		{"ErrRequestedUnknown", Batch{Requested: []string{"power", "gain"}}, `requested field 2: "gain" is not a value field`},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkErr(t, Runtime{}.CheckBatch(&b, &c.x, warmup), c.err)
		})
	}
	t.Run("ErrRequestedUngrounded", func(t *testing.T) {
		x := Batch{Requested: []string{"power"}}
		checkErr(t, Runtime{}.CheckBatch(&b, &x, "det freq=1 bw=2 powers=3"), `requested field 1: "power" does not occur in the event`)
	})
	t.Run("Decoded", func(t *testing.T) {
		// Numbers decode with their literal text: 0.20 stays 0.20.
		var x Batch
		raw := `{"requested":["power"],"detections":[{"freq":103.42,"bw":0.20,"power":-45.1}]}`
		if err := json.Unmarshal([]byte(raw), &x); err != nil {
			t.Fatal(err)
		}
		if err := (Runtime{}).CheckBatch(&b, &x, warmup); err != nil {
			t.Errorf("decoded batch: %v", err)
		}
		if got := x.Detections[0]["bw"]; got != "0.20" {
			t.Errorf("bw decoded as %q", got)
		}
	})
}

func TestCheckReplay(t *testing.T) {
	b := testBindings
	var empty Data
	asks := Batch{Requested: []string{"power"}}
	checkErr(t, Runtime{}.CheckReplay(&empty, &b, &asks), "the warm-up gave no detection to learn from")
	var d Data
	Runtime{}.Ingest(&d, &b, &Batch{Detections: []Detection{det("103.42", "0.20", "-45.1")}}, numeric.Event{Source: "w", Index: 0})
	checkErr(t, Runtime{}.CheckReplay(&d, &b, &Batch{}), `the current task requests no value field (requested is empty; the value fields are "power")`)
	checkErr(t, Runtime{}.CheckReplay(&d, &b, &asks), "")
	// An event with no detection holds nothing to learn from either.
	var none Data
	Runtime{}.Ingest(&none, &b, &Batch{Requested: []string{"power"}}, numeric.Event{Source: "w", Index: 0})
	checkErr(t, Runtime{}.CheckReplay(&none, &b, &asks), "the warm-up gave no detection")
}

// checkErr fails unless err is nil (want "") or its message contains want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Errorf("no error, want %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestContracts(t *testing.T) {
	rt := Runtime{}
	if rt.Name() != "entities" || rt.Operator() != "persistent_entity_v1" || rt.Description() == "" {
		t.Errorf("name %q operator %q", rt.Name(), rt.Operator())
	}
	b := testBindings
	for name, text := range map[string]string{"adapter": rt.AdapterContract(), "extractor": rt.ExtractorContract(&b)} {
		for _, line := range strings.Split(text, "\n") {
			for _, p := range []string{"obs ", "counts ", "det ", "estimate", "feedback:", "#bind", "forecast ", "curve ", "entity "} {
				if strings.HasPrefix(strings.TrimSpace(line), p) {
					t.Errorf("%s contract: line %q starts with %q", name, line, p)
				}
			}
		}
	}
	if c := rt.ExtractorContract(&b); !strings.Contains(c, `"freq" (identity)`) || !strings.Contains(c, `"bw" (scale)`) || !strings.Contains(c, `"power"`) {
		t.Errorf("extractor contract does not name the bound fields:\n%s", c)
	}
}

func TestSchemas(t *testing.T) {
	type node struct {
		Type                 string           `json:"type"`
		Enum                 []string         `json:"enum"`
		Items                *node            `json:"items"`
		Properties           map[string]*node `json:"properties"`
		Required             []string         `json:"required"`
		AdditionalProperties *bool            `json:"additionalProperties"`
	}
	strict := func(t *testing.T, n *node, want ...string) {
		t.Helper()
		if n.Type != "object" || n.AdditionalProperties == nil || *n.AdditionalProperties || len(n.Required) != len(n.Properties) {
			t.Errorf("not a strict object: %+v", n)
		}
		for _, w := range want {
			if n.Properties[w] == nil {
				t.Errorf("property %q missing", w)
			}
		}
	}
	var bs node
	if err := json.Unmarshal(Runtime{}.BindingsSchema(), &bs); err != nil {
		t.Fatal(err)
	}
	strict(t, &bs, "identity", "scale", "scale_kind", "values")
	if e := bs.Properties["scale_kind"].Enum; len(e) != 2 {
		t.Errorf("scale_kind enum %v", e)
	}
	b := Bindings{"freq", "bw", ScaleSD, []string{"power", "snr"}}
	var xs node
	if err := json.Unmarshal(Runtime{}.BatchSchema(&b), &xs); err != nil {
		t.Fatal(err)
	}
	strict(t, &xs, "requested", "detections")
	strict(t, xs.Properties["detections"].Items, "freq", "bw", "power", "snr")
	if e := xs.Properties["requested"].Items.Enum; strings.Join(e, ",") != "power,snr" {
		t.Errorf("requested enum %v", e)
	}
	// The bindings decode from the adapter's JSON as numeric-spec.md writes it.
	var got Bindings
	if err := json.Unmarshal([]byte(`{"identity":"freq","scale":"bw","scale_kind":"extent","values":["power"]}`), &got); err != nil ||
		got.Identity != "freq" || got.Scale != "bw" || got.ScaleKind != ScaleExtent || len(got.Values) != 1 {
		t.Errorf("decoded %+v, %v", got, err)
	}
}
