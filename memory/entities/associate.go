package entities

import (
	"math"
	"slices"
)

// association is the work of one event: its detections, their calibrated variances, and what
// explains each of them so far.
type association struct {
	d    *Data
	recs []Record
	r    []float64 // c·sd² of each detection
	c    float64
	// owner[i] is the index in d.Tracks of the track detection i is assigned or folded to,
	// -1 while it has none; primary[j] is the detection assigned to track j in this event.
	owner   []int
	primary map[int]int
	matched []int // tracks assigned a detection in this event, in order of assignment
	// sigma2[f] is the noise variance of value field f as the event starts; gated[f] whether
	// it is known well enough to gate the matching.
	sigma2 []float64
	gated  []bool
}

// observe associates the detections of event e with the tracks and updates them:
// confirmed tracks first, then tentative ones, then new tracks for what is left (see the
// package doc), and finally drops the tentative tracks that have gone stale.
func (d *Data) observe(e Event) {
	index, recs := e.Index, e.Detections
	for f, s := range e.Steps {
		if f < len(d.Noise) {
			d.Noise[f].Step = max(d.Noise[f].Step, s)
		}
	}
	a := &association{d: d, recs: recs, c: d.Calibration.Factor(), primary: map[int]int{}}
	for _, n := range d.Noise {
		s2, ok := n.variance()
		a.sigma2, a.gated = append(a.sigma2, s2), append(a.gated, ok)
	}
	a.r = make([]float64, len(recs))
	a.owner = make([]int, len(recs))
	for i, rec := range recs {
		a.r[i] = a.c * rec.SD * rec.SD
		a.owner[i] = -1
	}
	a.stage(func(t *Track) bool { return t.Support >= confirmed })
	a.stage(func(t *Track) bool { return t.Support < confirmed })
	a.update(index)
	a.create(index)
	a.merge(index)
	d.Tracks = slices.DeleteFunc(d.Tracks, func(t Track) bool {
		return t.Support < confirmed && index-t.Last > tentativeHorizon
	})
}

// admissible reports whether detection i may be explained by track t, and at what cost: z²
// of the pair, computed only within the gate (outside it the ratio could overflow).
func (a *association) admissible(i int, t *Track) (float64, bool) {
	dx := a.recs[i].X - t.M
	v := a.r[i] + t.P
	if dx*dx > gate*v {
		return 0, false
	}
	z2 := dx * dx / v
	for k, e := range t.Values {
		if !a.gated[k] {
			continue
		}
		dv := a.recs[i].Values[k] - e.Mean
		if dv*dv > valueGate*a.sigma2[k]*(1+1/float64(e.N)) {
			return z2, false
		}
	}
	return z2, true
}

// alike reports whether detections i and k are close enough to be one entity seen twice.
func (a *association) alike(i, k int) bool {
	dx := a.recs[i].X - a.recs[k].X
	if dx*dx > gate*(a.r[i]+a.r[k]) {
		return false
	}
	for f, ok := range a.gated {
		if !ok {
			continue
		}
		dv := a.recs[i].Values[f] - a.recs[k].Values[f]
		if dv*dv > valueGate*2*a.sigma2[f] {
			return false
		}
	}
	return true
}

// pending lists the detections that nothing explains yet.
func (a *association) pending() []int {
	var out []int
	for i, o := range a.owner {
		if o < 0 {
			out = append(out, i)
		}
	}
	return out
}

// stage assigns the pending detections to the tracks that in selects, one to one at least
// total cost, then folds the duplicates among what is left.
func (a *association) stage(in func(*Track) bool) {
	rows := a.pending()
	if len(rows) == 0 {
		return
	}
	type pair struct {
		row, col int
		z2       float64
	}
	var pairs []pair
	var cols []int // track indices with at least one admissible detection
	for j := range a.d.Tracks {
		t := &a.d.Tracks[j]
		if !in(t) {
			continue
		}
		col := -1
		for r, i := range rows {
			if z2, ok := a.admissible(i, t); ok {
				if col < 0 {
					col = len(cols)
					cols = append(cols, j)
				}
				pairs = append(pairs, pair{r, col, z2})
			}
		}
	}
	if len(pairs) > 0 {
		// Columns: the candidate tracks, then one "unassigned" column per row at the gate's cost.
		// Any other cell costs more than leaving every row unassigned, so it is never chosen.
		n, m := len(rows), len(cols)
		never := gate*float64(n) + 1
		cost := make([][]float64, n)
		for r := range cost {
			cost[r] = make([]float64, m+n)
			for k := range cost[r] {
				cost[r][k] = never
			}
			cost[r][m+r] = gate
		}
		for _, p := range pairs {
			cost[p.row][p.col] = p.z2
		}
		for r, k := range assign(cost) {
			if k >= 0 && k < m && cost[r][k] < never {
				i, j := rows[r], cols[k]
				a.owner[i] = j
				a.primary[j] = i
				a.matched = append(a.matched, j)
			}
		}
	}
	a.fold()
}

