// Package library is the registry of memory systems (docs/learning.md, "The systems"): the one place that
// names every system and builds it by id. The session service, the transports and the commands
// ask the library for systems and find what a system offers beyond hippocam.MemorySystem
// (hippocam.StateViewer, hippocam.BudgetSetter, hippocam.UpdateObserver, learn.Configurer…) by
// type assertion; none of them imports a system's package. Adding a system is its own package
// and one line in registry below.
package library

import (
	"encoding/json"
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

// Entry is one system of the registry: its id and how to build it over a learning environment.
type Entry struct {
	Name string
	New  func(env *learn.Env) hippocam.MemorySystem
}

// entry makes the registry's line of a system from its id and its package's constructor.
func entry[S hippocam.MemorySystem](name string, build func(*learn.Env) S) Entry {
	return Entry{Name: name, New: func(env *learn.Env) hippocam.MemorySystem { return build(env) }}
}

// registry lists every system, one line each, in the order a library offers them.
var registry = []Entry{
	entry(icl.Name, icl.New),
	entry(reasoningbank.Name, reasoningbank.New),
	entry(lessons.Name, lessons.New),
	entry(hippocamsys.Name, hippocamsys.New),
	entry(regression.Name, regression.New),
	entry(hazard.Name, hazard.New),
	entry(entities.Name, entities.New),
}

// Registry returns the registry's lines, in the order a library offers them.
func Registry() []Entry { return append([]Entry(nil), registry...) }

// Names returns the ids of every system, in the order a library offers them.
func Names() []string {
	names := make([]string, len(registry))
	for i, e := range registry {
		names[i] = e.Name
	}
	return names
}

// lookup returns the registry's line of the system with the given id.
func lookup(name string) (Entry, bool) {
	for _, e := range registry {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// New builds the system with the given id over env. EINVALID for an id that names no system.
func New(name string, env *learn.Env) (hippocam.MemorySystem, error) {
	e, ok := lookup(name)
	if !ok {
		return nil, hippocam.Errorf(hippocam.EINVALID, "unknown memory system %q; the library has %s", name, strings.Join(Names(), ", "))
	}
	return e.New(env), nil
}

// Library builds the systems with the given ids, in that order (nil or empty: every system).
// EINVALID for an unknown id or one given twice.
func Library(env *learn.Env, ids []string) ([]hippocam.MemorySystem, error) {
	if len(ids) == 0 {
		ids = Names()
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

// SetBudget gives the advisory budget to every system that keeps its state within it as it
// learns (hippocam.BudgetSetter: a hippocam cluster's session, whose context is its advisory).
// The other systems take the budget with each Read.
func SetBudget(systems []hippocam.MemorySystem, budget int) {
	for _, s := range systems {
		if b, ok := s.(hippocam.BudgetSetter); ok {
			b.SetBudget(budget)
		}
	}
}

// View renders a cluster's state through its system's hippocam.StateViewer, for the REST API and
// the viewer, with the number of entries it holds. The state of a system the library does not
// have, or of one that offers no view, is shown as stored, with its entries counted by the
// system when there is one (an empty state as an empty object).
func View(system string, state json.RawMessage) (view any, entries int, err error) {
	var sys hippocam.MemorySystem
	if e, ok := lookup(system); ok {
		sys = e.New(nil) // a view reads the state alone: no model, no tokenizer
	}
	if v, ok := sys.(hippocam.StateViewer); ok {
		return v.View(state)
	}
	if sys != nil {
		entries = sys.Entries(state)
	}
	if len(state) == 0 {
		return map[string]any{}, entries, nil
	}
	return state, entries, nil
}
