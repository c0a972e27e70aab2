package entities

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteForce is the least total cost of an assignment of min(n, m) cells, one per row and per
// column, found by trying every one.
func bruteForce(cost [][]float64) float64 {
	if len(cost) > len(cost[0]) {
		cost = transpose(cost)
	}
	best := math.Inf(1)
	used := make([]bool, len(cost[0]))
	var walk func(row int, total float64)
	walk = func(row int, total float64) {
		if row == len(cost) {
			best = min(best, total)
			return
		}
		for j := range cost[row] {
			if !used[j] {
				used[j] = true
				walk(row+1, total+cost[row][j])
				used[j] = false
			}
		}
	}
	walk(0, 0)
	return best
}

func TestAssignAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 1))
	for trial := range 3000 {
		n, m := 1+rng.IntN(6), 1+rng.IntN(6)
		cost := make([][]float64, n)
		for i := range cost {
			cost[i] = make([]float64, m)
			for j := range cost[i] {
				if trial%3 == 0 {
					cost[i][j] = float64(rng.IntN(4)) // many ties
				} else {
					cost[i][j] = rng.Float64() * 10
				}
			}
		}
		got := assign(cost)
		if len(got) != n {
			t.Fatalf("%v: %d rows in the answer, want %d", cost, len(got), n)
		}
		seen := make(map[int]bool)
		total, assigned := 0.0, 0
		for i, j := range got {
			if j < 0 {
				continue
			}
			if j >= m || seen[j] {
				t.Fatalf("%v: column %d given twice or out of range in %v", cost, j, got)
			}
			seen[j] = true
			total += cost[i][j]
			assigned++
		}
		if assigned != min(n, m) {
			t.Fatalf("%v: %d cells assigned, want %d", cost, assigned, min(n, m))
		}
		if want := bruteForce(cost); math.Abs(total-want) > 1e-9 {
			t.Fatalf("%v: total %g with %v, brute force %g", cost, total, got, want)
		}
	}
}

func TestAssignEdges(t *testing.T) {
	if got := assign(nil); got != nil {
		t.Errorf("no rows: %v", got)
	}
	if got := assign([][]float64{{}, {}}); len(got) != 2 || got[0] != -1 || got[1] != -1 {
		t.Errorf("no columns: %v, want [-1 -1]", got)
	}
	// The greedy choice (row 0 takes its cheapest column 0) is not the optimum.
	if got := assign([][]float64{{1, 2}, {1, 100}}); got[0] != 1 || got[1] != 0 {
		t.Errorf("got %v, want [1 0]", got)
	}
}

// TestStageUnassignedCost: leaving a detection unassigned costs the gate, so the assignment does
// not trade a close pair for two poor ones just to match more detections.
func TestStageUnassignedCost(t *testing.T) {
	// Track A (at 10) has two detections near it, a duplicate pair; the closer one, d0, is also
	// within the gate of track B, whose own entity is absent, and d1 only within A's. Matching
	// d1 to A and d0 to B would match both, at z² 3.96 + 6.0 > 0.01 + 9 (d0 to A, d1 left).
	var d Data
	d.Fields, d.Noise = []string{"power"}, make([]Noise, 1)
	sd := 0.1
	d.Tracks = []Track{
		{ID: 0, M: 10, P: 0.0001, SD: sd, Values: []Estimate{{N: 5, Mean: -50}}, Support: 5, Last: 4},
		{ID: 1, M: 10.256, P: 0.0001, SD: sd, Values: []Estimate{{N: 5, Mean: -50}}, Support: 5, Last: 4},
	}
	recs := []Record{{X: 10.01, SD: sd, Values: []float64{-50}}, {X: 9.8, SD: sd, Values: []float64{-50}}}
	a := &association{d: &d, recs: recs, c: 1, primary: map[int]int{}, sigma2: []float64{1}, gated: []bool{false}}
	a.r = []float64{sd * sd, sd * sd}
	a.owner = []int{-1, -1}
	a.stage(func(t *Track) bool { return true })
	if a.primary[0] != 0 || len(a.matched) != 1 {
		t.Errorf("primary %v matched %v; want detection 0 on track 0 alone", a.primary, a.matched)
	}
	if a.owner[1] != 0 {
		t.Errorf("detection 1 owned by %d, want folded into track 0", a.owner[1])
	}
}
