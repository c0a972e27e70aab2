package entities_test

import (
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/learntest"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/entities"
	"github.com/hippocam/hippocam/memory/memorytest"
)

// TestConformance runs the suite every memory system runs, on a stream of entity tasks answered
// by the simulated model (its adapter and extractor, docs/sim.md part 3). The system merges
// tracks that turn out to be one entity, so its count of entities may fall.
func TestConformance(t *testing.T) {
	s := memorytest.NumericSuite(entities.Name, func(env *learn.Env) hippocam.MemorySystem { return entities.New(env) })
	s.Consolidates = true
	memorytest.Run(t, learntest.Suite(s))
}
