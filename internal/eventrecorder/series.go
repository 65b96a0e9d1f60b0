package eventrecorder

import (
	"container/list"
	"sync"
	"time"
)

// seriesEntry is all that is kept of a written Event: where it is, how often it occurred and
// when last. Never the Event itself.
type seriesEntry struct {
	key       [16]byte
	namespace string
	name      string
	count     int32
	last      time.Time
}

// seriesCache is a least-recently-used map of repeat keys to their Event, bounded in entries
// and in age, safe for the writer's parallel workers (its lock is never held during a request).
type seriesCache struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	order  *list.List // front: most recently used
	byKey  map[[16]byte]*list.Element
}

func newSeriesCache(maxEntries int, window time.Duration) *seriesCache {
	return &seriesCache{max: maxEntries, window: window, order: list.New(), byKey: make(map[[16]byte]*list.Element, maxEntries)}
}

// repeat counts one more occurrence, at at, of the Event of key and returns its entry, if that
// Event occurred less than the window before at.
func (c *seriesCache) repeat(key [16]byte, at time.Time) (seriesEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return seriesEntry{}, false
	}
	e := el.Value.(*seriesEntry)
	if at.Sub(e.last) >= c.window {
		c.order.Remove(el)
		delete(c.byKey, key)
		return seriesEntry{}, false
	}
	c.order.MoveToFront(el)
	e.count++
	e.last = at
	return *e, true
}

// put records a newly created Event, evicting expired entries and then the least recently
// used ones beyond the bound.
func (c *seriesCache) put(key [16]byte, namespace, name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(key)
	c.byKey[key] = c.order.PushFront(&seriesEntry{key: key, namespace: namespace, name: name, count: 1, last: at})
	for el := c.order.Back(); el != nil; el = c.order.Back() {
		e := el.Value.(*seriesEntry)
		if c.order.Len() <= c.max && at.Sub(e.last) < c.window {
			break
		}
		c.order.Remove(el)
		delete(c.byKey, e.key)
	}
}

func (c *seriesCache) remove(key [16]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(key)
}

func (c *seriesCache) removeLocked(key [16]byte) {
	if el, ok := c.byKey[key]; ok {
		c.order.Remove(el)
		delete(c.byKey, key)
	}
}

func (c *seriesCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
