package regression

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// forecastLine is the shape the simulated agent reads.
var forecastLine = regexp.MustCompile(`^forecast (\S+) = (-?[0-9]+(?:\.[0-9]+)?) ± ([0-9]+(?:\.[0-9]+)?) \(support ([0-9]+)\)$`)

func request(s, channel, week string) numeric.Key {
	dims := map[string]string{"store": s, "channel": channel}
	if week != "" {
		dims["week"] = week
	}
	return numeric.Key{Target: "sales", Dims: dims}
}

func TestAdviseLines(t *testing.T) {
	w := newWorld(21, 4, 10)
	train := w.panel(1, 12)
	d := ingest(t, salesBindings, train)
	current := &Batch{Requested: []numeric.Key{
		request("s1", "online", "13"),
		request("s2", "shop", "13"),
		request("s9", "online", "13"),
		request("s1", "online", "14"),
	}}
	adv := Runtime{}.Advise(d, &salesBindings, current, numeric.Event{Source: "now", Index: 2})
	if adv.Head == "" {
		t.Error("no head")
	}
	if len(adv.Lines) != 6 {
		t.Fatalf("%d lines, want 4 forecasts and 2 recent lines:\n%s", len(adv.Lines), strings.Join(adv.Lines, "\n"))
	}
	for i, p := range current.Requested {
		m := forecastLine.FindStringSubmatch(adv.Lines[i])
		if m == nil {
			t.Fatalf("line %d %q is not a forecast line", i+1, adv.Lines[i])
		}
		if m[1] != p.String() {
			t.Errorf("line %d forecasts %s, want %s (the requested order)", i+1, m[1], p)
		}
		fc := d.Fit.Predict(&salesBindings, p.Dims)
		n, _ := strconv.ParseFloat(m[2], 64)
		s, _ := strconv.ParseFloat(m[3], 64)
		if math.Abs(n-fc.Value) > 0.05*fc.SD || math.Abs(s-fc.SD) > 0.05*fc.SD {
			t.Errorf("line %d: %s ± %s, the fit says %v ± %v", i+1, m[2], m[3], fc.Value, fc.SD)
		}
		if m[4] != strconv.Itoa(fc.Support) {
			t.Errorf("line %d: support %s, want %d", i+1, m[4], fc.Support)
		}
		// A forecast is within a few sd of the truth.
		week, _ := strconv.Atoi(p.Dims["week"])
		if s := storeIndex(t, p.Dims["store"]); s < len(w.stores) && math.Abs(n-w.mean(s, p.Dims["channel"], week)) > 4*fc.SD {
			t.Errorf("line %d: %v, the true mean is %v", i+1, n, w.mean(s, p.Dims["channel"], week))
		}
	}
	if !strings.HasSuffix(adv.Lines[2], "(support 0)") {
		t.Errorf("a new store's line %q, want support 0", adv.Lines[2])
	}
	for i, want := range []string{recentWant(train, "s1", "online"), recentWant(train, "s2", "shop")} {
		if got := adv.Lines[4+i]; got != want {
			t.Errorf("recent line %d:\n got %s\nwant %s", i+1, got, want)
		}
	}
	if strings.Contains(adv.Foot, "forecast") || !strings.Contains(adv.Foot, "96 distinct") {
		t.Errorf("foot %q", adv.Foot)
	}
}

// recentWant is the recent line of one series: its three latest weeks, as written.
func recentWant(train []Outcome, s, channel string) string {
	var parts []string
	for _, o := range train {
		if week, _ := strconv.Atoi(o.Dims["week"]); o.Dims["store"] == s && o.Dims["channel"] == channel && week >= 10 {
			parts = append(parts, fmt.Sprintf("week %s = %s", o.Dims["week"], o.Value))
		}
	}
	return fmt.Sprintf("recent sales[channel=%s,store=%s]: %s", channel, s, strings.Join(parts, ", "))
}

