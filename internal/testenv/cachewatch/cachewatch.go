// Package cachewatch records which kinds a controller asks the manager's cache for when it
// is set up and its watches start: the informers of its For, Owns and Watches, its indexes,
// and any read. A controller's test compares them with the controller's declaration
// (internal/cacheneeds), so a kind watched without being declared (and so cached without
// the label scope that keeps other tenants' objects out) fails a test. No API server is
// needed: the manager runs on a cache that only records.
package cachewatch

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/raygate/raygate/internal/cacheneeds"
)

// Kinds builds a manager on a recording cache, runs setup (which registers a controller),
// starts the event sources of the controllers it registered, and returns every kind asked
// of the cache, sorted.
func Kinds(t testing.TB, scheme *runtime.Scheme, setup func(ctrl.Manager) error) []schema.GroupVersionKind {
	t.Helper()
	rec := &recorder{FakeInformers: &informertest.FakeInformers{Scheme: scheme}, scheme: scheme, kinds: map[schema.GroupVersionKind]bool{}}
	base, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{
		Scheme:                 scheme,
		NewCache:               func(*rest.Config, cache.Options) (cache.Cache, error) { return rec, nil },
		MapperProvider:         func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return meta.NewDefaultRESTMapper(nil), nil },
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Warmup starts a controller's event sources and returns once they have synced.
		Controller: config.Controller{SkipNameValidation: ptr.To(true), EnableWarmup: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	mgr := &capturing{Manager: base}
	if err := setup(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range mgr.added {
		if w, ok := r.(interface{ Warmup(context.Context) error }); ok {
			if err := w.Warmup(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	return rec.sorted()
}

// capturing keeps what setup adds to the manager, to start the controllers' sources.
type capturing struct {
	ctrl.Manager
	added []manager.Runnable
}

func (m *capturing) Add(r manager.Runnable) error {
	m.added = append(m.added, r)
	return nil
}

// recorder is a cache that hands out fake informers and records the kind of every request.
type recorder struct {
	*informertest.FakeInformers
	scheme *runtime.Scheme
	mu     sync.Mutex
	kinds  map[schema.GroupVersionKind]bool
	// fake serializes calls into FakeInformers, whose informer map is not safe for the
	// controllers' sources, which start concurrently.
	fake sync.Mutex
}

func (r *recorder) record(obj runtime.Object) {
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return
	}
	if _, isList := obj.(client.ObjectList); isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds[gvk] = true
}

func (r *recorder) sorted() []schema.GroupVersionKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]schema.GroupVersionKind, 0, len(r.kinds))
	for gvk := range r.kinds {
		out = append(out, gvk)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func (r *recorder) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	r.record(obj)
	r.fake.Lock()
	defer r.fake.Unlock()
	return r.FakeInformers.GetInformer(ctx, obj, opts...)
}

func (r *recorder) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	r.mu.Lock()
	r.kinds[gvk] = true
	r.mu.Unlock()
	r.fake.Lock()
	defer r.fake.Unlock()
	return r.FakeInformers.GetInformerForKind(ctx, gvk, opts...)
}

func (r *recorder) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	r.record(obj)
	r.fake.Lock()
	defer r.fake.Unlock()
	return r.FakeInformers.IndexField(ctx, obj, field, extract)
}

func (r *recorder) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.record(obj)
	r.fake.Lock()
	defer r.fake.Unlock()
	return r.FakeInformers.Get(ctx, key, obj, opts...)
}

func (r *recorder) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.record(list)
	r.fake.Lock()
	defer r.fake.Unlock()
	return r.FakeInformers.List(ctx, list, opts...)
}

// Guard is c refusing to read a kind needs does not declare, as the manager's cache client
// a controller reads through: a pass that reads an undeclared kind there fails instead of
// silently caching all of that kind. Writes pass through.
func Guard(c client.WithWatch, scheme *runtime.Scheme, needs cacheneeds.Needs) client.Client {
	check := func(obj runtime.Object) error {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return err
		}
		if _, isList := obj.(client.ObjectList); isList {
			gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
		}
		if !needs.Has(gvk, scheme) {
			return fmt.Errorf("%s is read through the cache but not declared in CacheNeeds", gvk)
		}
		return nil
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := check(obj); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := check(list); err != nil {
				return err
			}
			return c.List(ctx, list, opts...)
		},
	})
}
