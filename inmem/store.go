// Package inmem is a hippocam.Store held in memory: for tests, the simulator and short-lived
// embedded use. Nothing survives the process. Values are deep-copied in and out, so callers can
// never change stored state through a value they passed or received.
package inmem

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hippocam/hippocam"
)

var _ hippocam.Store = (*Store)(nil)

// Store keeps sessions in memory. The zero value is not usable; call New.
type Store struct {
	// Now returns the current time; tests may replace it before first use.
	Now func() time.Time

	mu       sync.RWMutex
	sessions map[key]*session
	jobs     map[jobKey]*job
	lastJob  int64
	// tombstones holds the transcript hashes of deleted sessions.
	tombstones map[key]bool
	// clusters holds the learning layer's clusters (clusters.go); lastCluster numbers them in
	// the order they were created.
	clusters    map[key]*storedCluster
	lastCluster int64
}

type key struct{ tenant, id string }

// session is one stored session: its snapshot (Context unused), the context as message ids,
// every message it holds by id, the archive as ref → ordered child ids, and the order in which
// messages entered (entered[id], counting from 1; last is the highest), which Search sorts by.
type session struct {
	snap     hippocam.Session
	context  []string
	messages map[string]hippocam.Message
	children map[string][]string
	entered  map[string]int64
	last     int64
}

// New returns an empty store.
func New() *Store {
	return &Store{Now: time.Now, sessions: map[key]*session{}, jobs: map[jobKey]*job{}, tombstones: map[key]bool{},
		clusters: map[key]*storedCluster{}}
}

func (st *Store) now() time.Time { return st.Now().UTC().Truncate(time.Microsecond) }

