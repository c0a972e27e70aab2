package entities

import "math"

// assign solves the rectangular assignment problem: it gives each row of cost a distinct
// column (each column a distinct row when there are fewer columns than rows) so that the total
// cost of the chosen cells is least. It returns the column of every row, -1 for a row left
// without one. Every row must have the same length and every cost must be finite.
//
// It is the Hungarian (Kuhn–Munkres) method with row and column potentials u, v: rows are added
// one at a time, and each is given a column by a shortest augmenting path over the reduced
// costs cost[i][j] − u[i] − v[j] (Dijkstra-like, with the potentials keeping the reduced costs
// non-negative), in O(n²·m) for n rows and m ≥ n columns.
func assign(cost [][]float64) []int {
	n := len(cost)
	if n == 0 {
		return nil
	}
	m := len(cost[0])
	if m == 0 {
		return filled(n, -1)
	}
	if n > m {
		rows := assign(transpose(cost))
		out := filled(n, -1)
		for j, i := range rows {
			out[i] = j
		}
		return out
	}
	// Indices from 1; row 0 and column 0 are the sentinels of the augmenting search.
	u := make([]float64, n+1)
	v := make([]float64, m+1)
	owner := make([]int, m+1) // owner[j]: the row holding column j, 0 when free
	prev := make([]int, m+1)  // prev[j]: the column before j on the current augmenting path
	minv := make([]float64, m+1)
	used := make([]bool, m+1)
	for i := 1; i <= n; i++ {
		owner[0] = i
		for j := range minv {
			minv[j] = math.Inf(1)
			used[j] = false
		}
		j0 := 0
		for owner[j0] != 0 {
			used[j0] = true
			i0, delta, j1 := owner[j0], math.Inf(1), 0
			for j := 1; j <= m; j++ {
				if used[j] {
					continue
				}
				if r := cost[i0-1][j-1] - u[i0] - v[j]; r < minv[j] {
					minv[j], prev[j] = r, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= m; j++ {
				if used[j] {
					u[owner[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
		}
		for j0 != 0 { // flip the path: every column on it passes to the row before it
			j1 := prev[j0]
			owner[j0] = owner[j1]
			j0 = j1
		}
	}
	out := make([]int, n)
	for j := 1; j <= m; j++ {
		if owner[j] != 0 {
			out[owner[j]-1] = j - 1
		}
	}
	return out
}

// transpose returns the columns of a rectangular matrix as rows.
func transpose(a [][]float64) [][]float64 {
	t := make([][]float64, len(a[0]))
	for j := range t {
		t[j] = make([]float64, len(a))
		for i := range a {
			t[j][i] = a[i][j]
		}
	}
	return t
}

func filled(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}
