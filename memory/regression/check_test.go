package regression

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

const warmup = `[user]
Weekly sales so far:
obs sales[store=north,region=east,week=10] = 117.0
obs sales[store=north,region=east,week=11] = 118.4
obs sales[store=south,region=west,week=11] = 93
estimate sales[store=north,region=east,week=12]
[feedback]
feedback: sales[store=north,region=east,week=12] = 119, outcome sales[store=north,region=east,week=12] = 120.5`

const current = `[user]
Quarter w12 report; share=0.4
obs sales[store=east,region=east,week=12] = 101.5
obs sales[store=east,region=east,week=w12] = 99
obs sales[store=east,region=east,week=13] = -2
obs sales[store=east,region=east,week=13] = 2.5
estimate sales[store=south,region=west,week=12]
estimate returns[store=south]`

func TestCheckBindings(t *testing.T) {
	events := []string{warmup, current}
	ok := Bindings{Target: "sales", Key: "store", Time: "week", Factors: []string{"region"}, Family: Real}
	tests := []struct {
		name string
		edit func(b *Bindings)
		err  string // "" for none
	}{
		{"OK", func(b *Bindings) {}, ""},
		{"OKNoRoles", func(b *Bindings) { b.Key, b.Time, b.Factors = "", "", nil }, ""},
		{"OKSecondEvent", func(b *Bindings) { b.Factors = []string{"region", "share"} }, ""},
		{"ErrEmptyTarget", func(b *Bindings) { b.Target = " " }, "the target is empty"},
		{"ErrTargetNotInEvents", func(b *Bindings) { b.Target = "revenue" }, `the target "revenue" does not occur in the events`},
		{"ErrTargetPartOfWord", func(b *Bindings) { b.Target = "sale" }, `the target "sale" does not occur`},
		{"ErrKeyNotADimension", func(b *Bindings) { b.Key = "north" }, `the key "north" does not occur as a dimension (north=...)`},
		{"ErrTimeNotADimension", func(b *Bindings) { b.Time = "day" }, `the time "day" does not occur as a dimension`},
		{"ErrFactorNotADimension", func(b *Bindings) { b.Factors = []string{"channel"} }, `the factor "channel" does not occur as a dimension`},
		{"ErrFactorEmpty", func(b *Bindings) { b.Factors = []string{"region", ""} }, "factor 2 is empty"},
		{"ErrKeyIsTime", func(b *Bindings) { b.Time = "store" }, `the dimension "store" is bound twice, as key and as time`},
		{"ErrFactorIsKey", func(b *Bindings) { b.Factors = []string{"store"} }, `the dimension "store" is bound twice, as key and as factor`},
		{"ErrFactorIsTime", func(b *Bindings) { b.Factors = []string{"week"} }, `the dimension "week" is bound twice, as time and as factor`},
		{"ErrFactorTwice", func(b *Bindings) { b.Factors = []string{"region", "region"} }, `the dimension "region" is bound twice, as factor and as factor`},
		{"ErrFamily", func(b *Bindings) { b.Family = "positive_continuous" }, `the family "positive_continuous" is not one of real, positive, count, probability`},
		{"ErrNoFamily", func(b *Bindings) { b.Family = "" }, `the family "" is not one of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ok
			b.Factors = append([]string(nil), ok.Factors...)
			tt.edit(&b)
			expect(t, Runtime{}.CheckBindings(&b, events), tt.err)
		})
	}
}

func expect(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error %q, want none", err)
	case want != "" && err == nil:
		t.Errorf("no error, want %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q, want it to say %q", err, want)
	}
}

func TestCheckBatch(t *testing.T) {
	b := Bindings{Target: "sales", Key: "store", Time: "week", Factors: []string{"region"}, Family: Real}
	point := func(dims ...string) numeric.Key {
		k := numeric.Key{Target: "sales", Dims: map[string]string{}}
		for i := 0; i < len(dims); i += 2 {
			k.Dims[dims[i]] = dims[i+1]
		}
		return k
	}
	outcome := func(v string, dims ...string) Outcome {
		k := point(dims...)
		return Outcome{Target: k.Target, Dims: k.Dims, Value: numeric.Number(v)}
	}
	north := []string{"store", "north", "region", "east", "week", "11"}
	tests := []struct {
		name   string
		family string
		x      Batch
		event  string
		err    string
	}{
		{name: "OK", x: Batch{Requested: []numeric.Key{point("store", "north", "region", "east", "week", "12")},
			Outcomes: []Outcome{outcome("118.4", north...), outcome("120.5", "store", "north", "region", "east", "week", "12")}}, event: warmup},
		{name: "OKEmpty", event: warmup},
		{name: "OKNullDimension", x: Batch{Requested: []numeric.Key{point("store", "north", "region", "")}}, event: warmup},
		{name: "ErrOutcomeUnboundDimension", x: Batch{Outcomes: []Outcome{outcome("0.4", "store", "east", "share", "0.4")}}, event: current,
			err: `outcome 1: the dimension "share" is not bound (key: store; time: week; factors: region)`},
		{name: "ErrRequestedUnboundDimension", x: Batch{Requested: []numeric.Key{point("store", "east", "share", "0.4")}}, event: current,
			err: `requested point 1: the dimension "share" is not bound (key: store; time: week; factors: region)`},
		{name: "OKUnboundDimensionNull", x: Batch{Outcomes: []Outcome{outcome("0.4", "store", "east", "share", "")}}, event: current},
		{name: "ErrOutcomeNoKey", x: Batch{Outcomes: []Outcome{outcome("118.4", north...), outcome("93", "region", "west", "week", "11")}}, event: warmup,
			err: "outcome 2: the key dimension store is missing: say which store the value belongs to"},
		{name: "ErrOutcomeNullKey", x: Batch{Outcomes: []Outcome{outcome("93", "store", "", "week", "11")}}, event: warmup,
			err: "outcome 1: the key dimension store is missing"},
		{name: "ErrRequestedTarget", x: Batch{Requested: []numeric.Key{{Target: "returns", Dims: map[string]string{"store": "south"}}}}, event: current,
			err: `requested point 1: the target "returns" is not the bound target "sales"`},
		{name: "ErrRequestedDimName", x: Batch{Requested: []numeric.Key{point("store", "north", "region", "east")}}, event: "estimate sales[store=north] in the east",
			err: `requested point 1: the dimension name "region" does not occur in the event`},
		{name: "ErrRequestedDimValue", x: Batch{Requested: []numeric.Key{point("store", "central")}}, event: warmup,
			err: `requested point 1: the value "central" of dimension store does not occur in the event`},
		{name: "ErrRequestedNoKey", x: Batch{Requested: []numeric.Key{point("region", "east", "week", "12")}}, event: warmup,
			err: "requested point 1: the key dimension store is missing"},
		{name: "ErrRequestedNullKey", x: Batch{Requested: []numeric.Key{point("store", "", "week", "12")}}, event: warmup,
			err: "requested point 1: the key dimension store is missing"},
		{name: "ErrRequestedTime", x: Batch{Requested: []numeric.Key{point("store", "east", "week", "w12")}}, event: current,
			err: "requested point 1: the time week=w12 is not a number"},
		{name: "ErrOutcomeTarget", x: Batch{Outcomes: []Outcome{outcome("118.4", north...), {Target: "", Value: "93"}}}, event: warmup,
			err: `outcome 2: the target "" is not the bound target "sales"`},
		{name: "ErrOutcomeValue", x: Batch{Outcomes: []Outcome{outcome("118.4", north...), outcome("118.40", north...), outcome("117.0", north...)}}, event: warmup,
			err: "outcome 2: the value 118.40 does not occur in the event"},
		{name: "ErrOutcomeNotANumber", x: Batch{Outcomes: []Outcome{outcome("north", north...)}}, event: warmup,
			err: `outcome 1: "north" is not a finite number`},
		{name: "ErrOutcomeDimValue", x: Batch{Outcomes: []Outcome{outcome("93", "store", "south", "week", "12.5")}}, event: warmup,
			err: `outcome 1: the value "12.5" of dimension week does not occur in the event`},
		{name: "ErrOutcomeTime", x: Batch{Outcomes: []Outcome{outcome("99", "store", "east", "week", "w12")}}, event: current,
			err: "outcome 1: the time week=w12 is not a number"},
		{name: "ErrPositive", family: Positive, x: Batch{Outcomes: []Outcome{outcome("-2", "store", "east")}}, event: current,
			err: "outcome 1: the value -2 is not above zero"},
		{name: "ErrCountWhole", family: Count, x: Batch{Outcomes: []Outcome{outcome("2.5", "store", "east")}}, event: current,
			err: "outcome 1: the value 2.5 is not a whole number of zero or more"},
		{name: "ErrCountNegative", family: Count, x: Batch{Outcomes: []Outcome{outcome("-2", "store", "east")}}, event: current,
			err: "outcome 1: the value -2 is not a whole number of zero or more"},
		{name: "ErrProbability", family: Probability, x: Batch{Outcomes: []Outcome{outcome("2.5", "store", "east")}}, event: current,
			err: "outcome 1: the value 2.5 is not between 0 and 1"},
		{name: "OKProbability", family: Probability, x: Batch{Outcomes: []Outcome{outcome("0.4", "store", "east")}}, event: current},
		{name: "OKCount", family: Count, x: Batch{Outcomes: []Outcome{outcome("99", "store", "east")}}, event: current},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bb := b
			if tt.family != "" {
				bb.Family = tt.family
			}
			expect(t, Runtime{}.CheckBatch(&bb, &tt.x, tt.event), tt.err)
		})
	}
	t.Run("OKNoKeyBound", func(t *testing.T) {
		free := Bindings{Target: "sales", Factors: []string{"region"}, Family: Real}
		x := Batch{Requested: []numeric.Key{point("region", "west")}}
		expect(t, Runtime{}.CheckBatch(&free, &x, current), "")
	})
	t.Run("ErrUnboundNoRoles", func(t *testing.T) {
		bare := Bindings{Target: "sales", Family: Real}
		x := Batch{Outcomes: []Outcome{outcome("93", "store", "south")}}
		expect(t, Runtime{}.CheckBatch(&bare, &x, warmup), `outcome 1: the dimension "store" is not bound (key: none; time: none; factors: none)`)
	})
	t.Run("OKTimeUnbound", func(t *testing.T) {
		untimed := Bindings{Target: "sales", Key: "store", Factors: []string{"week"}, Family: Real}
		x := Batch{Requested: []numeric.Key{point("store", "east", "week", "w12")}}
		expect(t, Runtime{}.CheckBatch(&untimed, &x, current), "")
	})
}

func TestBatchDecodesLiterally(t *testing.T) {
	raw := `{"requested":[{"target":"sales","dims":{"store":"north","week":"12","region":null}}],
	"outcomes":[{"target":"sales","dims":{"store":"north","week":"11","region":"east"},"value":118.4}]}`
	var x Batch
	if err := json.Unmarshal([]byte(raw), &x); err != nil {
		t.Fatal(err)
	}
	if string(x.Outcomes[0].Value) != "118.4" {
		t.Errorf("value %q, want the literal 118.4", x.Outcomes[0].Value)
	}
	b := Bindings{Target: "sales", Key: "store", Time: "week", Factors: []string{"region"}, Family: Real}
	if err := (Runtime{}).CheckBatch(&b, &x, warmup); err != nil {
		t.Errorf("the spec's batch against its event: %v", err)
	}
}

func TestCheckReplay(t *testing.T) {
	rt := Runtime{}
	b := salesBindings
	asks := &Batch{Requested: []numeric.Key{{Target: "sales", Dims: map[string]string{"store": "north"}}}}
	empty := &Data{}
	expect(t, rt.CheckReplay(empty, &b, asks), "the warm-up task revealed no outcome of sales")
	d := &Data{}
	rt.Ingest(d, &b, &Batch{Outcomes: []Outcome{{Target: "sales", Dims: map[string]string{"store": "north"}, Value: "3"}}}, numeric.Event{Source: "w"})
	expect(t, rt.CheckReplay(d, &b, &Batch{}), "the current task requests no point of sales")
	expect(t, rt.CheckReplay(d, &b, asks), "")
}

// TestCheckBatchMagnitude: a value or time beyond maxMagnitude is refused, since its square on
// the link scale would overflow the fit; one at the bound passes.
func TestCheckBatchMagnitude(t *testing.T) {
	b := Bindings{Target: "sales", Key: "store", Time: "week", Family: Real}
	out := func(store, week, v string) Outcome {
		return Outcome{Target: "sales", Dims: map[string]string{"store": store, "week": week}, Value: numeric.Number(v)}
	}
	event := "obs sales[store=a,week=1] = 1e300\nobs sales[store=a,week=2] = 5\nobs sales[store=b,week=3] = 6\n" +
		"obs sales[store=b,week=1e200] = 7\nobs sales[store=b,week=4] = -1e300\nobs sales[store=b,week=-1e100] = 1e100\n" +
		"estimate sales[store=a,week=1e200]"
	tests := []struct {
		name string
		x    Batch
		err  string
	}{
		{"ErrHugeValue", Batch{Outcomes: []Outcome{out("a", "1", "1e300"), out("a", "2", "5"), out("b", "3", "6")}},
			"outcome 1: the value 1e300 is beyond 1e100 in magnitude: the fit cannot square it"},
		{"ErrHugeNegativeValue", Batch{Outcomes: []Outcome{out("a", "2", "5"), out("b", "4", "-1e300")}},
			"outcome 2: the value -1e300 is beyond 1e100 in magnitude"},
		{"ErrHugeTime", Batch{Outcomes: []Outcome{out("a", "2", "5"), out("b", "3", "6"), out("b", "1e200", "7")}},
			"outcome 3: the time week=1e200 is beyond 1e100 in magnitude: the fit cannot square it"},
		{"ErrHugeRequestedTime", Batch{Requested: []numeric.Key{{Target: "sales", Dims: map[string]string{"store": "a", "week": "1e200"}}}},
			"requested point 1: the time week=1e200 is beyond 1e100 in magnitude"},
		{"OKAtTheBound", Batch{Outcomes: []Outcome{out("b", "-1e100", "1e100")}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, Runtime{}.CheckBatch(&b, &tt.x, event), tt.err)
		})
	}
}
