package sessions

import (
	"container/list"
	"context"
	"sync"

	"github.com/hippocam/hippocam"
)

// cache keeps the most recently used sessions in memory, so that a request does not
// reload its whole context from the store. Other replicas may change or delete a session behind
// its back, so an entry is used only after a cheap check against the store
// (Store.SessionVersion): an entry whose version or creation identity is not the stored one is
// reloaded, and one whose session is gone is dropped, before any model call. A change that
// slips in between the check and the commit still makes the commit fail (ECONFLICT or
// ENOTFOUND), and the entry is dropped. Entries are bounded by their total context messages.
type cache struct {
	mu       sync.Mutex
	max      int // total context messages kept
	messages int
	order    *list.List // of *cacheEntry, most recent first
	byKey    map[string]*list.Element
}

type cacheEntry struct {
	key string
	s   *hippocam.Session
}

// defaultCacheMessages bounds the cache: about 200k context messages in all.
const defaultCacheMessages = 200_000

func newCache(max int) *cache {
	if max < 0 {
		max = 0
	}
	return &cache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func cacheKey(tenant, id string) string { return tenant + "\x00" + id }

// load returns the session from the cache, checked against the store, or from the store (and
// caches it). ENOTFOUND (and the entry dropped) if the store no longer has it.
func (c *cache) load(ctx context.Context, st hippocam.Store, tenant, id string) (*hippocam.Session, error) {
	key := cacheKey(tenant, id)
	c.mu.Lock()
	var cached *hippocam.Session
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		cached = el.Value.(*cacheEntry).s
	}
	c.mu.Unlock()
	if cached != nil {
		version, uid, err := st.SessionVersion(ctx, tenant, id)
		if err != nil {
			if hippocam.ErrorCode(err) == hippocam.ENOTFOUND {
				c.dropEntry(key, cached)
			}
			return nil, err
		}
		if version == cached.Version && uid == cached.UID {
			return cached.Clone(), nil
		}
		c.dropEntry(key, cached) // another replica changed it, or deleted and re-created it
	}
	s, err := st.Session(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	c.put(s)
	return s.Clone(), nil
}

// dropEntry forgets key's entry if it still holds s (a newer one put meanwhile stays).
func (c *cache) dropEntry(key string, s *hippocam.Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok && el.Value.(*cacheEntry).s == s {
		c.messages -= len(s.Context)
		c.order.Remove(el)
		delete(c.byKey, key)
	}
}

// put caches s as the latest committed state of its session.
func (c *cache) put(s *hippocam.Session) {
	key := cacheKey(s.Tenant, s.ID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.messages -= len(el.Value.(*cacheEntry).s.Context)
		c.order.Remove(el)
		delete(c.byKey, key)
	}
	if len(s.Context) > c.max {
		return
	}
	c.byKey[key] = c.order.PushFront(&cacheEntry{key: key, s: s.Clone()})
	c.messages += len(s.Context)
	for c.messages > c.max {
		last := c.order.Back()
		e := last.Value.(*cacheEntry)
		c.messages -= len(e.s.Context)
		c.order.Remove(last)
		delete(c.byKey, e.key)
	}
}

// drop forgets a session.
func (c *cache) drop(tenant, id string) {
	key := cacheKey(tenant, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.messages -= len(el.Value.(*cacheEntry).s.Context)
		c.order.Remove(el)
		delete(c.byKey, key)
	}
}

// locks serializes the requests of one key (a session name and its forks, within a tenant).
type locks struct {
	mu sync.Mutex
	m  map[string]*lock
}

type lock struct {
	mu   sync.Mutex
	refs int
}

// lock takes the key's lock and returns its release.
func (l *locks) lock(key string) func() {
	l.mu.Lock()
	sl := l.m[key]
	if sl == nil {
		sl = &lock{}
		l.m[key] = sl
	}
	sl.refs++
	l.mu.Unlock()
	sl.mu.Lock()
	return func() {
		sl.mu.Unlock()
		l.mu.Lock()
		if sl.refs--; sl.refs == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}

// refuseDeleted refuses to start a new session (or fork) from a history that continues a
// conversation that was deleted: one whose transcript, at the end of any of its answers or as a
// whole, is the transcript hash of a deleted session (Store.Tombstoned). A history with no
// answer in it yet is a new conversation and is never refused. ENOTFOUND when refused, before
// any model call and with nothing stored.
func (s *Service) refuseDeleted(ctx context.Context, h *history) error {
	var hashes []string
	for i, m := range h.conv.Messages {
		if m.Role == hippocam.RoleAssistant {
			hashes = append(hashes, h.hashes[i+1])
		}
	}
	if len(hashes) == 0 {
		return nil
	}
	hashes = append(hashes, h.hashes[len(h.conv.Messages)])
	deleted, err := s.cfg.Store.Tombstoned(ctx, h.Tenant, hashes)
	if err != nil {
		return err
	}
	if deleted {
		s.log.Info("refused a history that continues a deleted session", logTenant, h.Tenant, logSession, h.Name)
		return hippocam.Errorf(hippocam.ENOTFOUND, "this history continues a session that was deleted; start a new conversation or name a new session")
	}
	return nil
}
