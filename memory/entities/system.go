package entities

import (
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/numeric"
)

// Name is the system's id.
const Name = "entities"

// New returns the persistent-entity memory system; its adapter and extractor calls go through
// env.
func New(env *learn.Env) *numeric.System[Bindings, Batch, Data] {
	return numeric.NewSystem[Bindings, Batch, Data](Runtime{}, env)
}
