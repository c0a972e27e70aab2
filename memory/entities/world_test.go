package entities

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/memory/numeric"
)

// The simulated world of the tests: emitters at fixed frequencies with fixed powers, seen
// through a band of width bw (an extent: the declared sd is bw/√12), each detected with some
// probability per event, plus clutter spread uniformly over the band.
var testBindings = Bindings{Identity: "freq", Scale: "bw", ScaleKind: ScaleExtent, Values: []string{"power"}}

type emitter struct{ freq, power float64 }

type world struct {
	rng      *rand.Rand
	emitters []emitter
	bw       float64 // declared extent of every detection
	spread   float64 // true sd of the frequency error, as a multiple of the declared sd
	noise    float64 // sd of the power error
	detect   float64 // detection probability
	clutter  int     // clutter detections per event
	lo, hi   float64 // band of the frequencies
	plo, phi float64 // range of the powers
	// drawn[i] lists the frequencies emitter i was detected at, in order.
	drawn [][]float64
}

func newWorld(seed uint64, n int) *world {
	w := &world{
		rng: rand.New(rand.NewPCG(seed, 7)), bw: 0.2, spread: 1, noise: 1, detect: 0.8, clutter: 2,
		lo: 100, hi: 110, plo: -80, phi: -40,
	}
	for len(w.emitters) < n {
		f := w.lo + 0.5 + w.rng.Float64()*(w.hi-w.lo-1)
		if w.farFrom(f, 10) {
			w.emitters = append(w.emitters, emitter{f, w.plo + w.rng.Float64()*(w.phi-w.plo)})
		}
	}
	return w
}

// sd is the declared sd of a detection.
func (w *world) sd() float64 { return w.bw / math.Sqrt(12) }

// farFrom reports whether f lies more than k declared sds from every emitter.
func (w *world) farFrom(f, k float64) bool {
	for _, e := range w.emitters {
		if math.Abs(f-e.freq) <= k*w.sd() {
			return false
		}
	}
	return true
}

// detection renders one detection as the extractor would copy it.
func (w *world) detection(freq, power float64) Detection {
	return Detection{
		"freq":  numeric.Number(strconv.FormatFloat(freq, 'f', 4, 64)),
		"bw":    numeric.Number(strconv.FormatFloat(w.bw, 'f', 2, 64)),
		"power": numeric.Number(strconv.FormatFloat(power, 'f', 2, 64)),
	}
}

// observe draws the detections of one event: which emitters were seen, and the clutter.
func (w *world) observe() (Batch, []bool) {
	x := Batch{Requested: []string{"power"}}
	if w.drawn == nil {
		w.drawn = make([][]float64, len(w.emitters))
	}
	seen := make([]bool, len(w.emitters))
	for i, e := range w.emitters {
		if w.rng.Float64() < w.detect {
			seen[i] = true
			f := e.freq + w.rng.NormFloat64()*w.spread*w.sd()
			x.Detections = append(x.Detections, w.detection(f, e.power+w.rng.NormFloat64()*w.noise))
			w.drawn[i] = append(w.drawn[i], f)
		}
	}
	for range w.clutter {
		x.Detections = append(x.Detections, w.detection(w.lo+w.rng.Float64()*(w.hi-w.lo), w.plo-10+w.rng.Float64()*(w.phi-w.plo+20)))
	}
	w.rng.Shuffle(len(x.Detections), func(i, j int) { x.Detections[i], x.Detections[j] = x.Detections[j], x.Detections[i] })
	return x, seen
}

// text renders a batch as an event's text: one line per detection, the request last.
func text(x *Batch) string {
	var s strings.Builder
	s.WriteString("[user]\nScan of the band.\n")
	for _, d := range x.Detections {
		s.WriteString("det")
		for _, f := range []string{"freq", "bw", "power"} {
			if n, ok := d[f]; ok {
				fmt.Fprintf(&s, " %s=%s", f, n)
			}
		}
		s.WriteByte('\n')
	}
	for _, f := range x.Requested {
		fmt.Fprintf(&s, "estimate-entities %s\n", f)
	}
	return s.String()
}

// ingest feeds events 0..n-1 of w into a fresh Data and returns it with the batches.
func ingest(t testing.TB, w *world, n int) (*Data, []Batch) {
	t.Helper()
	var d Data
	batches := make([]Batch, n)
	for i := range n {
		batches[i], _ = w.observe()
		Runtime{}.Ingest(&d, &testBindings, &batches[i], numeric.Event{Source: fmt.Sprintf("t%03d", i), Index: i})
	}
	return &d, batches
}

// det is a detection with the given numbers, for hand-made batches.
func det(freq, bw, power string) Detection {
	return Detection{"freq": numeric.Number(freq), "bw": numeric.Number(bw), "power": numeric.Number(power)}
}

// confirmedNear lists the tracks of d with support at least k within radius of f.
func confirmedNear(d *Data, f, radius float64, k int) []Track {
	var out []Track
	for _, t := range d.Tracks {
		if t.Support >= k && math.Abs(t.M-f) <= radius {
			out = append(out, t)
		}
	}
	return out
}
