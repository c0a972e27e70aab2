// Package library names the memory systems a router may choose from (docs/learning.md §2) and
// builds them by id: icl, reasoning_bank, lessons and hippocam, and the numeric systems
// regression, hazard and entities.
package library

import (
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/entities"
	"github.com/hippocam/hippocam/memory/hazard"
	"github.com/hippocam/hippocam/memory/hippocamsys"
	"github.com/hippocam/hippocam/memory/icl"
	"github.com/hippocam/hippocam/memory/lessons"
	"github.com/hippocam/hippocam/memory/reasoningbank"
	"github.com/hippocam/hippocam/memory/regression"
)

// names lists the systems in the order a library offers them.
var names = []string{icl.Name, reasoningbank.Name, lessons.Name, hippocamsys.Name, regression.Name, hazard.Name, entities.Name}

// Names returns the ids of every system, in the order a library offers them.
func Names() []string { return append([]string(nil), names...) }

// New builds the system with the given id over env. EINVALID for an id that names no system.
func New(name string, env *learn.Env) (hippocam.MemorySystem, error) {
	switch name {
	case icl.Name:
		return icl.New(env), nil
	case reasoningbank.Name:
		return reasoningbank.New(env), nil
	case lessons.Name:
		return lessons.New(env), nil
	case hippocamsys.Name:
		return hippocamsys.New(env), nil
	case regression.Name:
		return regression.New(env), nil
	case hazard.Name:
		return hazard.New(env), nil
	case entities.Name:
		return entities.New(env), nil
	}
	return nil, hippocam.Errorf(hippocam.EINVALID, "unknown memory system %q; the library has %s", name, strings.Join(names, ", "))
}

// Library builds the systems with the given ids, in that order (nil or empty: every system).
// EINVALID for an unknown id or one given twice.
func Library(env *learn.Env, ids []string) ([]hippocam.MemorySystem, error) {
	if len(ids) == 0 {
		ids = names
	}
	seen := map[string]bool{}
	systems := make([]hippocam.MemorySystem, 0, len(ids))
	for _, id := range ids {
		if seen[id] {
			return nil, hippocam.Errorf(hippocam.EINVALID, "memory system %q is listed twice", id)
		}
		seen[id] = true
		s, err := New(id, env)
		if err != nil {
			return nil, err
		}
		systems = append(systems, s)
	}
	return systems, nil
}

// MinClusterWindow is the smallest window a hippocam cluster's session is kept within.
const MinClusterWindow = 512

// SetBudget sets what the systems keep within the advisory budget: a hippocam cluster's session
// is kept within it (at least MinClusterWindow), so that its context, which is its advisory,
// fits. The other systems take the budget with each Read.
func SetBudget(systems []hippocam.MemorySystem, budget int) {
	for _, s := range systems {
		if h, ok := s.(*hippocamsys.System); ok {
			h.Window = max(budget, MinClusterWindow)
		}
	}
}

// Numeric reports whether the system with the given id is one of the numeric systems, whose
// state is a numeric.State (the REST API and the viewer show it as such).
func Numeric(name string) bool {
	return name == regression.Name || name == hazard.Name || name == entities.Name
}
