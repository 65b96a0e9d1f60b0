package validation

import (
	"reflect"
	"testing"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/test/builders"
)

// The stored object of an update is defaulted on a partial copy: the result must be what
// defaulting a deep copy gives, and the stored object must stay exactly as decoded.
func TestDefaultedCopiesLeaveStoredAlone(t *testing.T) {
	undefaultedService := func() *rayv1.RayService {
		svc := builders.RayService("svc", "ns").Incremental(40, 10, 30, "istio").Obj()
		svc.Spec.UpgradeStrategy.ClusterUpgradeOptions.MaxSurgePercent = nil
		svc.Spec.RayClusterDeletionDelaySeconds = nil
		svc.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams = nil
		for i := range svc.Spec.RayClusterSpec.WorkerGroupSpecs {
			g := &svc.Spec.RayClusterSpec.WorkerGroupSpecs[i]
			g.NumOfHosts, g.MinReplicas, g.MaxReplicas, g.Replicas, g.RayStartParams = 0, nil, nil, nil, nil
		}
		return svc
	}
	for name, svc := range map[string]*rayv1.RayService{
		"undefaulted incremental": undefaultedService(),
		"no strategy": func() *rayv1.RayService {
			s := undefaultedService()
			s.Spec.UpgradeStrategy = nil
			return s
		}(),
		"type only": func() *rayv1.RayService {
			s := undefaultedService()
			s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.NewClusterWithIncrementalUpgrade)}
			return s
		}(),
	} {
		before := svc.DeepCopy()
		want := svc.DeepCopy()
		defaulting.RayService(want)
		got := defaultedService(svc)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: defaultedService differs from defaulting a deep copy", name)
		}
		if !reflect.DeepEqual(before, svc) {
			t.Errorf("%s: defaultedService changed the stored object", name)
		}
		if len(svc.Spec.RayClusterSpec.WorkerGroupSpecs) == 0 {
			t.Fatalf("%s: test object has no worker groups", name)
		}
	}

	rc := builders.RayCluster("rc", "ns").Obj()
	rc.Spec.HeadGroupSpec.RayStartParams = nil
	for i := range rc.Spec.WorkerGroupSpecs {
		g := &rc.Spec.WorkerGroupSpecs[i]
		g.NumOfHosts, g.MinReplicas, g.MaxReplicas, g.Replicas, g.RayStartParams = 0, nil, nil, nil, nil
	}
	if len(rc.Spec.WorkerGroupSpecs) == 0 {
		t.Fatal("test cluster has no worker groups")
	}
	before := rc.DeepCopy()
	want := rc.DeepCopy()
	defaulting.RayCluster(want)
	if got := defaultedCluster(rc); !reflect.DeepEqual(want, got) {
		t.Error("defaultedCluster differs from defaulting a deep copy")
	}
	if !reflect.DeepEqual(before, rc) {
		t.Error("defaultedCluster changed the stored object")
	}
}
