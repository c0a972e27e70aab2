package lessons_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/learntest"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/lessons"
	"github.com/hippocam/hippocam/memory/memorytest"
)

// The conformance suite feeds single attempts. The suite's stream starts with a right answer
// in every family, which teaches the lessons system nothing; starting it three tasks later
// makes every family begin with a mistake, so that the state holds lessons from the first
// update on, as the suite requires.
func suite(newSystem func(*learn.Env) *lessons.System) memorytest.Suite {
	return learntest.Suite(memorytest.Suite{
		New:        func(env *learn.Env) hippocam.MemorySystem { return newSystem(env) },
		Trajectory: func(i int) hippocam.Trajectory { return memorytest.Trajectory(i + 3) },
		Holds: func(state json.RawMessage, id string) bool {
			st, err := lessons.ParseState(state)
			return err == nil && slices.Contains(st.Applied, id)
		},
		Consolidates: true,
	})
}

func TestConformance(t *testing.T) { memorytest.Run(t, suite(lessons.New)) }

func TestConformanceAppendOnly(t *testing.T) { memorytest.Run(t, suite(lessons.NewAppendOnly)) }
