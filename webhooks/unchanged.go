package webhooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// unchangedUpdate reports whether req is an UPDATE whose object has exactly the stored
// object's spec and metadata, byte for byte: a no-op update, or one that only touches status
// through the main resource (the API server keeps the stored status there). GitOps tools
// re-applying an unchanged manifest, and clients that update a whole object they did not
// change, send many of these.
//
// The validating webhooks admit such an update without decoding either object. Validation
// compares old and new (internal/validation/ratchet.go): an error counts only where the
// update changed something, and the rules that compare old and new themselves (pod bounds,
// feature gates, immutable fields, upgrade actions) refuse only a change; with nothing
// changed in spec or metadata, full validation has nothing to refuse. FuzzUnchangedUpdate
// checks it under the strictest settings for the objects validation sees: those the
// mutating webhook has defaulted.
//
// Both members are read by a scan of the top-level object (rawscan.go); anything the scan
// cannot read with certainty — a missing member, a key written with escapes, a key given
// twice — answers false, and the request takes the full path.
func unchangedUpdate(req admission.Request) bool {
	_, _, ok := unchangedMembers(req)
	return ok
}

// unchangedMembers are the spec and metadata of an unchanged update (ok false otherwise).
func unchangedMembers(req admission.Request) (spec, meta []byte, ok bool) {
	if req.Operation != admissionv1.Update {
		return nil, nil, false
	}
	spec, meta, ok = specAndMetadata(req.Object.Raw)
	if !ok {
		return nil, nil, false
	}
	oldSpec, oldMeta, ok := specAndMetadata(req.OldObject.Raw)
	if !ok || !bytes.Equal(spec, oldSpec) || !bytes.Equal(meta, oldMeta) {
		return nil, nil, false
	}
	return spec, meta, true
}

// unchangedKey is a digest of the spec and metadata of an unchanged update, for the
// mutating webhook's clean set.
func unchangedKey(req admission.Request) (key [sha256.Size]byte, ok bool) {
	spec, meta, ok := unchangedMembers(req)
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

// cleanSet holds digests of the spec and metadata of unchanged updates that the mutating
// webhook decoded and defaulting left exactly as they were. The same bytes default the same
// way (defaulting reads nothing else: not status, not the cluster), so the next unchanged
// update with those bytes needs no patch either and is admitted without decoding; the first
// one of every object version still takes the full path, so an object stored undefaulted
// (by an older raygate, or while the webhook was off) is still defaulted. The set is
// bounded: when full it starts over, which only costs a decode per object.
type cleanSet struct {
	mu   sync.Mutex
	keys map[[sha256.Size]byte]struct{}
}

const cleanSetMax = 8192

func (c *cleanSet) has(key [sha256.Size]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.keys[key]
	return ok
}

func (c *cleanSet) add(key [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil || len(c.keys) >= cleanSetMax {
		c.keys = make(map[[sha256.Size]byte]struct{}, 64)
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
