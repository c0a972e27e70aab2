package hazard

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

const warmup = `[user]
Follow-up of the spring sign-ups, site=east.
counts churn[plan=basic,region=north] interval=1 at_risk=200 events=12
counts churn[plan=basic,region=north] interval=2 at_risk=188 events=9
counts churn[plan=pro,region=north] interval=1 at_risk=80 events=0
estimate-curve churn[plan=basic,region=north] over 6
[feedback]
feedback: churn[plan=basic,region=north] = [0.9, 0.8], outcome churn[plan=basic,region=north] = [0.95, 0.90, 0.86, 0.83, 0.80, 0.78]`

func TestCheckBindings(t *testing.T) {
	events := []string{warmup, "[user]\nestimate-curve churn[plan=plus,region=south] over 6"}
	ok := Bindings{Target: "churn", Entity: []string{"plan", "region"}, Intervals: 6}
	if err := (Runtime{}).CheckBindings(&ok, events); err != nil {
		t.Fatalf("valid bindings refused: %v", err)
	}
	withContext := Bindings{Target: "churn", Entity: []string{"plan"}, Contexts: []string{"site"}, Intervals: 1}
	if err := (Runtime{}).CheckBindings(&withContext, events); err != nil {
		t.Fatalf("valid bindings with a context refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(b *Bindings)
		want string
	}{
		{"ErrEmptyTarget", func(b *Bindings) { b.Target = " " }, "target: the target name is empty"},
		{"ErrTargetNotShown", func(b *Bindings) { b.Target = "attrition" }, `target: the name "attrition" does not occur in the tasks shown`},
		{"ErrTargetPartOfWord", func(b *Bindings) { b.Target = "chur" }, `target: the name "chur" does not occur`},
		{"ErrIntervalsZero", func(b *Bindings) { b.Intervals = 0 }, "intervals: 0 is not a whole number from 1 to 100"},
		{"ErrIntervalsTooMany", func(b *Bindings) { b.Intervals = 101 }, "intervals: 101 is not a whole number from 1 to 100"},
		{"ErrEntityNotShown", func(b *Bindings) { b.Entity = []string{"plan", "tier"} }, `entity: the dimension "tier" does not occur as a dimension (tier=…)`},
		{"ErrEntityNotADimension", func(b *Bindings) { b.Entity = []string{"plan", "sign"} }, `entity: the dimension "sign" does not occur as a dimension`},
		{"ErrEntityEmptyName", func(b *Bindings) { b.Entity = []string{""} }, "entity: a dimension name is empty"},
		{"ErrEntityTwice", func(b *Bindings) { b.Entity = []string{"plan", "plan"} }, `entity: the dimension "plan" is named twice`},
		{"ErrTwoRoles", func(b *Bindings) { b.Contexts = []string{"region"} }, `contexts: the dimension "region" is already bound as entity`},
		{"ErrContextNotShown", func(b *Bindings) { b.Contexts = []string{"season"} }, `contexts: the dimension "season" does not occur`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := ok
			b.Entity = append([]string(nil), ok.Entity...)
			tc.edit(&b)
			err := (Runtime{}).CheckBindings(&b, events)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// goodBatch is what a careful extractor gives for warmup.
func goodBatch() *Batch {
	key := func() map[string]string { return map[string]string{"plan": "basic", "region": "north"} }
	return &Batch{
		Requested: []Request{{Target: "churn", Dims: key(), Intervals: "6"}},
		Counts: []Count{
			{Target: "churn", Dims: key(), Interval: "1", AtRisk: "200", Events: "12"},
			{Target: "churn", Dims: key(), Interval: "2", AtRisk: "188", Events: "9"},
			{Target: "churn", Dims: map[string]string{"plan": "pro", "region": "north"}, Interval: "1", AtRisk: "80", Events: "0"},
		},
		Curves: []Curve{{Target: "churn", Dims: key(), Values: []numeric.Number{"0.95", "0.90", "0.86", "0.83", "0.80", "0.78"}}},
	}
}

func TestCheckBatch(t *testing.T) {
	b := bindings(6)
	if err := (Runtime{}).CheckBatch(b, goodBatch(), warmup); err != nil {
		t.Fatalf("a valid batch refused: %v", err)
	}
	t.Run("NullDimIsUnstated", func(t *testing.T) {
		x := goodBatch()
		x.Counts[0].Dims["region"] = "" // what a JSON null decodes to
		if err := (Runtime{}).CheckBatch(b, x, warmup); err != nil {
			t.Fatalf("a record that leaves a dimension out refused: %v", err)
		}
	})
	t.Run("NullDimFromJSON", func(t *testing.T) {
		var x Batch
		js := `{"requested":[{"target":"churn","dims":{"plan":"basic","region":null},"intervals":6}],"counts":[],"curves":[]}`
		if err := json.Unmarshal([]byte(js), &x); err != nil {
			t.Fatal(err)
		}
		if err := (Runtime{}).CheckBatch(b, &x, warmup); err != nil {
			t.Fatalf("a null dimension refused: %v", err)
		}
		d := &Data{}
		ingest(d, b, goodBatch(), "w", 0)
		a := Runtime{}.Advise(d, b, &x, numeric.Event{})
		if len(a.Lines) != 1 || !strings.HasPrefix(a.Lines[0], "curve churn[plan=basic] = [") {
			t.Errorf("advice for a request with a null dimension: %q", a.Lines)
		}
	})
	t.Run("OtherHorizon", func(t *testing.T) {
		// A task of the cluster asking for a shorter or a longer horizon than its J is answered
		// over the intervals it asks for.
		d := &Data{}
		ingest(d, b, goodBatch(), "w", 0)
		for _, j := range []string{"2", "9"} {
			x := goodBatch()
			x.Requested[0].Intervals = numeric.Number(j)
			ev := warmup + "\nestimate-curve over " + j
			if err := (Runtime{}).CheckBatch(b, x, ev); err != nil {
				t.Fatalf("a request over %s intervals refused: %v", j, err)
			}
			a := Runtime{}.Advise(d, b, &Batch{Requested: x.Requested}, numeric.Event{})
			values := ""
			if len(a.Lines) > 0 {
				_, values, _ = strings.Cut(a.Lines[0], "= [")
				values, _, _ = strings.Cut(values, "]")
			}
			if strings.Count(values, ",")+1 != map[string]int{"2": 2, "9": 9}[j] {
				t.Errorf("advice over %s intervals: %q", j, a.Lines)
			}
		}
	})
	t.Run("ShortCurve", func(t *testing.T) {
		x := goodBatch()
		x.Curves[0].Values = x.Curves[0].Values[:3]
		if err := (Runtime{}).CheckBatch(b, x, warmup); err != nil {
			t.Fatalf("a curve of the first 3 intervals refused: %v", err)
		}
	})
	for _, tc := range []struct {
		name string
		edit func(x *Batch)
		want string
	}{
		{"ErrRequestTarget", func(x *Batch) { x.Requested[0].Target = "sales" }, `requested 1: the target is "sales", the bindings say "churn"`},
		{"ErrRequestUnboundDim", func(x *Batch) { x.Requested[0].Dims["site"] = "east" }, `requested 1: the dimension "site" is not bound (entity: plan, region; contexts: (none))`},
		{"ErrRequestValue", func(x *Batch) { x.Requested[0].Dims["plan"] = "gold" }, `requested 1: the value "gold" of dimension plan does not occur in the event`},
		{"ErrRequestIntervals", func(x *Batch) { x.Requested[0].Intervals = "0" }, "requested 1, intervals: 0 intervals are asked for; a curve has 1 to 100"},
		{"ErrRequestIntervalsNotShown", func(x *Batch) { x.Requested[0].Intervals = "7" }, "requested 1, intervals: the value 7 does not occur in the event"},
		{"ErrRequestIntervalsNotNumber", func(x *Batch) { x.Requested[0].Intervals = "six" }, `requested 1, intervals: "six" is not a finite number`},
		{"ErrCountTarget", func(x *Batch) { x.Counts[1].Target = "churned" }, `count 2: the target is "churned", the bindings say "churn"`},
		{"ErrCountDimName", func(x *Batch) { x.Counts[1].Dims = map[string]string{"plan": "basic", "Region": "north"} }, `count 2: the dimension "Region" is not bound`},
		{"ErrCountValue", func(x *Batch) { x.Counts[1].Dims["region"] = "south" }, `count 2: the value "south" of dimension region does not occur in the event`},
		{"ErrIntervalZero", func(x *Batch) { x.Counts[0].Interval = "0" }, "count 1, interval: 0 is outside 1..6"},
		{"ErrIntervalOutside", func(x *Batch) { x.Counts[0].Interval = "12" }, "count 1, interval: 12 is outside 1..6"},
		{"ErrIntervalFraction", func(x *Batch) { x.Counts[0].Interval = "0.90" }, "count 1, interval: 0.90 is not a whole number >= 0"},
		{"ErrAtRiskNotShown", func(x *Batch) { x.Counts[0].AtRisk = "201" }, "count 1, at_risk: the value 201 does not occur in the event"},
		{"ErrAtRiskRounded", func(x *Batch) { x.Counts[0].AtRisk = "200.0" }, "count 1, at_risk: the value 200.0 does not occur in the event"},
		{"ErrAtRiskFraction", func(x *Batch) { x.Counts[0].AtRisk = "0.95" }, "count 1, at_risk: 0.95 is not a whole number >= 0"},
		{"ErrEventsNotShown", func(x *Batch) { x.Counts[0].Events = "13" }, "count 1, events: the value 13 does not occur in the event"},
		{"ErrEventsAboveAtRisk", func(x *Batch) { x.Counts[2].Events = "188" }, "count 3: 188 events is more than the 80 at risk"},
		{"ErrCurveTarget", func(x *Batch) { x.Curves[0].Target = "chur" }, `curve 1: the target is "chur"`},
		{"ErrCurveUnboundDim", func(x *Batch) { x.Curves[0].Dims["site"] = "east" }, `curve 1: the dimension "site" is not bound`},
		{"ErrCurveEmpty", func(x *Batch) { x.Curves[0].Values = nil }, "curve 1: the curve has no values"},
		{"ErrCurveTooLong", func(x *Batch) { x.Curves[0].Values = append(x.Curves[0].Values, "0.78") }, "curve 1: the curve has 7 values, more than the 6 intervals"},
		{"ErrCurveValueNotShown", func(x *Batch) { x.Curves[0].Values[1] = "0.91" }, "curve 1, value 2: the value 0.91 does not occur in the event"},
		{"ErrCurveAboveOne", func(x *Batch) { x.Curves[0].Values[0] = "12" }, "curve 1, value 1: 12 is not a probability in [0,1]"},
		{"ErrCurveRises", func(x *Batch) { x.Curves[0].Values[2] = "0.95" }, "curve 1, value 3: 0.95 is above the value before it (0.90); an event-free curve cannot rise"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := goodBatch()
			tc.edit(x)
			err := (Runtime{}).CheckBatch(b, x, warmup)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCheckReplay(t *testing.T) {
	b := bindings(6)
	current := &Batch{Requested: goodBatch().Requested}
	d := &Data{}
	ingest(d, b, goodBatch(), "w", 0)
	if err := (Runtime{}).CheckReplay(d, b, current); err != nil {
		t.Fatalf("a usable replay refused: %v", err)
	}
	for _, tc := range []struct {
		name    string
		d       *Data
		current *Batch
		want    string
	}{
		{"ErrNothingRequested", d, &Batch{}, "the current task asks for no event-free curve of churn"},
		{"ErrNothingLearned", &Data{}, current, "the completed task gave no counts and no realized curves of churn"},
		{"ErrNoOneAtRisk", func() *Data {
			d := &Data{}
			ingest(d, b, countBatch("basic", "north", []int{0}, []int{0}), "w", 0)
			return d
		}(), current, "have no one at risk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (Runtime{}).CheckReplay(tc.d, b, tc.current)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestContracts(t *testing.T) {
	rt := Runtime{}
	b := &Bindings{Target: "churn", Entity: []string{"plan", "region"}, Contexts: []string{"site"}, Intervals: 6}
	for name, text := range map[string]string{"adapter": rt.AdapterContract(), "extractor": rt.ExtractorContract(b)} {
		for _, line := range strings.Split(text, "\n") {
			for _, p := range []string{"obs ", "counts ", "det ", "estimate", "feedback:", "#bind", "forecast ", "curve ", "entity "} {
				if strings.HasPrefix(strings.TrimSpace(line), p) {
					t.Errorf("%s contract line %q starts with %q", name, line, p)
				}
			}
		}
	}
	if !strings.Contains(rt.ExtractorContract(b), "entity plan, region; contexts site") {
		t.Errorf("the extractor contract does not name the bound dimensions:\n%s", rt.ExtractorContract(b))
	}
	for name, schema := range map[string]json.RawMessage{"bindings": rt.BindingsSchema(), "batch": rt.BatchSchema(b)} {
		var v map[string]any
		if err := json.Unmarshal(schema, &v); err != nil {
			t.Fatalf("%s schema is not JSON: %v", name, err)
		}
		strict(t, name, v)
	}
	// The schema's dims are the bound dimensions.
	var s struct {
		Properties map[string]struct {
			Items struct {
				Properties map[string]struct {
					Required []string `json:"required"`
				} `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(rt.BatchSchema(b), &s); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Properties["counts"].Items.Properties["dims"].Required, ","); got != "plan,region,site" {
		t.Errorf("the dims of a count are %q, want plan,region,site", got)
	}
}

// strict checks that every object of a schema forbids other properties and requires all of its
// own.
func strict(t *testing.T, where string, v map[string]any) {
	t.Helper()
	if v["type"] == "object" {
		if v["additionalProperties"] != false {
			t.Errorf("%s: an object without additionalProperties false", where)
		}
		props, _ := v["properties"].(map[string]any)
		req, _ := v["required"].([]any)
		if len(req) != len(props) {
			t.Errorf("%s: %d properties, %d required", where, len(props), len(req))
		}
		for name, p := range props {
			strict(t, where+"."+name, p.(map[string]any))
		}
	}
	if items, ok := v["items"].(map[string]any); ok {
		strict(t, where+"[]", items)
	}
}
