package hippocam

import (
	"maps"
	"slices"
)

// CallUsage is what one model call consumed. CachedInput is the part of Input the provider
// served from its prompt cache.
type CallUsage struct {
	Input       int `json:"input"`
	CachedInput int `json:"cached_input"`
	Output      int `json:"output"`
}

// RoleUsage accumulates the usage and cost of one call role.
type RoleUsage struct {
	Calls       int     `json:"calls"`
	Input       int64   `json:"input"`
	CachedInput int64   `json:"cached_input"`
	Output      int64   `json:"output"`
	CostUSD     float64 `json:"cost_usd"`
}

// Usage is usage by call role.
type Usage map[CallRole]RoleUsage

// Add records one call.
func (u Usage) Add(role CallRole, c CallUsage, p Prices) {
	r := u[role]
	r.Calls++
	r.Input += int64(c.Input)
	r.CachedInput += int64(c.CachedInput)
	r.Output += int64(c.Output)
	r.CostUSD += p.Cost(c)
	u[role] = r
}

// Merge adds every role of o to u.
func (u Usage) Merge(o Usage) {
	for role, x := range o {
		r := u[role]
		r.Calls += x.Calls
		r.Input += x.Input
		r.CachedInput += x.CachedInput
		r.Output += x.Output
		r.CostUSD += x.CostUSD
		u[role] = r
	}
}

// Total sums all roles.
func (u Usage) Total() RoleUsage {
	var t RoleUsage
	// In role order: float sums in map order would differ from call to call.
	for _, role := range slices.Sorted(maps.Keys(u)) {
		x := u[role]
		t.Calls += x.Calls
		t.Input += x.Input
		t.CachedInput += x.CachedInput
		t.Output += x.Output
		t.CostUSD += x.CostUSD
	}
	return t
}

// Clone returns a copy of u.
func (u Usage) Clone() Usage {
	c := make(Usage, len(u))
	for k, v := range u {
		c[k] = v
	}
	return c
}

// Prices is a price schedule in USD per million tokens.
type Prices struct {
	CachedInput float64 `json:"cached_input"`
	Input       float64 `json:"input"` // uncached input
	Output      float64 `json:"output"`
}

// DefaultPrices is the schedule of the Hippocam paper's cost analysis (the Hippocam paper §A.9): USD per
// million tokens for cached input, uncached input and output.
var DefaultPrices = Prices{CachedInput: 0.00596, Input: 0.29806, Output: 1.19225}

// Cost prices one call.
func (p Prices) Cost(c CallUsage) float64 {
	uncached := c.Input - c.CachedInput
	if uncached < 0 {
		uncached = 0
	}
	return (float64(c.CachedInput)*p.CachedInput + float64(uncached)*p.Input + float64(c.Output)*p.Output) / 1e6
}
