package owned

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned/ownerref"
)

// owner is the object a pass reconciles in these tests.
var owner = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo", UID: "owner-uid"}}

var ownerKey = types.NamespacedName{Namespace: "ns", Name: "demo"}

func ownerRef(uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "demo", UID: uid, Controller: new(true)}}
}

// service is a Service called name: the owner's (controlled by uid "owner-uid"), someone
// else's or nobody's; labelled for the cache or not.
func service(name string, controller types.UID, labelled bool, mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "x"}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "x"}},
	}
	if controller != "" {
		s.OwnerReferences = ownerRef(controller)
	}
	if labelled {
		s.Labels[rayv1.KubernetesCreatedByLabelKey] = rayv1.ComponentName
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// desired is the Service the owner wants under name.
func desired(name string, mutate ...func(*corev1.Service)) *corev1.Service {
	s := service(name, "owner-uid", true, mutate...)
	s.UID, s.Spec.Selector = "", map[string]string{"app": "wanted"}
	return s
}

// mergeSelector sets the wanted selector; a Service whose type differs is recreated.
func mergeSelector(existing, desired *corev1.Service) (*corev1.Service, bool) {
	if existing.Spec.Type != desired.Spec.Type {
		return nil, true
	}
	if existing.Spec.Selector["app"] == desired.Spec.Selector["app"] && ownerref.HasEntries(existing.Labels, desired.Labels) {
		return nil, false
	}
	u := existing.DeepCopy()
	u.Spec.Selector = desired.Spec.Selector
	for k, v := range desired.Labels {
		u.Labels[k] = v
	}
	return u, false
}

// labelledCache reads Services the way the manager's cache does: only those raygate
// labelled exist.
type labelledCache struct{ client.Client }

func (c labelledCache) Get(ctx context.Context, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, k, obj, opts...); err != nil {
		return err
	}
	if !ownerref.Labelled(obj) {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, k.Name)
	}
	return nil
}

// world is a fake API server that honours UID preconditions, counting the writes.
type world struct {
	api    client.Client
	writes []string
	c      Client
}

func newWorld(names *TakenNames, objects ...client.Object) *world {
	w := &world{}
	w.api = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objects...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.writes = append(w.writes, "create "+obj.GetName())
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.writes = append(w.writes, "update "+obj.GetName())
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.writes = append(w.writes, "delete "+obj.GetName())
			o := client.DeleteOptions{}
			o.ApplyOptions(opts)
			if o.Preconditions == nil || o.Preconditions.UID == nil {
				return errors.New("delete without a UID precondition")
			}
			stored := &corev1.Service{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
				return err
			}
			if stored.UID != *o.Preconditions.UID {
				return apierrors.NewConflict(schema.GroupResource{Resource: "services"}, obj.GetName(), fmt.Errorf("UID in precondition: %s, UID in object meta: %s", *o.Preconditions.UID, stored.UID))
			}
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	w.c = Client{Writer: w.api, Cache: labelledCache{w.api}, API: w.api, Names: names, Owner: ownerKey, OwnerKind: "ConfigMap"}
	return w
}

// ensure is one pass over one Service: read, decide, carry out.
func (w *world) ensure(ctx context.Context, want *corev1.Service, name string) (ownerref.Change[*corev1.Service], Applied, error) {
	existing, err := Read(ctx, w.c, types.NamespacedName{Namespace: "ns", Name: name}, &corev1.Service{})
	if err != nil {
		return ownerref.Change[*corev1.Service]{}, Applied{}, err
	}
	ch := ownerref.Decide(want, existing, existing != nil && ownerref.ControlledBy(existing, owner), mergeSelector)
	var obj client.Object
	if ch.Op != ownerref.Keep {
		obj = ch.Object
	}
	res, err := w.c.Apply(ctx, ownerref.Change[client.Object]{Op: ch.Op, Object: obj})
	return ch, res, err
}

func (w *world) stored(t *testing.T, name string) *corev1.Service {
	t.Helper()
	s := &corev1.Service{}
	if err := w.api.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return s
}