func TestAdviseNeedsTwoObservations(t *testing.T) {
	rt := Runtime{}
	b := salesBindings
	d := &Data{}
	asks := &Batch{Requested: []numeric.Key{{Target: "sales", Dims: map[string]string{"store": "north", "week": "12"}}}}
	if adv := rt.Advise(d, &b, asks, numeric.Event{}); len(adv.Lines) != 0 {
		t.Errorf("empty data: %q", adv.Lines)
	}
	obs := func(week, v string) *Batch {
		return &Batch{Outcomes: []Outcome{{Target: "sales", Dims: map[string]string{"store": "north", "week": week}, Value: numeric.Number(v)}}}
	}
	rt.Ingest(d, &b, obs("10", "117.0"), numeric.Event{Source: "a", Index: 0})
	rt.Ingest(d, &b, obs("10", "117.0"), numeric.Event{Source: "b", Index: 1})
	if adv := rt.Advise(d, &b, asks, numeric.Event{}); len(adv.Lines) != 0 {
		t.Errorf("one distinct observation: %q, want nothing", adv.Lines)
	}
	rt.Ingest(d, &b, obs("11", "118.4"), numeric.Event{Source: "c", Index: 2})
	adv := rt.Advise(d, &b, asks, numeric.Event{})
	// One series, two weeks (no trend): mu = 117.7, the REML noise variance is
	// ((117.0-117.7)^2 + (118.4-117.7)^2) / (2-1) = 0.98, and the predictive variance
	// 0.98 * (1 + 1/2) = 1.47, an sd of 1.21.
	want := []string{"forecast sales[store=north,week=12] = 117.7 ± 1.2 (support 2)", "recent sales[store=north]: week 10 = 117.0, week 11 = 118.4"}
	if strings.Join(adv.Lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("two observations:\n%s\nwant\n%s", strings.Join(adv.Lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestAdviseWithoutKey(t *testing.T) {
	b := Bindings{Target: "latency", Family: Positive}
	var outs []Outcome
	for i, v := range []string{"12.5", "13.1", "11.8", "12.9"} {
		outs = append(outs, Outcome{Target: "latency", Dims: map[string]string{"run": strconv.Itoa(i)}, Value: numeric.Number(v)})
	}
	d := ingest(t, b, outs)
	asks := &Batch{Requested: []numeric.Key{{Target: "latency"}}}
	adv := Runtime{}.Advise(d, &b, asks, numeric.Event{})
	if len(adv.Lines) != 1 {
		t.Fatalf("lines %q, want one forecast (no series has the requested dimensions)", adv.Lines)
	}
	m := forecastLine.FindStringSubmatch(adv.Lines[0])
	if m == nil || m[1] != "latency" || m[4] != "4" {
		t.Fatalf("line %q, want a forecast of latency with support 4", adv.Lines[0])
	}
	n, _ := strconv.ParseFloat(m[2], 64)
	geo := math.Exp((math.Log(12.5) + math.Log(13.1) + math.Log(11.8) + math.Log(12.9)) / 4)
	if math.Abs(n-geo) > 0.01 {
		t.Errorf("forecast %v, want the geometric mean %.2f", n, geo)
	}
}

func TestPlusMinus(t *testing.T) {
	for _, tt := range []struct {
		v, s float64
		want string
	}{
		{118.4321, 3.07, "118.4 ± 3.1"},
		{118.4321, 31.2, "118 ± 31"},
		{1184.321, 250, "1184 ± 250"},
		{0.25, 0.0029, "0.2500 ± 0.0029"},
		{42, 0.0289, "42.000 ± 0.029"},
		{-3.5, 0.5, "-3.50 ± 0.50"},
	} {
		if got := plusMinus(tt.v, tt.s); got != tt.want {
			t.Errorf("plusMinus(%v, %v) = %q, want %q", tt.v, tt.s, got, tt.want)
		}
	}
}

// TestAdviseSkipsOtherTargets: a requested point of another quantity gets no forecast line;
// with only such points there is no advice.
func TestAdviseSkipsOtherTargets(t *testing.T) {
	w := newWorld(22, 3, 10)
	d := ingest(t, salesBindings, w.panel(1, 6))
	other := numeric.Key{Target: "returns", Dims: map[string]string{"store": "s1", "channel": "online"}}
	adv := Runtime{}.Advise(d, &salesBindings, &Batch{Requested: []numeric.Key{other, request("s1", "online", "7")}}, numeric.Event{Source: "now", Index: 2})
	var forecastsSeen []string
	for _, l := range adv.Lines {
		if m := forecastLine.FindStringSubmatch(l); m != nil {
			forecastsSeen = append(forecastsSeen, m[1])
		}
		if strings.Contains(l, "returns") {
			t.Errorf("line %q is about another target", l)
		}
	}
	if want := request("s1", "online", "7").String(); len(forecastsSeen) != 1 || forecastsSeen[0] != want {
		t.Errorf("forecasts of %v, want only %s", forecastsSeen, want)
	}
	if adv := (Runtime{}).Advise(d, &salesBindings, &Batch{Requested: []numeric.Key{other}}, numeric.Event{}); len(adv.Lines) != 0 || adv.Head != "" {
		t.Errorf("advice %q for another target alone, want none", adv.Lines)
	}
}
