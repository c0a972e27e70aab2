package sessions

import "sync"

// ChangeKind says what a Change did.
type ChangeKind string

// The kinds of change.
const (
	SessionCreated ChangeKind = "session_created" // a session (or a fork) was stored with its first step
	SessionUpdated ChangeKind = "session_updated" // a session's step, consolidation or outcome was committed
	SessionDeleted ChangeKind = "session_deleted" // a session was deleted
	ClusterChanged ChangeKind = "cluster_changed" // a cluster was created or learned, or forgot a deleted session
)

// Change is one change this service committed to the store. Session names the session of the
// session kinds; Cluster names the cluster of ClusterChanged ("" when a deleted session left
// one or more of the tenant's clusters).
type Change struct {
	Kind    ChangeKind
	Tenant  string
	Session string
	Cluster string
}

// ObserveChanges has fn called after every change this service commits, in the goroutine that
// committed it, once it is in the store: observers hear of this process's changes only, not of
// another process's on a shared store. fn must not block. The func it returns stops fn
// (calling it again does nothing).
func (s *Service) ObserveChanges(fn func(Change)) (stop func()) {
	return s.changes.add(fn)
}

// changed tells the observers of c.
func (s *Service) changed(kind ChangeKind, tenant, session, cluster string) {
	s.changes.tell(Change{Kind: kind, Tenant: tenant, Session: session, Cluster: cluster})
}

// observers are the functions ObserveChanges added.
type observers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(Change)
}

func (o *observers) add(fn func(Change)) func() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fns == nil {
		o.fns = map[int]func(Change){}
	}
	id := o.next
	o.next++
	o.fns[id] = fn
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.fns, id)
	}
}

func (o *observers) tell(c Change) {
	o.mu.Lock()
	fns := make([]func(Change), 0, len(o.fns))
	for _, fn := range o.fns {
		fns = append(fns, fn)
	}
	o.mu.Unlock()
	for _, fn := range fns {
		fn(c)
	}
}