// fold gives each pending detection that duplicates a track matched in this event (admissible
// for the track and alike to its assigned detection) to the closest such track.
func (a *association) fold() {
	for _, i := range a.pending() {
		best, bestZ2 := -1, 0.0
		for _, j := range a.matched {
			z2, ok := a.admissible(i, &a.d.Tracks[j])
			if ok && a.alike(i, a.primary[j]) && (best < 0 || z2 < bestZ2) {
				best, bestZ2 = j, z2
			}
		}
		if best >= 0 {
			a.owner[i] = best
		}
	}
}

// update applies the event's detections to every matched track.
func (a *association) update(index int) {
	var residuals []float64
	for _, j := range a.matched {
		t := &a.d.Tracks[j]
		if t.Support >= confirmed {
			k := a.primary[j]
			dx := a.recs[k].X - t.M
			residuals = append(residuals, dx*dx/(a.recs[k].SD*a.recs[k].SD+t.P/a.c))
		}
		a.apply(t, a.primary[j], index)
	}
	for _, q := range residuals {
		a.d.Calibration.Sum += q / gateMean
		a.d.Calibration.N++
	}
}

// create starts a tentative track for each group of the detections still unexplained: each
// detection joins the first new track whose founding detection it is alike to.
func (a *association) create(index int) {
	first := len(a.d.Tracks)
	var founders []int
	for _, i := range a.pending() {
		joined := false
		for n, k := range founders {
			if a.alike(i, k) {
				a.owner[i] = first + n
				joined = true
				break
			}
		}
		if !joined {
			a.owner[i] = first + len(founders)
			founders = append(founders, i)
		}
	}
	for _, i := range founders {
		t := Track{ID: a.d.NextID, Values: make([]Estimate, len(a.d.Fields)), First: index}
		a.d.NextID++
		a.apply(&t, i, index)
		a.d.Tracks = append(a.d.Tracks, t)
	}
}

// apply updates t with detection i, the one assigned to it in this event (a fresh track,
// Support 0, starts from it): the detection joins the track's sightings, its misses against the
// value estimates of a confirmed track join the fields' innovations (a tentative track may be
// clutter, whose misses say nothing of the noise), and the track is refitted. Detections
// folded into t add nothing: they are duplicates of the same sighting (or clutter that fell
// beside it), and counting them would let a stray value pull the estimate.
func (a *association) apply(t *Track, i, index int) {
	rec := a.recs[i]
	for f := range t.Values {
		e := &t.Values[f]
		if t.Support >= confirmed {
			miss := math.Abs(rec.Values[f]-e.Mean) / math.Sqrt(1+1/float64(e.N))
			n := &a.d.Noise[f]
			k, _ := slices.BinarySearch(n.Innovations, miss)
			n.Innovations = slices.Insert(n.Innovations, k, miss)
		}
		k, _ := slices.BinarySearch(e.Observed, rec.Values[f])
		e.Observed = slices.Insert(e.Observed, k, rec.Values[f])
	}
	t.Sightings = append(t.Sightings, Sighting{rec, index})
	t.Support++
	t.SD += (rec.SD - t.SD) / float64(t.Support)
	t.Last = index
	a.refit(t)
}

