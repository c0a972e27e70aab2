package hazard_test

import (
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/learntest"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/hazard"
	"github.com/hippocam/hippocam/memory/memorytest"
)

// TestConformance runs the suite every memory system runs, on a stream of hazard tasks
// answered by the simulated model (its adapter and extractor, docs/sim.md part 3).
func TestConformance(t *testing.T) {
	memorytest.Run(t, learntest.Suite(memorytest.NumericSuite(hazard.Name, func(env *learn.Env) hippocam.MemorySystem { return hazard.New(env) })))
}
