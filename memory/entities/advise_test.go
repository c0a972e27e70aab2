package entities

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// lineShape is the advisory line the simulated agent parses.
var lineShape = regexp.MustCompile(`^entity freq=(-?\d+(?:\.\d+)?) power=(-?\d+(?:\.\d+)?) \(support (\d+)\)$`)

type parsed struct {
	freq, power float64
	freqText    string
	support     int
}

func parseLines(t *testing.T, lines []string) []parsed {
	t.Helper()
	var out []parsed
	for _, l := range lines {
		m := lineShape.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q is not in the advisory shape", l)
		}
		f, _ := strconv.ParseFloat(m[1], 64)
		p, _ := strconv.ParseFloat(m[2], 64)
		k, _ := strconv.Atoi(m[3])
		out = append(out, parsed{f, p, m[1], k})
	}
	return out
}

// TestAdviseKnownAnswer: four entities, A at 101.5 seen in every event, B at 104 in events 0–4,
// C at 106 last seen in event 1, D at 108 seen in events 0 and 2; the current task (event 5)
// shows A and a newcomer. Shown: A (detected now), B and D (last seen within 3 events); not C
// (last seen 4 events ago) nor the newcomer (support 1).
func TestAdviseKnownAnswer(t *testing.T) {
	aFreq := []string{"101.50", "101.52", "101.48", "101.51", "101.49", "101.50"}
	aPower := []string{"-45.0", "-45.2", "-44.8", "-45.1", "-44.9", "-45.0"}
	bFreq := []string{"104.01", "103.99", "104.00", "104.02", "103.98"}
	bPower := []string{"-60.1", "-59.9", "-60.0", "-60.2", "-59.8"}
	var d Data
	for i := range 5 {
		x := Batch{Detections: []Detection{det(aFreq[i], "0.20", aPower[i]), det(bFreq[i], "0.20", bPower[i])}}
		if i <= 1 {
			x.Detections = append(x.Detections, det("106.00", "0.20", "-70.0"))
		}
		if i == 0 || i == 2 {
			x.Detections = append(x.Detections, det("108.00", "0.20", "-50.0"))
		}
		ingestOne(&d, x, i)
	}
	cur := Batch{Requested: []string{"power"}, Detections: []Detection{det("102.70", "0.20", "-80.0"), det(aFreq[5], "0.20", aPower[5])}}
	adv := Runtime{}.Advise(&d, &testBindings, &cur, numeric.Event{Source: "cur", Index: 5})
	if adv.Head == "" || !strings.Contains(adv.Head, "noise") {
		t.Errorf("head %q", adv.Head)
	}
	got := parseLines(t, adv.Lines)
	want := []parsed{{freq: 101.5, power: -45, support: 6}, {freq: 104, power: -60, support: 5}, {freq: 108, power: -50, support: 2}}
	if len(got) != len(want) {
		t.Fatalf("lines %q, want A, B and D", adv.Lines)
	}
	for i, w := range want {
		g := got[i]
		if math.Abs(g.freq-w.freq) > 0.001 || math.Abs(g.power-w.power) > 0.01 || g.support != w.support {
			t.Errorf("line %d: %q, want freq %g power %g support %d", i, adv.Lines[i], w.freq, w.power, w.support)
		}
		// The declared sd is 0.20/√12 ≈ 0.058: a tenth of it needs 3 decimals.
		if dot := strings.IndexByte(g.freqText, '.'); dot < 0 || len(g.freqText)-dot-1 != 3 {
			t.Errorf("line %d: identity %s, want 3 decimals", i, g.freqText)
		}
	}
	if len(d.Tracks) != 4 {
		t.Errorf("Advise changed the data: %d tracks", len(d.Tracks))
	}
	// Without the current detection of A, A is still shown (last seen one event ago), with the
	// support it had.
	adv = Runtime{}.Advise(&d, &testBindings, &Batch{Requested: []string{"power"}}, numeric.Event{Index: 5})
	if got := parseLines(t, adv.Lines); len(got) != 3 || got[0].support != 5 {
		t.Errorf("without current detections: %q", adv.Lines)
	}
	// Much later, nothing is recent.
	if adv := (Runtime{}).Advise(&d, &testBindings, &Batch{Requested: []string{"power"}}, numeric.Event{Index: 9}); len(adv.Lines) != 0 {
		t.Errorf("at event 9: %q", adv.Lines)
	}
}

