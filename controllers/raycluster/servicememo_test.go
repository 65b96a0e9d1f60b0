package raycluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/test/builders"
)

// A pass over the cluster and head Service versions last found in agreement takes the Service
// as it is; a new version of either makes the pass compare them again.
func TestHeadServiceIsComparedAgainOnlyWhenEitherChanges(t *testing.T) {
	ctx := context.Background()
	rc := builders.RayCluster("demo", "ns").Obj()
	c := fake.NewClientBuilder().WithScheme(rayscheme.New()).WithObjects(rc).Build()
	if err := c.Get(ctx, key(rc), rc); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c}
	svcKey := types.NamespacedName{Namespace: "ns", Name: raypod.HeadServiceName(rc)}
	annotation := func() string {
		t.Helper()
		var svc corev1.Service
		if err := c.Get(ctx, svcKey, &svc); err != nil {
			t.Fatal(err)
		}
		return svc.Annotations["team"]
	}
	// pass runs the head Service step as a pass does, with the cluster's spec as wanted now and
	// the resourceVersion it was read at.
	pass := func(team, resourceVersion string) *pass {
		t.Helper()
		object := rc.DeepCopy()
		object.ResourceVersion = resourceVersion
		cluster := object.DeepCopy()
		cluster.Spec.HeadServiceAnnotations = map[string]string{"team": team}
		p := &pass{observation: observation{object: object, cluster: cluster}}
		if err := r.reconcileHeadService(ctx, p); err != nil {
			t.Fatal(err)
		}
		if p.headSvc == nil {
			t.Fatal("the pass has no head Service")
		}
		return p
	}

	pass("a", "1") // creates it
	pass("a", "1") // finds it as wanted: remembered
	if got := annotation(); got != "a" {
		t.Fatalf("annotation %q, want a", got)
	}
	pass("b", "1") // the same versions: not compared (a real cluster's spec cannot change without a new version)
	if got := annotation(); got != "a" {
		t.Errorf("the same versions were compared again: annotation %q", got)
	}
	pass("b", "2") // a new version of the cluster
	if got := annotation(); got != "b" {
		t.Errorf("a new cluster version was not compared: annotation %q, want b", got)
	}
	pass("b", "2") // remembered again
	var svc corev1.Service
	if err := c.Get(ctx, svcKey, &svc); err != nil {
		t.Fatal(err)
	}
	svc.Annotations["team"] = "edited"
	if err := c.Update(ctx, &svc); err != nil {
		t.Fatal(err)
	}
	pass("b", "2") // a new version of the Service
	if got := annotation(); got != "b" {
		t.Errorf("an edited Service was not compared: annotation %q, want b", got)
	}
	r.headServices.forget(key(rc))
	if len(r.headServices.m) != 0 {
		t.Errorf("forget left %v", r.headServices.m)
	}
}

func TestServiceMemoNeedsBothVersions(t *testing.T) {
	var m serviceMemo
	k := client.ObjectKey{Namespace: "ns", Name: "c"}
	if m.agree(k, "1", "2") {
		t.Error("agrees before anything was remembered")
	}
	m.remember(k, "1", "2")
	for _, tt := range []struct {
		cluster, service string
		want             bool
	}{{"1", "2", true}, {"1", "3", false}, {"4", "2", false}, {"", "", false}} {
		if got := m.agree(k, tt.cluster, tt.service); got != tt.want {
			t.Errorf("agree(%q, %q) = %v, want %v", tt.cluster, tt.service, got, tt.want)
		}
	}
	m.remember(k, "", "")
	if m.agree(k, "", "") {
		t.Error("objects without versions agree")
	}
}
