package statuspatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
)

type clusterStatus struct{}

func (clusterStatus) Status(rc *rayv1.RayCluster) *rayv1.RayClusterStatus { return &rc.Status }
func (clusterStatus) Copy(s *rayv1.RayClusterStatus) *rayv1.RayClusterStatus {
	return s.DeepCopy()
}

// waiting is a test policy's pending change: since when it waits.
type waiting struct{ since time.Time }

type testWriter = Writer[*rayv1.RayCluster, rayv1.RayClusterStatus, waiting, clusterStatus]

func cluster(name, uid string, ready int32) *rayv1.RayCluster {
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
		Status:     rayv1.RayClusterStatus{ReadyWorkerReplicas: ready},
	}
}

func keyOf(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: name}
}

func newAPI(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(rayscheme.New()).WithStatusSubresource(&rayv1.RayCluster{}).WithObjects(objs...).Build()
}

// snapshot is a cache that shows what it was given, whatever the API server holds since.
type snapshot struct {
	mu   sync.Mutex
	objs map[types.NamespacedName]*rayv1.RayCluster
}

func (s *snapshot) show(rc *rayv1.RayCluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.objs == nil {
		s.objs = map[types.NamespacedName]*rayv1.RayCluster{}
	}
	s.objs[client.ObjectKeyFromObject(rc)] = rc.DeepCopy()
}

func (s *snapshot) Get(_ context.Context, k client.ObjectKey, o client.Object, _ ...client.GetOption) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rc, ok := s.objs[k]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: "ray.io", Resource: "rayclusters"}, k.Name)
	}
	*o.(*rayv1.RayCluster) = *rc.DeepCopy()
	return nil
}

func (s *snapshot) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

// counting counts the reads of a reader.
type counting struct {
	client.Reader
	gets atomic.Int32
}

func (c *counting) Get(ctx context.Context, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, k, o, opts...)
}

func live(t *testing.T, api client.Reader, name string) *rayv1.RayCluster {
	t.Helper()
	rc := &rayv1.RayCluster{}
	if err := api.Get(context.Background(), keyOf(name), rc); err != nil {
		t.Fatal(err)
	}
	return rc
}

// waitFor is a policy under which every change waits window from when it was first seen.
func waitFor(window time.Duration) Policy[rayv1.RayClusterStatus, waiting] {
	return func(_, _ rayv1.RayClusterStatus, p waiting, now time.Time) Decision[waiting] {
		if p.since.IsZero() {
			p.since = now
		}
		if waited := now.Sub(p.since); waited < window {
			return Decision[waiting]{After: window - waited, Pending: p}
		}
		return Decision[waiting]{Write: true}
	}
}

func TestGetCachedReadsItsOwnWrites(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	api := newAPI(cluster("c", "u1", 1))
	cache := &snapshot{}
	cache.show(live(t, api, "c"))
	var w testWriter
	read := func() *rayv1.RayCluster {
		t.Helper()
		rc := &rayv1.RayCluster{}
		if err := w.GetCached(ctx, cache, keyOf("c"), rc); err != nil {
			t.Fatal(err)
		}
		return rc
	}

	if got := read().Status.ReadyWorkerReplicas; got != 1 {
		t.Fatalf("nothing written: %d ready, want the cache's 1", got)
	}
	rc := read()
	res, err := w.Write(ctx, api, rc, rayv1.RayClusterStatus{ReadyWorkerReplicas: 2}, t0, nil)
	if err != nil || !res.Written {
		t.Fatalf("Write = %+v, %v; want written", res, err)
	}
	if stored := live(t, api, "c"); stored.Status.ReadyWorkerReplicas != 2 || rc.ResourceVersion != stored.ResourceVersion || rc.Status.ReadyWorkerReplicas != 2 {
		t.Fatalf("stored %d ready at version %s; obj holds %d at %s", stored.Status.ReadyWorkerReplicas, stored.ResourceVersion, rc.Status.ReadyWorkerReplicas, rc.ResourceVersion)
	}
	if got := read(); got.Status.ReadyWorkerReplicas != 2 || got.ResourceVersion == rc.ResourceVersion {
		t.Errorf("cache behind the write: %d ready at version %s, want the written 2 on the cached object", got.Status.ReadyWorkerReplicas, got.ResourceVersion)
	}

	// The memory is a copy: changing what was written or read changes nothing remembered.
	rc.Status.ReadyWorkerReplicas = 7
	got := read()
	got.Status.ReadyWorkerReplicas = 8
	if got := read().Status.ReadyWorkerReplicas; got != 2 {
		t.Errorf("the remembered status changed with the caller's copies: %d ready", got)
	}

	cache.show(live(t, api, "c"))
	if got := read().Status.ReadyWorkerReplicas; got != 2 || len(w.entries) != 0 {
		t.Errorf("the cache caught up: %d ready, the writer still holds %v", got, w.entries)
	}

	if _, err := w.Write(ctx, api, read(), rayv1.RayClusterStatus{ReadyWorkerReplicas: 3}, t0, nil); err != nil {
		t.Fatal(err)
	}
	cache.show(cluster("c", "u2", 1))
	if got := read().Status.ReadyWorkerReplicas; got != 1 || len(w.entries) != 0 {
		t.Errorf("another object of the same name: %d ready, want its own 1 and nothing remembered (%v)", got, w.entries)
	}
}