// refit recomputes t's estimates from the sightings that agree with it: those whose every
// value lies within five noise sds of the track's median for that field (every sighting while
// the noise is not known, or when none agrees). Over them, the identity is what the Kalman step
// gives for a static state with observation variances c·sd²: m = Σ x/sd² / Σ 1/sd², P = c / Σ
// 1/sd²; each value is the posterior mean of a Normal under a flat prior with known noise, the
// plain mean, with its count n (the posterior variance is σ_f²/n).
//
// The sums are taken with every sd² divided by k, the power of two just above the least sd² of
// the agreeing sightings: Σ x/(sd²/k) and Σ 1/(sd²/k) are k times the plain sums, exactly (a
// power of two only shifts exponents), so m and P come out bit for bit the same whenever every
// weight stays in a float64's normal range, but no sum can overflow however many sightings
// there are: each weight k/sd² is at most 2, and a weight too small for a float64 (sd²/k
// beyond its range) counts as 0.
func (a *association) refit(t *Track) {
	med := make([]float64, len(t.Values))
	for f, e := range t.Values {
		k := len(e.Observed)
		med[f] = (e.Observed[(k-1)/2] + e.Observed[k/2]) / 2
	}
	agrees := func(r Sighting) bool {
		for f, ok := range a.gated {
			if dv := r.Values[f] - med[f]; ok && dv*dv > valueGate*a.sigma2[f] {
				return false
			}
		}
		return true
	}
	all := !slices.ContainsFunc(t.Sightings, agrees)
	used := func(r Sighting) bool { return all || agrees(r) }
	least := math.Inf(1)
	for _, r := range t.Sightings {
		if used(r) {
			least = min(least, r.SD)
		}
	}
	_, e := math.Frexp(least * least)
	k := math.Ldexp(1, e)
	var n int
	var w, wx float64
	sums := make([]float64, len(t.Values))
	for _, r := range t.Sightings {
		if !used(r) {
			continue
		}
		n++
		for f, v := range r.Values {
			sums[f] += v
		}
		if v := r.SD * r.SD / k; v <= math.MaxFloat64 {
			w += 1 / v
			wx += r.X / v
		}
	}
	t.M, t.P = wx/w, a.c/w*k
	for f := range t.Values {
		t.Values[f].N, t.Values[f].Mean = n, sums[f]/float64(n)
	}
}

// merge joins confirmed tracks that are one entity split in two: a pair is merged when their
// identities are as close as two detections of one entity may be (the alike test on the
// estimates), their values agree within the gate of their difference, σ_f²·(1/n_a + 1/n_b), and
// they were rarely detected in the same event (in at most a fifth of the events either was
// detected in: two entities seen with probability p each are seen together in p/(2 − p) of
// them, two thirds for p = 0.8, while the halves of one entity meet only through clutter). Only
// pairs with a track detected in this event are tried; the older track absorbs the newer.
func (a *association) merge(index int) {
	for {
		i, j := a.splitPair(index)
		if i < 0 {
			return
		}
		a.join(&a.d.Tracks[i], &a.d.Tracks[j])
		a.d.Tracks = slices.Delete(a.d.Tracks, j, j+1)
	}
}

// splitPair finds a mergeable pair, older track first, or returns -1, -1.
func (a *association) splitPair(index int) (int, int) {
	for j := range a.d.Tracks {
		t := &a.d.Tracks[j]
		if t.Last != index || t.Support < confirmed {
			continue
		}
		for i := range a.d.Tracks {
			if i != j && a.mergeable(&a.d.Tracks[i], t) {
				return min(i, j), max(i, j)
			}
		}
	}
	return -1, -1
}

func (a *association) mergeable(s, t *Track) bool {
	if s.Support < confirmed || t.Support < confirmed {
		return false
	}
	dm := s.M - t.M
	if dm*dm > gate*a.c*(s.SD*s.SD+t.SD*t.SD) {
		return false
	}
	for f, ok := range a.gated {
		dv := s.Values[f].Mean - t.Values[f].Mean
		if ok && dv*dv > valueGate*a.sigma2[f]*(1/float64(s.Values[f].N)+1/float64(t.Values[f].N)) {
			return false
		}
	}
	both := codetected(s.Sightings, t.Sightings)
	return float64(both) <= maxCodetected*float64(s.Support+t.Support-both)
}

// codetected counts the events two event-ordered lists of sightings share.
func codetected(a, b []Sighting) int {
	n := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i].Index == b[j].Index:
			n++
			i++
			j++
		case a[i].Index < b[j].Index:
			i++
		default:
			j++
		}
	}
	return n
}

// join makes s the track of both s's and t's sightings (in an event both were detected in,
// s's sighting is kept: the other was a duplicate or clutter) and refits it.
func (a *association) join(s, t *Track) {
	var all []Sighting
	for i, j := 0, 0; i < len(s.Sightings) || j < len(t.Sightings); {
		switch {
		case j == len(t.Sightings) || i < len(s.Sightings) && s.Sightings[i].Index < t.Sightings[j].Index:
			all = append(all, s.Sightings[i])
			i++
		case i == len(s.Sightings) || t.Sightings[j].Index < s.Sightings[i].Index:
			all = append(all, t.Sightings[j])
			j++
		default:
			all = append(all, s.Sightings[i])
			i++
			j++
		}
	}
	s.Sightings, s.Support = all, len(all)
	s.First, s.Last = all[0].Index, all[len(all)-1].Index
	s.SD = 0
	for _, r := range all {
		s.SD += r.SD / float64(len(all))
	}
	for f := range s.Values {
		obs := make([]float64, len(all))
		for k, r := range all {
			obs[k] = r.Values[f]
		}
		slices.Sort(obs)
		s.Values[f].Observed = obs
	}
	a.refit(s)
}
