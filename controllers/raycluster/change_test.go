package raycluster

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/raypod"
)

// ownedBy makes rc the controller of o.
func ownedBy[T metav1.Object](o T, rc *rayv1.RayCluster) T {
	o.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))})
	return o
}

// planNetworkPolicies creates the missing policies, corrects changed ones, reports foreign
// ones, and then deletes, by name, those the cluster controls and no longer asks for.
func TestPlanNetworkPolicies(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) { rc.Spec.NetworkPolicy = &rayv1.NetworkPolicyConfig{} })
	desired := desiredNetworkPolicies(rc, "raygate-system")
	if len(desired) < 2 {
		t.Fatalf("want a head and a worker policy, got %d", len(desired))
	}
	head, worker := desired[0], desired[1]
	stored := func(np *networkingv1.NetworkPolicy, mutate ...func(*networkingv1.NetworkPolicy)) networkingv1.NetworkPolicy {
		out := np.DeepCopy()
		out.ResourceVersion, out.UID = "3", types.UID("np-"+out.Name)
		for _, m := range mutate {
			m(out)
		}
		return *out
	}
	gone := func(name string) *networkingv1.NetworkPolicy {
		return ownedBy(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rc.Namespace}}, rc)
	}
	foreign := func(np *networkingv1.NetworkPolicy) { np.OwnerReferences = nil }
	edited := func(np *networkingv1.NetworkPolicy) { np.Spec.Ingress = nil }
	for _, tt := range []struct {
		name   string
		listed []networkingv1.NetworkPolicy
		want   []string
	}{
		{"none yet", nil, []string{"create " + head.Name, "create " + worker.Name}},
		{"as wanted", []networkingv1.NetworkPolicy{stored(head), stored(worker)}, nil},
		{"one edited, one foreign", []networkingv1.NetworkPolicy{stored(head, edited), stored(worker, foreign)},
			[]string{"update " + head.Name, "report " + worker.Name}},
		{"no longer wanted: deleted by name, after the others; someone else's left alone",
			[]networkingv1.NetworkPolicy{*gone("demo-workers-z"), stored(head), *gone("demo-workers-a"), stored(worker, func(np *networkingv1.NetworkPolicy) {
				np.Name = "demo-workers-old"
				foreign(np)
			})},
			[]string{"create " + worker.Name, "delete demo-workers-a", "delete demo-workers-z"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range planNetworkPolicies(rc, desired, tt.listed) {
				got = append(got, c.op.String()+" "+c.object.GetName())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("changes %q, want %q", got, tt.want)
			}
		})
	}
}

// A cert-manager object is created when missing, put back when its spec or labels differ
// (its events about the object raygate wants), reported when foreign.
func TestDecideTLSObject(t *testing.T) {
	rc := cluster()
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "demo-head", "namespace": rc.Namespace, "labels": map[string]any{rayv1.ClusterLabelKey: rc.Name}},
		"spec":     map[string]any{"secretName": "demo-head-tls", "ipAddresses": []any{"127.0.0.5"}},
	}}
	existing := ownedBy(desired.DeepCopy(), rc)
	existing.SetResourceVersion("9")
	moved := existing.DeepCopy()
	moved.Object["spec"] = map[string]any{"secretName": "demo-head-tls", "ipAddresses": []any{"127.0.0.6"}}

	if c := decideTLSObject(desired, nil, false); c.op != ownerref.Create || c.object != desired {
		t.Errorf("missing: %+v", c)
	}
	if c := decideTLSObject(desired, existing, true); c.op != ownerref.Keep {
		t.Errorf("as wanted: %+v", c)
	}
	if c := decideTLSObject(desired, existing, false); c.op != ownerref.Report || c.object != existing {
		t.Errorf("foreign: %+v", c)
	}
	c := decideTLSObject(desired, moved, true)
	if c.op != ownerref.Update || c.about != desired || c.object.GetResourceVersion() != "9" || !raypod.TLSSpecEqual(c.object.(*unstructured.Unstructured), desired) {
		t.Errorf("changed: %+v", c)
	}
}

