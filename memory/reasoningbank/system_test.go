package reasoningbank_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/learntest"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/memorytest"
	"github.com/hippocam/hippocam/memory/reasoningbank"
)

func TestConformance(t *testing.T) {
	memorytest.Run(t, learntest.Suite(memorytest.Suite{
		New: func(env *learn.Env) hippocam.MemorySystem { return reasoningbank.New(env) },
		Holds: func(state json.RawMessage, id string) bool {
			var st reasoningbank.State
			return json.Unmarshal(state, &st) == nil && slices.ContainsFunc(st.Records, func(r reasoningbank.Record) bool { return r.Trajectory == id })
		},
	}))
}
