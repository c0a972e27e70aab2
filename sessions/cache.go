package sessions

import (
	"container/list"
	"context"
	"sync"

	"github.com/hippocam/hippocam"
)

// cache keeps the most recently used sessions in memory, so that a request does not
// reload its whole context from the store. It is safe because every change of a session goes
// through Store.Commit with the version it started from: a session changed by another replica
// makes the commit fail with ECONFLICT, and the entry is dropped (the client's retry then reads
// the store). Entries are bounded by their total context messages.
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

// load returns the session from the cache, or from the store (and caches it).
func (c *cache) load(ctx context.Context, st hippocam.Store, tenant, id string) (*hippocam.Session, error) {
	key := cacheKey(tenant, id)
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		s := el.Value.(*cacheEntry).s.Clone()
		c.mu.Unlock()
		return s, nil
	}
	c.mu.Unlock()
	s, err := st.Session(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	c.put(s)
	return s.Clone(), nil
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
