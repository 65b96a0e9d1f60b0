package validation

import (
	"crypto/sha256"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/raygate/raygate/internal/sharedtable"
)

// The serve config is the costliest part of validating a RayService: parsing a large one costs
// more than all the rest of a review (docs/benchmarks.md). Its verdict depends on nothing but
// the string (validateServeConfig reads no gate, limit or policy), and the same string is
// validated again and again: every update that changes the image or scales a group, every
// re-apply by a GitOps tool, the old and the new object of an update, the controllers. So the
// verdict is remembered by the SHA-256 of the string (and of its namespace), in a cache
// bounded in entries and in bytes. A tenant cannot make two configs share a digest, so a
// cached verdict is always the one a fresh parse would give (TestServeConfigCacheSameVerdict
// checks it).

const (
	// serveConfigCacheEntries bounds the verdicts kept.
	serveConfigCacheEntries = 256
	// serveConfigCacheEntryBytes bounds the size of one kept verdict (its error texts): a
	// verdict past it is computed every time. Entries × this bounds the cache's bytes.
	serveConfigCacheEntryBytes = 16 << 10
)

// serveConfigPath is where the serve config sits in a RayService; the cached verdicts'
// errors carry paths under it.
var serveConfigPath = specPath.Child("serveConfigV2")

// serveConfigVerdicts is the process-wide cache; the webhook's handlers and the
// controllers share it.
var serveConfigVerdicts = newServeConfigCache(serveConfigCacheEntries)

// serveConfigErrors validates spec.serveConfigV2 of a RayService in namespace, through the
// cache. Verdicts are kept per namespace: how fast a review is cannot tell a tenant that
// another namespace holds the same serve config.
func serveConfigErrors(namespace, config string) field.ErrorList {
	if len(config) > MaxServeConfigBytes {
		// Refused before parsing; not worth hashing.
		return validateServeConfig(config, serveConfigPath)
	}
	key := sharedtable.KeyIn(namespace, []byte(config))
	if errs, ok := serveConfigVerdicts.get(key); ok {
		return errs
	}
	errs := validateServeConfig(config, serveConfigPath)
	serveConfigVerdicts.put(key, errs)
	return errs
}

// serveConfigCache is a fixed-size map from digest to verdict with CLOCK eviction (an
// entry read since the hand last passed it gets a second chance), safe for concurrent use.
type serveConfigCache struct {
	mu    sync.Mutex
	index map[[sha256.Size]byte]int
	slots []serveConfigSlot
	hand  int
}

type serveConfigSlot struct {
	key  [sha256.Size]byte
	errs field.ErrorList
	used bool // a verdict is held
	ref  bool // read since the hand last passed
}

func newServeConfigCache(n int) *serveConfigCache {
	return &serveConfigCache{index: make(map[[sha256.Size]byte]int, n), slots: make([]serveConfigSlot, n)}
}

// get returns a copy of the kept verdict, so a caller may change or key on its errors.
func (c *serveConfigCache) get(key [sha256.Size]byte) (field.ErrorList, bool) {
	c.mu.Lock()
	i, ok := c.index[key]
	var kept field.ErrorList
	if ok {
		c.slots[i].ref = true
		kept = c.slots[i].errs
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	// The kept errors are never changed after put, so they are copied outside the lock.
	return copyErrors(kept), true
}

// put keeps a verdict (a copy of it) unless it is too large.
func (c *serveConfigCache) put(key [sha256.Size]byte, errs field.ErrorList) {
	if errorsSize(errs) > serveConfigCacheEntryBytes {
		return
	}
	kept := copyErrors(errs)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.index[key]; ok {
		return
	}
	for c.slots[c.hand].used && c.slots[c.hand].ref {
		c.slots[c.hand].ref = false
		c.hand = (c.hand + 1) % len(c.slots)
	}
	s := &c.slots[c.hand]
	if s.used {
		delete(c.index, s.key)
	}
	*s = serveConfigSlot{key: key, errs: kept, used: true}
	c.index[key] = c.hand
	c.hand = (c.hand + 1) % len(c.slots)
}

// len is the number of verdicts kept.
func (c *serveConfigCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.index)
}

// copyErrors copies the list and each error (the ratchet keys on error pointers).
func copyErrors(errs field.ErrorList) field.ErrorList {
	if len(errs) == 0 {
		return nil
	}
	out := make(field.ErrorList, len(errs))
	copies := make([]field.Error, len(errs))
	for i, e := range errs {
		copies[i] = *e
		out[i] = &copies[i]
	}
	return out
}

// errorsSize estimates the bytes a verdict holds: its texts, and a fixed cost per error.
func errorsSize(errs field.ErrorList) int {
	n := 0
	for _, e := range errs {
		n += 128 + len(e.Field) + len(e.Detail)
		if s, ok := e.BadValue.(string); ok {
			n += len(s)
		}
	}
	return n
}