func TestOnePass(t *testing.T) {
	headless := func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }
	for _, tc := range []struct {
		name     string
		objects  []client.Object
		want     *corev1.Service // nil: not wanted
		op       ownerref.Op
		writes   []string
		done     bool
		conflict string
		check    func(t *testing.T, w *world)
	}{{
		name: "missing: created", want: desired("a"),
		op: ownerref.Create, writes: []string{"create a"}, done: true,
		check: func(t *testing.T, w *world) {
			if s := w.stored(t, "a"); s == nil || !ownerref.ControlledBy(s, owner) {
				t.Errorf("created %+v", s)
			}
		},
	}, {
		name: "taken by an unlabelled foreign object: reported, untouched, remembered", objects: []client.Object{service("a", "", false)}, want: desired("a"),
		op: ownerref.Create, writes: []string{"create a"},
		conflict: "Service a exists and is not controlled by this ConfigMap (it has no controller)",
		check: func(t *testing.T, w *world) {
			if s := w.stored(t, "a"); s.Spec.Selector["app"] != "x" || s.ResourceVersion != "999" {
				t.Errorf("the foreign Service was written: %+v", s)
			}
			if !w.c.Remembered(&corev1.Service{}, types.NamespacedName{Namespace: "ns", Name: "a"}) {
				t.Error("a name found taken is remembered")
			}
		},
	}, {
		name: "taken by the owner's own, made without the label: relabelled in place", objects: []client.Object{service("a", "owner-uid", false)}, want: desired("a"),
		op: ownerref.Create, writes: []string{"create a", "update a"},
		check: func(t *testing.T, w *world) {
			if s := w.stored(t, "a"); !ownerref.Labelled(s) || s.UID != "uid-a" {
				t.Errorf("not relabelled in place: %+v", s)
			}
			if w.c.Names.Len() != 0 {
				t.Error("the owner's own object is not remembered")
			}
		},
	}, {
		name: "the owner's, differs: updated", objects: []client.Object{service("a", "owner-uid", true)}, want: desired("a"),
		op: ownerref.Update, writes: []string{"update a"}, done: true,
		check: func(t *testing.T, w *world) {
			if s := w.stored(t, "a"); s.Spec.Selector["app"] != "wanted" || s.UID != "uid-a" {
				t.Errorf("not updated: %+v", s)
			}
		},
	}, {
		name: "the owner's, as wanted: nothing written", objects: []client.Object{service("a", "owner-uid", true, func(s *corev1.Service) { s.Spec.Selector["app"] = "wanted" })}, want: desired("a"),
		op: ownerref.Keep,
	}, {
		name: "a labelled foreign object in the cache: reported, untouched", objects: []client.Object{service("a", "someone", true)}, want: desired("a"),
		op: ownerref.Report, conflict: "Service a exists and is not controlled by this ConfigMap (it is controlled by ConfigMap demo)",
	}, {
		name: "the owner's, a field that cannot change: deleted by UID, to be recreated", objects: []client.Object{service("a", "owner-uid", true, headless)}, want: desired("a"),
		op: ownerref.Recreate, writes: []string{"delete a"}, done: true,
		check: func(t *testing.T, w *world) {
			if s := w.stored(t, "a"); s != nil {
				t.Errorf("not deleted: %+v", s)
			}
		},
	}, {
		name: "the owner's, no longer wanted: deleted by UID", objects: []client.Object{service("a", "owner-uid", true)},
		op: ownerref.Delete, writes: []string{"delete a"}, done: true,
	}, {
		name: "foreign, no longer wanted: left alone", objects: []client.Object{service("a", "someone", true)},
		op: ownerref.Keep,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(&TakenNames{}, tc.objects...)
			ch, res, err := w.ensure(ctx, tc.want, "a")
			if err != nil {
				t.Fatal(err)
			}
			if ch.Op != tc.op || res.Done != tc.done {
				t.Errorf("op %v done %v, want %v %v", ch.Op, res.Done, tc.op, tc.done)
			}
			if fmt.Sprint(w.writes) != fmt.Sprint(tc.writes) {
				t.Errorf("writes %q, want %q", w.writes, tc.writes)
			}
			switch {
			case tc.conflict == "" && res.Conflict != nil:
				t.Errorf("conflict %q", res.Conflict)
			case tc.conflict != "" && (res.Conflict == nil || res.Conflict.String() != tc.conflict):
				t.Errorf("conflict %v, want %q", res.Conflict, tc.conflict)
			}
			if tc.check != nil {
				tc.check(t, w)
			}
		})
	}
}