func TestGetReadsTheAPIWhileTheCacheIsBehind(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	store := newAPI(cluster("c", "u1", 1))
	api := &counting{Reader: store}
	cache := &snapshot{}
	cache.show(live(t, store, "c"))
	var w testWriter
	read := func() *rayv1.RayCluster {
		t.Helper()
		rc := &rayv1.RayCluster{}
		if err := w.Get(ctx, cache, api, keyOf("c"), rc); err != nil {
			t.Fatal(err)
		}
		return rc
	}

	read()
	if n := api.gets.Load(); n != 0 {
		t.Fatalf("nothing written: %d API reads", n)
	}
	if _, err := w.Write(ctx, store, read(), rayv1.RayClusterStatus{ReadyWorkerReplicas: 2}, t0, nil); err != nil {
		t.Fatal(err)
	}
	// Someone else changes the object since: the API read gives it whole.
	stored := live(t, store, "c")
	stored.Labels = map[string]string{"edited": "yes"}
	if err := store.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.Status.ReadyWorkerReplicas != 2 || got.Labels["edited"] != "yes" || api.gets.Load() != 1 {
		t.Fatalf("cache behind: %d ready, labels %v after %d API reads; want the API's object", got.Status.ReadyWorkerReplicas, got.Labels, api.gets.Load())
	}
	read()
	if n := api.gets.Load(); n != 2 {
		t.Fatalf("the cache still behind: %d API reads, want another", n)
	}
	cache.show(live(t, store, "c"))
	if got := read(); got.Labels["edited"] != "yes" || api.gets.Load() != 2 || len(w.entries) != 0 {
		t.Errorf("the cache caught up: %d API reads (want 2), writer holds %v", api.gets.Load(), w.entries)
	}

	// The object deleted: the API read says so, and the writer forgets it.
	if _, err := w.Write(ctx, store, read(), rayv1.RayClusterStatus{ReadyWorkerReplicas: 3}, t0, nil); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, live(t, store, "c")); err != nil {
		t.Fatal(err)
	}
	if err := w.Get(ctx, cache, api, keyOf("c"), &rayv1.RayCluster{}); !apierrors.IsNotFound(err) || len(w.entries) != 0 {
		t.Errorf("Get of a deleted object = %v, writer holds %v; want NotFound and nothing", err, w.entries)
	}
}

