package learnstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/icl"
	"github.com/hippocam/hippocam/memory/lessons"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/memory/reasoningbank"
)

// The conditions (docs/learning.md, "Conditions").
const (
	Stateless         = "stateless"           // no memory, one attempt
	BestOfN           = "best-of-n"           // no memory, N attempts, the best counts
	GlobalICL         = "global-icl"          // one icl cluster for every task
	RoutedICL         = "routed-icl"          // the router, over icl alone
	RoutedCL          = "routed-cl"           // the router, over the whole library
	GlobalRB          = "global-rb"           // one reasoning_bank cluster
	RoutedRB          = "routed-rb"           // the router, over reasoning_bank alone
	Lessons           = "lessons"             // one lessons cluster, N attempts per task
	LessonsAppendOnly = "lessons-append-only" // the same, every candidate added
	GroundTruth       = "ground-truth"        // one cluster per hidden source
)

// placement says how a condition chooses a task's cluster.
type placement int

const (
	noMemory placement = iota // none
	global                    // one cluster for the whole stream
	routed                    // the router, task by task
	bySource                  // one per hidden source, with the system the router picks for its first task
)

// condition is what a condition name stands for.
type condition struct {
	placement placement
	// library lists the systems: those offered to the router, or the global cluster's (the
	// first). Empty: the whole library.
	library []string
	// many: the task runs Config.Attempts times (else once); appendOnly: lessons without its
	// consolidator.
	many, appendOnly bool
}

var conditions = map[string]condition{
	Stateless:         {placement: noMemory},
	BestOfN:           {placement: noMemory, many: true},
	GlobalICL:         {placement: global, library: []string{icl.Name}},
	RoutedICL:         {placement: routed, library: []string{icl.Name}},
	RoutedCL:          {placement: routed},
	GlobalRB:          {placement: global, library: []string{reasoningbank.Name}},
	RoutedRB:          {placement: routed, library: []string{reasoningbank.Name}},
	Lessons:           {placement: global, library: []string{lessons.Name}, many: true},
	LessonsAppendOnly: {placement: global, library: []string{lessons.Name}, many: true, appendOnly: true},
	GroundTruth:       {placement: bySource},
}

// Conditions returns every condition's name, in the order reports list them.
func Conditions() []string {
	return []string{Stateless, BestOfN, GlobalICL, RoutedICL, RoutedCL, GlobalRB, RoutedRB, Lessons, LessonsAppendOnly, GroundTruth}
}

// build makes the condition's systems over env. A hippocam cluster's session gets the advisory
// budget as its window, so that the engine's own pressure control keeps its context, which is
// the advisory, within the budget (the system trims what still does not fit).
func (c condition) build(env *learn.Env, budget int) ([]hippocam.MemorySystem, error) {
	if c.placement == noMemory {
		return nil, nil
	}
	if c.appendOnly {
		return []hippocam.MemorySystem{lessons.NewAppendOnly(env)}, nil
	}
	systems, err := library.Library(env, c.library)
	if err != nil {
		return nil, err
	}
	library.SetBudget(systems, budget)
	return systems, nil
}

// place returns the cluster task t runs with ("" for none), creating it when it is new.
func (r *runner) place(ctx context.Context, t *Task) (string, error) {
	switch r.cond.placement {
	case global:
		if r.global == "" {
			id, err := r.create(ctx, r.systems[0].Name(), "every task of the stream")
			if err != nil {
				return "", err
			}
			r.global = id
		}
		return r.global, nil
	case routed:
		cs, err := r.store.Clusters(ctx, tenant)
		if err != nil {
			return "", err
		}
		d, ok, err := r.route(ctx, t, cs)
		if !ok || err != nil {
			return "", err
		}
		if d.Cluster != "" {
			return d.Cluster, nil
		}
		return r.create(ctx, d.System, d.Scope)
	case bySource:
		if id, seen := r.bySource[t.Source]; seen {
			if id == "" {
				r.stateless++
			}
			return id, nil
		}
		d, ok, err := r.route(ctx, t, nil)
		if err != nil {
			return "", err
		}
		id := ""
		if ok {
			if id, err = r.create(ctx, d.System, "the tasks of source "+t.Source); err != nil {
				return "", err
			}
		}
		r.bySource[t.Source] = id
		return id, nil
	}
	return "", nil
}

// route asks the router; ok is false when it gave up (the task runs stateless: counted and
// logged).
func (r *runner) route(ctx context.Context, t *Task, clusters []hippocam.Cluster) (learn.Decision, bool, error) {
	spec := hippocam.Task{ID: t.ID, Key: t.ID, Attempt: 1, Messages: t.Messages}
	d, err := learn.Route(ctx, r.env, &spec, r.systems, clusters)
	if errors.Is(err, learn.ErrGaveUp) {
		r.stateless++
		r.cfg.Log.Warn("the router gave up; the task runs without memory", "task", t.ID, "err", err)
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("route: %w", err)
	}
	if d.Cluster == "" {
		if _, err := r.system(d.System); err != nil {
			return d, false, err
		}
	}
	return d, true, nil
}

// create stores a new cluster c1, c2, … of the given system and scope.
func (r *runner) create(ctx context.Context, system, scope string) (string, error) {
	r.created++
	c := &hippocam.Cluster{Tenant: tenant, ID: fmt.Sprintf("c%d", r.created), System: system, Description: scope}
	if err := r.store.CreateCluster(ctx, c); err != nil {
		return "", fmt.Errorf("create cluster: %w", err)
	}
	return c.ID, nil
}