// A name found taken is read from the API server on the next passes (the cache cannot see
// the object), without another create, until the object is gone; then it is created.
func TestTakenNamesAreReadThroughUntilGone(t *testing.T) {
	ctx := context.Background()
	w := newWorld(&TakenNames{}, service("a", "", false))
	for pass := range 3 {
		w.writes = nil
		ch, res, err := w.ensure(ctx, desired("a"), "a")
		if err != nil {
			t.Fatal(err)
		}
		wantOp, wantWrites := ownerref.Report, "[]"
		if pass == 0 {
			wantOp, wantWrites = ownerref.Create, "[create a]"
		}
		if ch.Op != wantOp || res.Conflict == nil || fmt.Sprint(w.writes) != wantWrites {
			t.Fatalf("pass %d: op %v conflict %v writes %q", pass, ch.Op, res.Conflict, w.writes)
		}
	}
	if err := w.c.Delete(ctx, w.stored(t, "a")); err != nil { // its owner deletes it
		t.Fatal(err)
	}
	w.writes = nil
	ch, res, err := w.ensure(ctx, desired("a"), "a")
	if err != nil || ch.Op != ownerref.Create || !res.Done || res.Conflict != nil {
		t.Fatalf("once gone: op %v %+v %v", ch.Op, res, err)
	}
	if w.c.Names.Len() != 0 {
		t.Error("a name whose object is gone is forgotten")
	}
}

// Forget drops an owner's names (it is gone): nothing is read through for them any more.
func TestForget(t *testing.T) {
	ctx := context.Background()
	names := &TakenNames{}
	w := newWorld(names, service("a", "", false))
	if _, _, err := w.ensure(ctx, desired("a"), "a"); err != nil {
		t.Fatal(err)
	}
	other := w.c
	other.Owner = types.NamespacedName{Namespace: "ns", Name: "other"}
	other.Remember(service("b", "", false))
	if names.Len() != 2 {
		t.Fatalf("%d names remembered, want 2", names.Len())
	}
	names.Forget(ownerKey)
	if names.Len() != 1 || !other.Remembered(&corev1.Service{}, types.NamespacedName{Namespace: "ns", Name: "b"}) {
		t.Fatal("Forget drops one owner's names only")
	}
	found, err := w.c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "a"}, &corev1.Service{})
	if err != nil || found {
		t.Errorf("a forgotten name is read from the cache only: found %v, %v", found, err)
	}
}

// A Delete never removes an object made under the name since it was read; one already gone
// is not an error.
func TestDeleteByUID(t *testing.T) {
	ctx := context.Background()
	w := newWorld(nil, service("a", "owner-uid", true))
	read := service("a", "owner-uid", true)
	read.UID = "an-older-one"
	if err := w.c.Delete(ctx, read); !apierrors.IsConflict(err) {
		t.Errorf("deleting by an old UID: %v, want a conflict", err)
	}
	if w.stored(t, "a") == nil {
		t.Fatal("the newer object was deleted")
	}
	if err := w.c.Delete(ctx, service("a", "owner-uid", true)); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Delete(ctx, service("a", "owner-uid", true)); err != nil {
		t.Errorf("deleting what is gone: %v", err)
	}
}

// Kinds the manager does not cache are read from the API server, and an object of the
// owner's found under the name is not relabelled (raygate may have no right to update it).
func TestUncached(t *testing.T) {
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", OwnerReferences: ownerRef("owner-uid")}}
	w := newWorld(&TakenNames{}, secret)
	c := w.c.Uncached()
	c.Cache = nil
	got := &corev1.Secret{}
	if found, err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "s"}, got); !found || err != nil {
		t.Fatalf("found %v, %v", found, err)
	}
	want := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", OwnerReferences: ownerRef("owner-uid")}}
	res, err := c.Create(ctx, want)
	if err != nil || res.Existing == nil || res.Conflict != nil {
		t.Fatalf("%+v %v", res, err)
	}
	if fmt.Sprint(w.writes) != "[create s]" {
		t.Errorf("writes %q: an uncached object is not relabelled", w.writes)
	}
}

// Names are remembered by kind: an unstructured Certificate and Issuer of one name are two.
func TestNamesByKind(t *testing.T) {
	c := Client{Names: &TakenNames{}, Owner: ownerKey}
	obj := func(kind string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: kind})
		u.SetNamespace("ns")
		u.SetName("demo-ca")
		return u
	}
	c.Remember(obj("Certificate"))
	key := types.NamespacedName{Namespace: "ns", Name: "demo-ca"}
	if !c.Remembered(obj("Certificate"), key) || c.Remembered(obj("Issuer"), key) || c.Remembered(&corev1.Secret{}, key) {
		t.Error("a name is remembered for its kind only")
	}
	if n := testing.AllocsPerRun(100, func() { c.Remembered(&corev1.Service{}, key) }); n > 1 {
		t.Errorf("looking a name up allocates %v times", n)
	}
}