func TestWrite(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const window = 5 * time.Second
	refused := func(err error) interceptor.Funcs {
		return interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return err
		}}
	}
	for _, tt := range []struct {
		name      string
		status    int32 // ready workers computed (the stored object has 1)
		pending   waiting
		at        time.Time
		policy    Policy[rayv1.RayClusterStatus, waiting]
		intercept *interceptor.Funcs
		want      Result
		wantErr   func(error) bool
		stored    int32 // ready workers stored afterwards
		// left is the change left waiting (nil: the writer remembers nothing)
		left *waiting
	}{
		{name: "unchanged: nothing written", status: 1, at: t0, policy: waitFor(window), stored: 1},
		{name: "unchanged drops a waiting change", status: 1, pending: waiting{t0}, at: t0.Add(time.Second), policy: waitFor(window), stored: 1},
		{name: "no policy: written at once", status: 2, at: t0, want: Result{Written: true}, stored: 2},
		{name: "the policy waits", status: 2, at: t0, policy: waitFor(window), want: Result{Wait: window}, stored: 1, left: &waiting{t0}},
		{name: "the waiting change is handed back", status: 2, pending: waiting{t0}, at: t0.Add(2 * time.Second), policy: waitFor(window),
			want: Result{Wait: 3 * time.Second}, stored: 1, left: &waiting{t0}},
		{name: "written when its wait is over", status: 2, pending: waiting{t0}, at: t0.Add(window), policy: waitFor(window), want: Result{Written: true}, stored: 2},
		{name: "a refused write keeps the waiting change", status: 2, pending: waiting{t0}, at: t0.Add(window), policy: waitFor(window),
			intercept: ptrTo(refused(apierrors.NewServiceUnavailable("etcd is down"))), wantErr: apierrors.IsServiceUnavailable, stored: 1, left: &waiting{t0}},
		{name: "an object gone is forgotten", status: 2, pending: waiting{t0}, at: t0.Add(window), policy: waitFor(window),
			intercept: ptrTo(refused(apierrors.NewNotFound(schema.GroupResource{Group: "ray.io", Resource: "rayclusters"}, "c"))), wantErr: apierrors.IsNotFound, stored: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := newAPI(cluster("c", "u1", 1))
			c := store
			if tt.intercept != nil {
				c = interceptor.NewClient(store.(client.WithWatch), *tt.intercept)
			}
			var w testWriter
			if tt.pending != (waiting{}) {
				w.record(keyOf("c"), "u1", nil, "", tt.pending, t0)
			}
			obj := live(t, store, "c")
			got, err := w.Write(ctx, c, obj, rayv1.RayClusterStatus{ReadyWorkerReplicas: tt.status}, tt.at, tt.policy)
			if tt.wantErr != nil && !tt.wantErr(err) || tt.wantErr == nil && err != nil {
				t.Fatalf("Write error %v", err)
			}
			if got != tt.want {
				t.Errorf("Write = %+v, want %+v", got, tt.want)
			}
			if n := live(t, store, "c").Status.ReadyWorkerReplicas; n != tt.stored {
				t.Errorf("stored %d ready, want %d", n, tt.stored)
			}
			if n := obj.Status.ReadyWorkerReplicas; got.Written != (n == tt.status && n != 1) {
				t.Errorf("obj holds %d ready after Write = %+v", n, got)
			}
			e, ok := w.entries[keyOf("c")]
			switch {
			case tt.left == nil && ok && e.pending != (waiting{}):
				t.Errorf("left %+v waiting, want nothing", e.pending)
			case tt.left != nil && e.pending != *tt.left:
				t.Errorf("left %+v waiting, want %+v", e.pending, *tt.left)
			case got.Written && (e.written == nil || e.version != obj.ResourceVersion):
				t.Errorf("the write is not remembered: %+v", e)
			case tt.wantErr != nil && apierrors.IsNotFound(err) && ok:
				t.Errorf("an object gone is remembered: %+v", e)
			}
			if p := w.pending(keyOf("c"), "u2"); p != (waiting{}) {
				t.Errorf("another object of the same name finds %+v waiting", p)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// A written status is forgotten keepWritten after its write, by the sweep of a later Write of
// any object; a waiting change is kept.
func TestWrittenStatusesAreForgottenAfterAWhile(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var w testWriter
	written := &rayv1.RayClusterStatus{ReadyWorkerReplicas: 1}
	w.record(keyOf("a"), "ua", written, "1", waiting{}, t0)
	w.record(keyOf("b"), "ub", written, "1", waiting{t0}, t0)
	w.record(keyOf("c"), "uc", written, "1", waiting{}, t0.Add(keepWritten-time.Second))
	if len(w.entries) != 3 {
		t.Fatalf("the writer holds %d objects, want 3", len(w.entries))
	}
	// The last record swept at keepWritten-1s; the sweeps run at most every sweepEvery.
	w.record(keyOf("c"), "uc", nil, "", waiting{}, t0.Add(keepWritten-time.Second+sweepEvery/2))
	if _, ok := w.entries[keyOf("a")]; !ok {
		t.Fatalf("a sweep ran %v after the last one", sweepEvery/2)
	}
	w.record(keyOf("c"), "uc", nil, "", waiting{}, t0.Add(keepWritten-time.Second+sweepEvery))
	if _, ok := w.entries[keyOf("a")]; ok {
		t.Errorf("a's write is %v old and still kept", keepWritten)
	}
	if e := w.entries[keyOf("b")]; e.written != nil || e.pending != (waiting{t0}) {
		t.Errorf("b: %+v; want the write forgotten and the waiting change kept", e)
	}
	if e := w.entries[keyOf("c")]; e.written == nil {
		t.Errorf("c's write is younger than %v and was forgotten", keepWritten)
	}
	w.Forget(keyOf("b"))
	w.Forget(keyOf("c"))
	if len(w.entries) != 0 {
		t.Errorf("Forget left %v", w.entries)
	}
}

// Reconciles of different objects run at once (go test -race).
func TestConcurrentObjects(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const objects, passes = 8, 40
	var objs []client.Object
	for i := range objects {
		objs = append(objs, cluster(fmt.Sprintf("c%d", i), fmt.Sprintf("u%d", i), 0))
	}
	store := newAPI(objs...)
	cache := &snapshot{}
	for i := range objects {
		cache.show(live(t, store, fmt.Sprintf("c%d", i)))
	}
	var w testWriter
	var wg sync.WaitGroup
	errs := make(chan error, objects)
	for i := range objects {
		wg.Go(func() {
			key := keyOf(fmt.Sprintf("c%d", i))
			for pass := range passes {
				now := t0.Add(time.Duration(pass) * 3 * time.Second)
				rc := &rayv1.RayCluster{}
				get := w.GetCached(ctx, cache, key, rc)
				if i%2 == 1 {
					get = w.Get(ctx, cache, store, key, rc)
				}
				if get != nil {
					errs <- get
					return
				}
				if _, err := w.Write(ctx, store, rc, rayv1.RayClusterStatus{ReadyWorkerReplicas: int32(pass / 4)}, now, waitFor(5*time.Second)); err != nil {
					errs <- err
					return
				}
				if pass%10 == 9 {
					cache.show(live(t, store, key.Name))
				}
			}
			w.Forget(key)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(w.entries) != 0 {
		t.Errorf("every object forgotten, the writer holds %d", len(w.entries))
	}
}
