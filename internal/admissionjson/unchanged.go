package admissionjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// Unchanged reports whether the object of an update has exactly the stored object's spec and
// metadata, byte for byte: a no-op update, or one that only touches status through the main
// resource (the API server keeps the stored status there). GitOps tools re-applying an
// unchanged manifest, and clients that update a whole object they did not change, send many
// of these.
//
// Both members are read by a scan of the top-level objects (scan.go), nothing is decoded;
// anything the scan cannot read with certainty — a missing member, a key written with
// escapes, a key given twice — answers false.
func Unchanged(obj, old []byte) bool {
	_, _, ok := unchangedMembers(obj, old)
	return ok
}

// unchangedMembers are the spec and metadata of an unchanged update (ok false otherwise).
func unchangedMembers(obj, old []byte) (spec, meta []byte, ok bool) {
	spec, meta, ok = specAndMetadata(obj)
	if !ok {
		return nil, nil, false
	}
	oldSpec, oldMeta, ok := specAndMetadata(old)
	if !ok || !bytes.Equal(spec, oldSpec) || !bytes.Equal(meta, oldMeta) {
		return nil, nil, false
	}
	return spec, meta, true
}

// Digest is a digest of the spec and metadata of an object.
type Digest = [sha256.Size]byte

// UnchangedDigest is a digest of the spec and metadata of an unchanged update (ok false when
// the update is not Unchanged), for a CleanSet.
func UnchangedDigest(obj, old []byte) (key Digest, ok bool) {
	spec, meta, ok := unchangedMembers(obj, old)
	if !ok {
		return key, false
	}
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(spec)))
	h.Write(n[:])
	h.Write(spec)
	h.Write(meta)
	h.Sum(key[:0])
	return key, true
}

// CleanSet holds digests of the spec and metadata of unchanged updates that the mutating
// webhook decoded and defaulting left exactly as they were. The same bytes default the same
// way (defaulting reads nothing else: not status, not the cluster), so the next unchanged
// update with those bytes needs no patch either and is admitted without decoding; the first
// one of every object version still takes the full path, so an object stored undefaulted
// (by an older raygate, or while the webhook was off) is still defaulted. The set is
// bounded: when full it starts over, which only costs a decode per object. The zero value is
// an empty set.
type CleanSet struct {
	mu   sync.Mutex
	keys map[Digest]struct{}
}

const cleanSetMax = 8192

// Has reports whether the set holds key.
func (c *CleanSet) Has(key Digest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.keys[key]
	return ok
}

// Add puts key in the set, starting over when the set is full.
func (c *CleanSet) Add(key Digest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil || len(c.keys) >= cleanSetMax {
		c.keys = make(map[Digest]struct{}, 64)
	}
	c.keys[key] = struct{}{}
}

// specAndMetadata returns the raw values of the top-level spec and metadata members of a
// JSON object. ok is false unless both are present exactly once and every top-level key is
// a plain string (no escapes, so none can decode to "spec" or "metadata" unseen).
func specAndMetadata(raw []byte) (spec, meta []byte, ok bool) {
	vals, end, ok := uniqueMembers(raw, "spec", "metadata")
	if !ok || vals[0] == nil || vals[1] == nil || skipSpace(raw, end) != len(raw) {
		return nil, nil, false
	}
	return vals[0], vals[1], true
}
