package numeric

import (
	"github.com/hippocam/hippocam/learn"
)

// System makes a Runtime a memory system (being written by the lead).
type System[B, X, D any] struct {
	rt  Runtime[B, X, D]
	env *learn.Env
}

// NewSystem returns the memory system of rt; its model calls go through env.
func NewSystem[B, X, D any](rt Runtime[B, X, D], env *learn.Env) *System[B, X, D] {
	return &System[B, X, D]{rt: rt, env: env}
}
