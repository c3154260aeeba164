package filter

import "sync"

// maxCacheEntries bounds Cache: one entry per consumer group × topic with an SQL92
// subscription, past this many an arbitrary entry is dropped (and compiled again on its next pull).
const maxCacheEntries = 1 << 14

// Cache keeps the compiled expression of each consumer group's SQL92 subscription to a
// topic (the role of RocketMQ's ConsumerFilterManager): an expression is compiled once per
// subscription version, and replaced when the version or the expression changes. A
// failed compile is kept too, so a bad expression is not recompiled on every pull. Safe
// for concurrent use; a hit takes a read lock and does not allocate.
type Cache struct {
	mu      sync.RWMutex
	entries map[cacheKey]*cacheEntry
}

type cacheKey struct{ group, topic string }

type cacheEntry struct {
	expr     string
	version  int64
	compiled *Expression
	err      error
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{entries: map[cacheKey]*cacheEntry{}} }

// Get returns the compiled expression of group's subscription to topic at version,
// compiling it when the cache holds another version or expression.
func (c *Cache) Get(group, topic, expr string, version int64) (*Expression, error) {
	key := cacheKey{group, topic}
	c.mu.RLock()
	e := c.entries[key]
	c.mu.RUnlock()
	if e != nil && e.version == version && e.expr == expr {
		return e.compiled, e.err
	}
	next := &cacheEntry{expr: expr, version: version}
	if e != nil && e.expr == expr {
		next.compiled, next.err = e.compiled, e.err // a new version of the same expression
	} else {
		next.compiled, next.err = Compile(expr)
	}
	c.mu.Lock()
	if len(c.entries) >= maxCacheEntries {
		for k := range c.entries { // drop any one: the next pull of its group compiles again
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = next
	c.mu.Unlock()
	return next.compiled, next.err
}

// Len is the number of cached subscriptions.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
