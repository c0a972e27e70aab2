package hazard

import (
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/numeric"
)

// Name is the system's id.
const Name = "hazard"

// New returns the discrete-event memory system; its model calls go through env.
func New(env *learn.Env) *numeric.System[Bindings, Batch, Data] {
	return numeric.NewSystem[Bindings, Batch, Data](Runtime{}, env)
}
