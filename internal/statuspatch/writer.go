package statuspatch

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Access reaches the status of one kind of object. A controller gives it as a type without
// fields, so that a Writer needs no construction: its zero value is ready.
type Access[O client.Object, S any] interface {
	// Status points at obj's status.
	Status(obj O) *S
	// Copy is a deep copy of a status (the generated DeepCopy).
	Copy(s *S) *S
}

// Decision is what a Policy says of a computed status that differs from the stored one.
type Decision[P comparable] struct {
	// Write: write it now.
	Write bool
	// After, when not writing, is how soon to look again so that the waiting change is
	// written (0: nothing waits).
	After time.Duration
	// Pending is the change left waiting, handed back to the policy on the next pass
	// (the zero value: nothing waits).
	Pending P
}

// Policy decides whether a computed status that differs from the stored one is written now
// or waits. It is pure: the stored and the computed status, the change left waiting by the
// last pass (the zero value: none) and the time of the pass are all it knows.
type Policy[S any, P comparable] func(stored, computed S, pending P, now time.Time) Decision[P]

// Result is what Write did.
type Result struct {
	// Written: the status was written.
	Written bool
	// Wait, when a changed status was left waiting, is how soon to look again (0: nothing
	// waits).
	Wait time.Duration
}

// Writer writes the status of one kind of object and remembers, per object, the status it
// last wrote (for a while) and the change left waiting. See the package documentation for
// its contract. It is safe for concurrent reconciles of different objects; one object is
// reconciled by one worker at a time.
type Writer[O client.Object, S any, P comparable, A Access[O, S]] struct {
	mu        sync.Mutex
	entries   map[types.NamespacedName]entry[S, P]
	lastSweep time.Time
}

const (
	// keepWritten is how long a written status is remembered at most: after an object's last
	// write there may be no pass for hours, and a copy kept per object would grow with the
	// fleet. A cache that far behind is not expected; were it, a pass would compute from the
	// cache's status and at worst write the same status again.
	keepWritten = time.Minute
	// sweepEvery is how often Write looks for written statuses older than keepWritten.
	sweepEvery = 10 * time.Second
)

type entry[S any, P comparable] struct {
	uid types.UID
	// written is the status last written (nil: none remembered), version the
	// resourceVersion the cache shows once it has seen it, writtenAt when it was written.
	written   *S
	version   string
	writtenAt time.Time
	// pending is the change left waiting.
	pending P
}

func (e *entry[S, P]) empty() bool {
	var none P
	return e.written == nil && e.pending == none
}

// Get reads the object key into obj from the cache, or, when the cache has not yet seen the
// status last written, from the API server (api; nil: cache), so that a pass never computes
// from a status it already replaced. opts apply to the cache read. An object that is gone is
// forgotten.
func (w *Writer[O, S, P, A]) Get(ctx context.Context, cache, api client.Reader, key types.NamespacedName, obj O, opts ...client.GetOption) error {
	if err := w.getCached(ctx, cache, key, obj, opts); err != nil {
		return err
	}
	if _, behind := w.behind(key, obj, false); !behind {
		return nil
	}
	if api == nil {
		api = cache
	}
	if err := api.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			w.Forget(key)
		}
		return err
	}
	// Until the cache shows this version, the next pass reads the API server again.
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.entries[key]; ok {
		if e.uid != obj.GetUID() {
			delete(w.entries, key)
		} else {
			e.version = obj.GetResourceVersion()
			w.entries[key] = e
		}
	}
	return nil
}

// GetCached reads the object key into obj from the cache and never asks the API server: when
// the cache has not yet seen the status last written, that status replaces the cached one
// (the rest of obj is the cache's). opts apply to the cache read (with
// client.UnsafeDisableDeepCopy only obj's status field is replaced, never what it points to).
// An object that is gone is forgotten.
func (w *Writer[O, S, P, A]) GetCached(ctx context.Context, cache client.Reader, key types.NamespacedName, obj O, opts ...client.GetOption) error {
	if err := w.getCached(ctx, cache, key, obj, opts); err != nil {
		return err
	}
	if written, _ := w.behind(key, obj, true); written != nil {
		var a A
		*a.Status(obj) = *written
	}
	return nil
}