func TestDecideAuthSecretAndUsableClaim(t *testing.T) {
	rc := cluster()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}
	for _, tt := range []struct {
		name       string
		existing   *corev1.Secret
		controlled bool
		want       ownerref.Op
	}{
		{"missing: created", nil, false, ownerref.Create},
		{"the cluster's: kept, never changed", secret, true, ownerref.Keep},
		{"someone else's: reported", secret, false, ownerref.Report},
	} {
		if got := decideAuthSecret(tt.existing, tt.controlled); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}

	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "demo-gcs"}}
	if !usableClaim(rc, claim) {
		t.Error("a claim nothing controls (kept by Retain, or made beforehand) is used")
	}
	if !usableClaim(rc, ownedBy(claim.DeepCopy(), rc)) {
		t.Error("the cluster's own claim is used")
	}
	other := claim.DeepCopy()
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "StatefulSet", Name: "db", UID: "x", Controller: ptrTo(true)}}
	if usableClaim(rc, other) {
		t.Error("a claim another object controls is not used")
	}
}

// applyChange says what it did in one event about the object, in the kind's words, and
// notes a conflict; a create that finds the name taken by a foreign object is a conflict.
func TestApplyChange(t *testing.T) {
	ctx := context.Background()
	rc := cluster()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	taken := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "demo-taken", Namespace: rc.Namespace}}
	old := ownedBy(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "demo-old", Namespace: rc.Namespace, UID: "old-uid"}}, rc)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(taken, old).Build()
	r := &Reconciler{Client: c}
	p := &pass{observation: observation{object: rc, cluster: rc}}
	created := ownedBy(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "demo-head", Namespace: rc.Namespace}}, rc)
	for _, ch := range []change{
		{op: ownerref.Create, object: created},
		{op: ownerref.Delete, object: old, why: "the cluster no longer asks for it"},
		{op: ownerref.Create, object: &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: taken.Name, Namespace: taken.Namespace}}},
		{op: ownerref.Keep},
	} {
		if _, err := r.applyChange(ctx, p, networkPolicyKind, ch); err != nil {
			t.Fatal(err)
		}
	}
	var notes []string
	for _, e := range p.events {
		notes = append(notes, e.kind+" "+e.reason+": "+e.note)
		if e.related == nil {
			t.Errorf("event %q is about no object", e.note)
		}
	}
	want := []string{
		"Normal CreatedNetworkPolicy: Created NetworkPolicy demo-head",
		"Normal DeletedNetworkPolicy: Deleted NetworkPolicy demo-old: the cluster no longer asks for it",
	}
	if !slices.Equal(notes, want) {
		t.Errorf("events %q, want %q", notes, want)
	}
	if len(p.conflicts) != 1 || p.conflicts[0].Name != "demo-taken" {
		t.Errorf("conflicts %v", p.conflicts)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), &networkingv1.NetworkPolicy{}); err == nil {
		t.Error("the policy the cluster no longer asks for is still there")
	}
}

func TestCreatedTogether(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
	cases := []struct {
		objs []client.Object
		want string
	}{
		{[]client.Object{&corev1.ServiceAccount{ObjectMeta: meta("c")}, &rbacv1.Role{ObjectMeta: meta("c")}, &rbacv1.RoleBinding{ObjectMeta: meta("c")}}, "ServiceAccount, Role and RoleBinding c"},
		{[]client.Object{&rbacv1.Role{ObjectMeta: meta("c")}, &rbacv1.RoleBinding{ObjectMeta: meta("c")}}, "Role and RoleBinding c"},
		{[]client.Object{&rbacv1.RoleBinding{ObjectMeta: meta("c")}}, "RoleBinding c"},
		{[]client.Object{&corev1.ServiceAccount{ObjectMeta: meta("sa")}, &rbacv1.Role{ObjectMeta: meta("c")}}, "ServiceAccount sa and Role c"},
	}
	for _, c := range cases {
		if got := createdTogether(c.objs); got != c.want {
			t.Errorf("createdTogether = %q, want %q", got, c.want)
		}
	}
}