func TestAdviseRequestedFields(t *testing.T) {
	b := Bindings{Identity: "freq", Scale: "bw", ScaleKind: ScaleSD, Values: []string{"power", "snr"}}
	d := func(f, p, s string) Detection {
		return Detection{"freq": numeric.Number(f), "bw": "0.5", "power": numeric.Number(p), "snr": numeric.Number(s)}
	}
	var data Data
	for i, x := range []Batch{
		{Detections: []Detection{d("10.0", "-40.0", "12")}},
		{Detections: []Detection{d("10.2", "-40.4", "14")}},
	} {
		Runtime{}.Ingest(&data, &b, &x, numeric.Event{Source: "s" + strconv.Itoa(i), Index: i})
	}
	advise := func(req ...string) []string {
		return Runtime{}.Advise(&data, &b, &Batch{Requested: req}, numeric.Event{Index: 2}).Lines
	}
	// The noise is not known yet (no confirmed track has been updated): values keep 4 significant digits;
	// the identity a tenth of the sd 0.5.
	if got := advise("snr", "power", "snr"); len(got) != 1 || got[0] != "entity freq=10.10 snr=13.00 power=-40.20 (support 2)" {
		t.Errorf("requested snr, power, snr: %q", got)
	}
	if got := advise(); len(got) != 0 {
		t.Errorf("nothing requested: %q", got)
	}
	if got := advise("freq"); len(got) != 0 {
		t.Errorf("only a non-value field requested: %q", got)
	}
}

func TestAdviseEmpty(t *testing.T) {
	var d Data
	adv := Runtime{}.Advise(&d, &testBindings, &Batch{Requested: []string{"power"}, Detections: []Detection{det("101.5", "0.20", "-45.1")}}, numeric.Event{Index: 0})
	if len(adv.Lines) != 0 || adv.Head != "" {
		t.Errorf("advice from no data: %+v", adv)
	}
}

// TestAdviseRecovery: after the recovery world's 30 events, the advisory of event 31 lists every
// emitter once (a line within 0.5 sd of its frequency and 3σ/√K of its power, support ≥ 10),
// in order of frequency.
func TestAdviseRecovery(t *testing.T) {
	w := newWorld(3, 6)
	d, _ := ingest(t, w, 30)
	cur, _ := w.observe()
	got := parseLines(t, Runtime{}.Advise(d, &testBindings, &cur, numeric.Event{Source: "cur", Index: 30}).Lines)
	for i := 1; i < len(got); i++ {
		if got[i].freq < got[i-1].freq {
			t.Errorf("lines not in order of identity: %v", got)
		}
	}
	for _, e := range w.emitters {
		n := 0
		for _, g := range got {
			if g.support >= 10 && math.Abs(g.freq-e.freq) <= 0.5*w.sd() && math.Abs(g.power-e.power) <= 3*w.noise/math.Sqrt(float64(g.support)) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("emitter %v: %d matching lines in %v", e, n, got)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		v      float64
		places int
		want   string
	}{
		{103.4149, 3, "103.415"}, {-0.0001, 2, "0.00"}, {-45.06, 1, "-45.1"}, {7, 0, "7"},
	} {
		if got := format(c.v, c.places); got != c.want {
			t.Errorf("format(%g, %d) = %q, want %q", c.v, c.places, got, c.want)
		}
	}
	for _, c := range []struct {
		step float64
		want int
	}{{0.1, 1}, {0.0058, 3}, {0.01, 2}, {5, 0}, {1e-20, 12}, {0, 4}} {
		if got := decimals(c.step); got != c.want {
			t.Errorf("decimals(%g) = %d, want %d", c.step, got, c.want)
		}
	}
	for _, c := range []struct {
		v    float64
		want int
	}{{-45.1, 2}, {0.0123, 5}, {12345, 0}, {0, 0}} {
		if got := significant(c.v, 4); got != c.want {
			t.Errorf("significant(%g) = %d, want %d", c.v, got, c.want)
		}
	}
}