func (w *Writer[O, S, P, A]) getCached(ctx context.Context, cache client.Reader, key types.NamespacedName, obj O, opts []client.GetOption) error {
	err := cache.Get(ctx, key, obj, opts...)
	if apierrors.IsNotFound(err) {
		w.Forget(key)
	}
	return err
}

// behind says whether obj, read from the cache, may be behind the status last written: the
// cache has not yet shown that write, or it shows another object of the same name (one
// recreated since, or the one before it). In the first case it gives a copy of the written
// status when asked to. It forgets a written status once the cache shows it, and everything
// about another object of the same name.
func (w *Writer[O, S, P, A]) behind(key types.NamespacedName, obj O, copyWritten bool) (written *S, behind bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.entries[key]
	switch {
	case !ok:
		return nil, false
	case e.uid != obj.GetUID():
		delete(w.entries, key)
		return nil, e.written != nil
	case e.written == nil:
		return nil, false
	case e.version == obj.GetResourceVersion():
		e.written = nil
		w.put(key, e)
		return nil, false
	}
	if copyWritten {
		var a A
		written = a.Copy(e.written)
	}
	return written, true
}

// Write writes status as obj's status when it differs from obj's (semantically) and policy
// says now (nil: always); the write replaces the whole status without a resourceVersion
// precondition (Replace). A written status is set in obj with the write's resourceVersion and
// remembered for Get; a change policy leaves waiting is remembered for the next pass and
// Result.Wait says when to look again. A status equal to obj's clears a waiting change. On an
// error nothing is remembered anew (a change left waiting stays); an object that is gone is
// forgotten. now is the time of the pass.
func (w *Writer[O, S, P, A]) Write(ctx context.Context, c client.Client, obj O, status S, now time.Time, policy Policy[S, P]) (Result, error) {
	var a A
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	stored := a.Status(obj)
	var none P
	if equality.Semantic.DeepEqual(*stored, status) {
		w.record(key, obj.GetUID(), nil, "", none, now)
		return Result{}, nil
	}
	if policy != nil {
		d := policy(*stored, status, w.pending(key, obj.GetUID()), now)
		if !d.Write {
			w.record(key, obj.GetUID(), nil, "", d.Pending, now)
			return Result{Wait: d.After}, nil
		}
	}
	if err := Replace(ctx, c, obj, status); err != nil {
		if apierrors.IsNotFound(err) {
			w.Forget(key)
		}
		return Result{}, err
	}
	*stored = status
	w.record(key, obj.GetUID(), a.Copy(&status), obj.GetResourceVersion(), none, now)
	return Result{Written: true}, nil
}

// pending is the change left waiting for the object uid (the zero value: none).
func (w *Writer[O, S, P, A]) pending(key types.NamespacedName, uid types.UID) P {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.entries[key]; ok && e.uid == uid {
		return e.pending
	}
	var none P
	return none
}

// record remembers the outcome of a pass at now: the status written (nil: none) with its
// resourceVersion, and the change left waiting.
func (w *Writer[O, S, P, A]) record(key types.NamespacedName, uid types.UID, written *S, version string, pending P, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.entries == nil {
		w.entries = map[types.NamespacedName]entry[S, P]{}
	}
	e := w.entries[key]
	if e.uid != uid {
		e = entry[S, P]{uid: uid}
	}
	if written != nil {
		e.written, e.version, e.writtenAt = written, version, now
	}
	e.pending = pending
	w.put(key, e)
	if now.Sub(w.lastSweep) >= sweepEvery || now.Before(w.lastSweep) {
		w.sweep(now)
	}
}

// sweep forgets written statuses older than keepWritten; the caller holds mu.
func (w *Writer[O, S, P, A]) sweep(now time.Time) {
	w.lastSweep = now
	for k, e := range w.entries {
		if e.written != nil && now.Sub(e.writtenAt) >= keepWritten {
			e.written = nil
			w.put(k, e)
		}
	}
}

// put stores e, or drops it when it holds nothing; the caller holds mu.
func (w *Writer[O, S, P, A]) put(key types.NamespacedName, e entry[S, P]) {
	if e.empty() {
		delete(w.entries, key)
		return
	}
	w.entries[key] = e
}

// Forget drops everything remembered about the object key: call it when the object is
// deleted (Get, GetCached and Write do when they find it gone).
func (w *Writer[O, S, P, A]) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.entries, key)
}
