package hippocam

import (
	"context"
	"crypto/rand"
	"encoding/json"
)

// Store keeps sessions durably. Every method is safe for concurrent use. Sessions are scoped by
// tenant: a tenant never sees another tenant's sessions, refs or messages.
type Store interface {
	// CreateSession stores a new, empty session and gives it a fresh creation identity
	// (s.UID, whatever it held before). ECONFLICT if it exists.
	CreateSession(ctx context.Context, s *Session) error
	// SessionVersion returns the stored session's version and creation identity (Session.UID),
	// without reading its context: what a cache checks an entry against. ENOTFOUND if none.
	SessionVersion(ctx context.Context, tenant, id string) (version int64, uid string, err error)
	// Session loads a session with its context. ENOTFOUND if there is none.
	Session(ctx context.Context, tenant, id string) (*Session, error)
	// Commit applies ch, stores the snapshot's stack, rounds, usage, counters, sequence and
	// pending work and enqueues ch.Jobs, all in one transaction, and sets s.Version to
	// ch.From+1. ECONFLICT if the stored version is not ch.From, or if the stored session has
	// another creation identity than s.UID (it was deleted and created again); ENOTFOUND if the
	// session is gone; EINVALID if an op names a message that is not in the context, or a job
	// has no kind. A failed commit changes nothing and enqueues nothing.
	Commit(ctx context.Context, s *Session, ch Change) error
	// Children returns, in order, the messages archived directly beneath ref (RECALL, Alg. 1).
	// ENOTFOUND for a ref the session does not have.
	Children(ctx context.Context, tenant, sessionID, ref string) ([]Message, error)
	// Message returns one message of the session, in the context or archived. ENOTFOUND if none.
	Message(ctx context.Context, tenant, sessionID, id string) (*Message, error)
	// FindSessions returns the ids of the tenant's sessions whose transcript hash
	// (Transcript.Hash) or hash before the last answer (Transcript.PrevHash) is hash, most
	// recently updated first. It is how a history that names no session finds the one it
	// continues.
	FindSessions(ctx context.Context, tenant, hash string) ([]string, error)
	// Sessions lists a tenant's sessions, most recently updated first.
	Sessions(ctx context.Context, tenant string) ([]SessionInfo, error)
	// DeleteSession removes a session and everything archived in it, its search index and its
	// jobs included, and records a tombstone for its transcript hashes (Transcript.Hash and
	// PrevHash; hashes only, no text). The SQL stores also reclaim the space the session held
	// (docs/storage.md). ENOTFOUND if none.
	DeleteSession(ctx context.Context, tenant, id string) error
	// Tombstoned reports whether any of hashes is the transcript hash of a session of the tenant
	// that was deleted: a history that holds one continues a deleted conversation.
	Tombstoned(ctx context.Context, tenant string, hashes []string) (bool, error)
	// Search runs a full-text query over the original messages of the session's whole tree,
	// context and archive at every depth, and returns at most limit hits, the message that
	// entered the session last first (search.go says how queries and messages are read). No
	// query is a syntax error: EINVALID only for a query with no word to search for (or too
	// many) and for a limit below 1; ENOTFOUND if the session does not exist.
	Search(ctx context.Context, tenant, sessionID, query string, limit int) ([]SearchHit, error)
	// JobQueue is the store's durable job queue (jobs.go).
	JobQueue
	// ClusterStore keeps the learning layer's clusters (learning.go), scoped by tenant like
	// sessions.
	ClusterStore
	// Close releases the store's resources.
	Close() error
}

// Archive reads one session's archive. Store satisfies it through a session binding, and the
// engine adds the nodes of a step that is not yet committed.
type Archive interface {
	Children(ctx context.Context, ref string) ([]Message, error)
	Message(ctx context.Context, id string) (*Message, error)
	// Search is Store.Search on the session.
	Search(ctx context.Context, query string, limit int) ([]SearchHit, error)
}

// SessionArchive binds a Store to one session as an Archive.
func SessionArchive(st Store, tenant, id string) Archive { return sessionArchive{st, tenant, id} }

type sessionArchive struct {
	st         Store
	tenant, id string
}

func (a sessionArchive) Children(ctx context.Context, ref string) ([]Message, error) {
	return a.st.Children(ctx, a.tenant, a.id, ref)
}

func (a sessionArchive) Message(ctx context.Context, id string) (*Message, error) {
	return a.st.Message(ctx, a.tenant, a.id, id)
}

func (a sessionArchive) Search(ctx context.Context, query string, limit int) ([]SearchHit, error) {
	return a.st.Search(ctx, a.tenant, a.id, query, limit)
}

// Expand returns the full recursive expansion of msgs: every consolidated message is replaced,
// recursively, by the originals archived beneath it. Expanding a session's context yields every
// message that entered it, in order (the lossless invariant).
func Expand(ctx context.Context, a Archive, msgs []Message) ([]Message, error) {
	var out []Message
	var walk func([]Message) error
	walk = func(ms []Message) error {
		for _, m := range ms {
			if !m.Consolidated() {
				out = append(out, m)
				continue
			}
			kids, err := a.Children(ctx, m.Ref)
			if err != nil {
				return err
			}
			if err := walk(kids); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(msgs); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckJobs checks the jobs of a Change before a Store enqueues them: EINVALID for a job with
// no kind.
func CheckJobs(jobs []Job) error {
	for i, j := range jobs {
		if j.Kind == "" {
			return Errorf(EINVALID, "job %d has no kind", i)
		}
	}
	return nil
}

// CheckCluster checks a cluster before a ClusterStore stores it: EINVALID for a nil cluster, one
// without an id or a system, or a state that is not one JSON value.
func CheckCluster(c *Cluster) error {
	switch {
	case c == nil:
		return Errorf(EINVALID, "no cluster")
	case c.ID == "":
		return Errorf(EINVALID, "a cluster needs an id")
	case c.System == "":
		return Errorf(EINVALID, "cluster %q names no memory system", c.ID)
	case len(c.State) > 0 && !json.Valid(c.State):
		return Errorf(EINVALID, "the state of cluster %q is not JSON", c.ID)
	}
	return nil
}

// NewSessionUID returns a fresh creation identity for a session (Session.UID): 26 random
// base32 characters.
func NewSessionUID() string { return rand.Text() }
