package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestStoredRayCluster(t *testing.T) {
	cases := map[string]struct {
		mutate func(*rayv1.RayCluster)
		want   field.ErrorList
	}{
		"create/update-only rules are skipped": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "0", "labels": "a=b"}
			rc.Spec.HeadGroupSpec.Resources = map[string]string{"CPU": "0"}
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV2)}
			rc.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			rc.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true)
		}},
		"rules a controller depends on remain": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.TLSOptions = &rayv1.TLSOptions{}
				rc.Spec.WorkerGroupSpecs[0].GroupName = ""
				rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers = nil
				rc.Spec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](-1)
				rc.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](0)
				rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](20000)
				rc.Spec.WorkerGroupSpecs[0].Labels = map[string]string{"bad key!": "v"}
			},
			// A stored TLS cluster keeps being served with the gate off: dropping TLS silently
			// would open the cluster.
			want: field.ErrorList{
				field.Required(p("spec.workerGroupSpecs[0].groupName"), ""),
				field.Required(p("spec.workerGroupSpecs[0].template.spec.containers"), ""),
				field.Invalid(p("spec.workerGroupSpecs[0].labels"), nil, ""),
				field.Invalid(p("spec.workerGroupSpecs[0].maxReplicas"), nil, ""),
				// Not the pod bounds: the controller caps a stored cluster (CapPods).
			},
		},
		"a RayService's cluster with its own strategy": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Labels = map[string]string{rayv1.OriginatedFromCRDLabelKey: rayv1.RayServiceKind}
				rc.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
			},
			want: field.ErrorList{field.Forbidden(p("spec.upgradeStrategy.type"), "")},
		},
		"being deleted": {mutate: func(rc *rayv1.RayCluster) {
			rc.DeletionTimestamp = &metav1.Time{}
			rc.Spec.TLSOptions = &rayv1.TLSOptions{}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			diffErrors(t, tc.want, Validator{}.StoredRayCluster(cluster(tc.mutate)))
		})
	}
}

func TestStoredRayService(t *testing.T) {
	cases := map[string]struct {
		svc  *rayv1.RayService
		want field.ErrorList
	}{
		// The controller runs it as NewCluster and says so; it is not frozen.
		"incremental with its gate off": {svc: incremental(nil)},
		"rayClusterConfig.upgradeStrategy is create/update-only": {svc: service(func(s *rayv1.RayService) {
			s.Spec.RayClusterSpec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{}
		})},
		"an incremental upgrade that could not make progress": {
			svc: incremental(func(s *rayv1.RayService) {
				opts(s).StepSizePercent = ptr.To[int32](0)
				s.Spec.RayClusterSpec.EnableInTreeAutoscaling = nil
			}),
			want: field.ErrorList{
				field.Required(p("spec.rayClusterConfig.enableInTreeAutoscaling"), ""),
				field.Invalid(p("spec.upgradeStrategy.clusterUpgradeOptions.stepSizePercent"), nil, ""),
			},
		},
		"serve config, head Service name and serve Service": {
			svc: service(func(s *rayv1.RayService) {
				s.Spec.ServeConfigV2 = "applications:\n  - {name: a}\n"
				s.Spec.RayClusterSpec.HeadGroupSpec.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}}
				s.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}}
			}),
			want: field.ErrorList{
				field.Forbidden(p("spec.rayClusterConfig.headGroupSpec.headService.metadata.name"), ""),
				field.Forbidden(p("spec.serveService.spec.type"), ""),
				field.Required(p("spec.serveConfigV2.applications[0].import_path"), ""),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			diffErrors(t, tc.want, Validator{Gates: gateOff}.StoredRayService(tc.svc))
		})
	}
}

func TestCapPods(t *testing.T) {
	group := func(name string, replicas, minReplicas, hosts int32) rayv1.WorkerGroupSpec {
		return rayv1.WorkerGroupSpec{GroupName: name, Replicas: ptr.To(replicas), MinReplicas: ptr.To(minReplicas), NumOfHosts: hosts}
	}
	cases := map[string]struct {
		groups    []rayv1.WorkerGroupSpec
		limits    Limits
		want      [][2]int32 // replicas, minReplicas per group
		wantNotes int
	}{
		"within the bounds": {
			groups: []rayv1.WorkerGroupSpec{group("a", 3, 1, 1), group("b", 2, 2, 4)},
			want:   [][2]int32{{3, 1}, {2, 2}},
		},
		"a group over its bound, in whole replicas of numOfHosts": {
			groups: []rayv1.WorkerGroupSpec{group("tpu", 100, 0, 64)}, limits: Limits{MaxPodsPerGroup: 5000, MaxPodsPerCluster: 10000},
			want: [][2]int32{{78, 0}}, wantNotes: 1,
		},
		"int32 max replicas and minReplicas": {
			groups: []rayv1.WorkerGroupSpec{group("a", 2147483647, 2147483647, 1)}, limits: Limits{MaxPodsPerGroup: 10, MaxPodsPerCluster: 100},
			want: [][2]int32{{10, 10}}, wantNotes: 1,
		},
		"the cluster bound is shared by the groups in order, the head first": {
			groups: []rayv1.WorkerGroupSpec{group("a", 6, 0, 1), group("b", 6, 0, 1), group("c", 6, 0, 1)},
			limits: Limits{MaxPodsPerGroup: 100, MaxPodsPerCluster: 10},
			want:   [][2]int32{{6, 0}, {3, 0}, {0, 0}}, wantNotes: 2,
		},
		"negative counts are left to validation": {
			groups: []rayv1.WorkerGroupSpec{group("a", -5, -1, 1)},
			want:   [][2]int32{{-5, -1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := &rayv1.RayClusterSpec{WorkerGroupSpecs: tc.groups}
			notes := CapPods(spec, tc.limits)
			for i, w := range tc.want {
				g := spec.WorkerGroupSpecs[i]
				if *g.Replicas != w[0] || *g.MinReplicas != w[1] {
					t.Errorf("group %s: replicas %d, minReplicas %d; want %d, %d", g.GroupName, *g.Replicas, *g.MinReplicas, w[0], w[1])
				}
			}
			if len(notes) != tc.wantNotes {
				t.Errorf("notes = %q, want %d", notes, tc.wantNotes)
			}
			if ClusterPods(spec) > int64(tc.limits.orDefault().MaxPodsPerCluster) {
				t.Errorf("still %d pods", ClusterPods(spec))
			}
		})
	}
}