// CreateSession stores s as a new session at version 0 and sets s.Version, s.UID (a fresh
// one), s.CreatedAt (unless already set) and s.UpdatedAt. EINVALID for an empty id or a non-empty context (messages enter
// through Commit); ECONFLICT if the session exists.
func (st *Store) CreateSession(ctx context.Context, s *hippocam.Session) error {
	if s == nil || s.ID == "" {
		return hippocam.Errorf(hippocam.EINVALID, "a session needs an id")
	}
	if len(s.Context) > 0 {
		return hippocam.Errorf(hippocam.EINVALID, "a new session's context must be empty; append messages with a commit")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	k := key{s.Tenant, s.ID}
	if _, ok := st.sessions[k]; ok {
		return hippocam.Errorf(hippocam.ECONFLICT, "session %q exists", s.ID)
	}
	now := st.now()
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	s.CreatedAt = s.CreatedAt.UTC().Truncate(time.Microsecond)
	s.UpdatedAt, s.Version, s.UID = now, 0, hippocam.NewSessionUID()
	st.sessions[k] = &session{
		snap:     snapshot(s),
		messages: map[string]hippocam.Message{},
		children: map[string][]string{},
		entered:  map[string]int64{},
	}
	return nil
}

// Session returns a copy of the session with its context. ENOTFOUND if there is none.
func (st *Store) Session(ctx context.Context, tenant, id string) (*hippocam.Session, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	ss, ok := st.sessions[key{tenant, id}]
	if !ok {
		return nil, notFound(id)
	}
	s := snapshot(&ss.snap)
	for _, mid := range ss.context {
		s.Context = append(s.Context, cloneMessage(ss.messages[mid]))
	}
	return &s, nil
}

// Commit applies ch to the stored session, stores s's snapshot fields and enqueues ch.Jobs, all
// or nothing; on success it sets s.Version and s.UpdatedAt. ECONFLICT if the stored version is
// not ch.From or the stored session has another UID (it was deleted and created again);
// ENOTFOUND if the session is gone; EINVALID if an op is malformed or names a message that is
// not in the context.
func (st *Store) Commit(ctx context.Context, s *hippocam.Session, ch hippocam.Change) error {
	if s == nil {
		return hippocam.Errorf(hippocam.EINVALID, "commit: no session")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	ss, ok := st.sessions[key{s.Tenant, s.ID}]
	if !ok {
		return notFound(s.ID)
	}
	if ss.snap.UID != s.UID {
		return recreated(s.ID)
	}
	if ss.snap.Version != ch.From {
		return hippocam.Errorf(hippocam.ECONFLICT, "session %q is at version %d, not %d", s.ID, ss.snap.Version, ch.From)
	}
	if err := hippocam.CheckJobs(ch.Jobs); err != nil {
		return err
	}
	p := &pending{ss: ss, context: slices.Clone(ss.context), messages: map[string]hippocam.Message{}, children: map[string][]string{}}
	for i, op := range ch.Ops {
		if err := p.apply(i, op); err != nil {
			return err
		}
	}
	ss.context = p.context
	for id, m := range p.messages {
		ss.messages[id] = m
	}
	for ref, kids := range p.children {
		ss.children[ref] = kids
	}
	for _, id := range p.order {
		ss.last++
		ss.entered[id] = ss.last
	}
	created := ss.snap.CreatedAt
	ss.snap = snapshot(s)
	ss.snap.CreatedAt, ss.snap.UpdatedAt, ss.snap.Version = created, st.now(), ch.From+1
	st.enqueue(key{s.Tenant, s.ID}, ch.Jobs, ss.snap.UpdatedAt)
	s.Version, s.UpdatedAt = ss.snap.Version, ss.snap.UpdatedAt
	return nil
}

// Children returns copies of the messages archived directly beneath ref, in order. ENOTFOUND
// for a ref the session does not have.
func (st *Store) Children(ctx context.Context, tenant, sessionID, ref string) ([]hippocam.Message, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	ss, ok := st.sessions[key{tenant, sessionID}]
	if !ok {
		return nil, notFound(sessionID)
	}
	ids, ok := ss.children[ref]
	if !ok {
		return nil, hippocam.Errorf(hippocam.ENOTFOUND, "no ref %q in session %q", ref, sessionID)
	}
	out := make([]hippocam.Message, len(ids))
	for i, id := range ids {
		out[i] = cloneMessage(ss.messages[id])
	}
	return out, nil
}

// Message returns a copy of one message of the session, in the context or archived. ENOTFOUND
// if none.
func (st *Store) Message(ctx context.Context, tenant, sessionID, id string) (*hippocam.Message, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	ss, ok := st.sessions[key{tenant, sessionID}]
	if !ok {
		return nil, notFound(sessionID)
	}
	m, ok := ss.messages[id]
	if !ok {
		return nil, hippocam.Errorf(hippocam.ENOTFOUND, "no message %q in session %q", id, sessionID)
	}
	m = cloneMessage(m)
	return &m, nil
}

// Sessions lists the tenant's sessions, most recently updated first (ties by id).
func (st *Store) Sessions(ctx context.Context, tenant string) ([]hippocam.SessionInfo, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	var out []hippocam.SessionInfo
	for k, ss := range st.sessions {
		if k.tenant != tenant {
			continue
		}
		in := hippocam.SessionInfo{Tenant: k.tenant, ID: k.id, Messages: len(ss.context), Depth: len(ss.snap.Stack),
			Consolidations: ss.snap.Consolidations, UpdatedAt: ss.snap.UpdatedAt}
		if f := ss.snap.Transcript.Fork; f != nil {
			c := *f
			in.Fork = &c
		}
		if cl := ss.snap.Transcript.Client; cl != nil {
			c := *cl
			in.Client = &c
		}
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b hippocam.SessionInfo) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// FindSessions returns the ids of the tenant's sessions whose transcript hash or hash before
// the last answer is hash, most recently updated first.
func (st *Store) FindSessions(ctx context.Context, tenant, hash string) ([]string, error) {
	if hash == "" {
		return nil, nil
	}
	list, _ := st.Sessions(ctx, tenant)
	st.mu.RLock()
	defer st.mu.RUnlock()
	var out []string
	for _, in := range list {
		if ss, ok := st.sessions[key{tenant, in.ID}]; ok {
			if t := ss.snap.Transcript; t.Hash == hash || t.PrevHash == hash {
				out = append(out, in.ID)
			}
		}
	}
	return out, nil
}

// DeleteSession removes the session, everything archived in it and its jobs, and records its
// transcript hashes as tombstones. ENOTFOUND if none.
func (st *Store) DeleteSession(ctx context.Context, tenant, id string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	k := key{tenant, id}
	ss, ok := st.sessions[k]
	if !ok {
		return notFound(id)
	}
	for _, h := range []string{ss.snap.Transcript.Hash, ss.snap.Transcript.PrevHash} {
		if h != "" {
			st.tombstones[key{tenant, h}] = true
		}
	}
	delete(st.sessions, k)
	st.deleteJobs(k)
	return nil
}

// SessionVersion returns the stored session's version and UID. ENOTFOUND if none.
func (st *Store) SessionVersion(ctx context.Context, tenant, id string) (int64, string, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	ss, ok := st.sessions[key{tenant, id}]
	if !ok {
		return 0, "", notFound(id)
	}
	return ss.snap.Version, ss.snap.UID, nil
}

// Tombstoned reports whether any of hashes is a transcript hash of a deleted session of the
// tenant.
func (st *Store) Tombstoned(ctx context.Context, tenant string, hashes []string) (bool, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	for _, h := range hashes {
		if h != "" && st.tombstones[key{tenant, h}] {
			return true, nil
		}
	}
	return false, nil
}

// Close does nothing: the store holds no resources beyond memory.
func (st *Store) Close() error { return nil }

func recreated(id string) error {
	return hippocam.Errorf(hippocam.ECONFLICT, "session %q was deleted and created again since it was loaded", id)
}

func notFound(id string) error {
	return hippocam.Errorf(hippocam.ENOTFOUND, "no session %q", id)
}
