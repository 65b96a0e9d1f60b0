// Package sharedtable is a bounded table of decoded values that many readers share, keyed by
// the SHA-256 of what they were decoded from. The keys come from tenants' objects, so the
// table is bounded in entries and in bytes (the size of each value's source, which callers
// pass), and values larger than a per-entry limit are not kept. When the table is full an
// arbitrary entry goes: a later lookup of it misses and decodes again, costing time, never
// correctness.
//
// A value in the table is handed to every reader as is: whoever adds or gets one must never
// change it.
package sharedtable

import (
	"crypto/sha256"
	"sync"
)

// Key identifies a value by the SHA-256 of its source.
type Key = [sha256.Size]byte

// KeyIn is the key of content kept for one namespace: the digests of both, hashed together.
// A table shared by tenants that keys by KeyIn never hands one namespace what another added,
// so how fast a lookup is cannot tell a tenant what another namespace wrote.
func KeyIn(namespace string, content []byte) Key {
	var both [2 * sha256.Size]byte
	ns, c := sha256.Sum256([]byte(namespace)), sha256.Sum256(content)
	copy(both[:sha256.Size], ns[:])
	copy(both[sha256.Size:], c[:])
	return sha256.Sum256(both[:])
}

// Limits bound a Table.
type Limits struct {
	// Entries is the most values kept.
	Entries int
	// Bytes is the most source bytes the kept values stand for, in total.
	Bytes int
	// EntryBytes is the largest source a value may have to be kept.
	EntryBytes int
}

// Table is safe for concurrent use.
type Table[V any] struct {
	mu      sync.Mutex
	entries map[Key]entry[V]
	bytes   int
	limits  Limits
}

type entry[V any] struct {
	value V
	size  int
}

// New returns an empty table with the given limits.
func New[V any](limits Limits) *Table[V] {
	return &Table[V]{entries: map[Key]entry[V]{}, limits: limits}
}

// Get returns the value kept under k.
func (t *Table[V]) Get(k Key) (V, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[k]
	return e.value, ok
}

// Add keeps v under k, standing for size bytes of source, unless size is over the per-entry
// limit. It makes room by dropping arbitrary entries, and replaces a value already kept
// under k.
func (t *Table[V]) Add(k Key, v V, size int) {
	if size > t.limits.EntryBytes || size > t.limits.Bytes || t.limits.Entries < 1 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.entries[k]; ok {
		t.bytes -= old.size
		delete(t.entries, k)
	}
	for len(t.entries) >= t.limits.Entries || t.bytes+size > t.limits.Bytes {
		for victim, e := range t.entries {
			t.bytes -= e.size
			delete(t.entries, victim)
			break
		}
	}
	t.entries[k] = entry[V]{value: v, size: size}
	t.bytes += size
}

// Len is the number of values kept; Bytes the source bytes they stand for.
func (t *Table[V]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Bytes is the source bytes the kept values stand for.
func (t *Table[V]) Bytes() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bytes
}
