package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestResolvePath(t *testing.T) {
	doc := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"ray.io/ft-enabled": "true"}},
		"spec": map[string]any{
			"serveConfigV2":    "applications: []",
			"workerGroupSpecs": []any{map[string]any{"replicas": int64(1)}, map[string]any{"replicas": nil}},
		},
	}
	cases := []struct {
		path  string
		want  any
		found bool
	}{
		{"spec.workerGroupSpecs[0].replicas", int64(1), true},
		{"spec.workerGroupSpecs[1].replicas", nil, true},
		{"spec.workerGroupSpecs[2].replicas", nil, false},
		{"spec.workerGroupSpecs[x].replicas", nil, false},
		{"spec.workerGroupSpecs.replicas", nil, false},
		{"metadata.annotations[ray.io/ft-enabled]", "true", true},
		{"metadata.labels[team]", nil, false},
		{"spec.serveConfigV2.applications[0].name", "applications: []", true},
		{"spec.workerGroupSpecs[0", nil, false},
		{"spec", doc["spec"], true},
	}
	for _, tc := range cases {
		got, found := resolvePath(doc, tc.path)
		if found != tc.found || !cmp.Equal(got, tc.want) {
			t.Errorf("resolvePath(%s) = %v, %v; want %v, %v", tc.path, got, found, tc.want, tc.found)
		}
	}
}

// storedInvalid is a RayCluster stored while the webhook was off (or under older rules),
// with one mistake of each kind.
func storedInvalid(rc *rayv1.RayCluster) {
	rc.Spec.AuthOptions = &rayv1.AuthOptions{EnableK8sTokenAuth: ptr.To(true)} // without mode token
	rc.Spec.HeadGroupSpec.HeadService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "x.example"}}
	rc.Spec.HeadGroupSpec.Resources = map[string]string{"CPU": "0"}
	g := &rc.Spec.WorkerGroupSpecs[0]
	g.GroupName = "Bad_Name"
	g.MinReplicas, g.MaxReplicas, g.Replicas = ptr.To[int32](5), ptr.To[int32](2), ptr.To[int32](2)
}

func TestRatchetingOfARayCluster(t *testing.T) {
	edit := func(mutate func(*rayv1.RayCluster)) *rayv1.RayCluster {
		return cluster(func(rc *rayv1.RayCluster) { storedInvalid(rc); mutate(rc) })
	}
	cases := map[string]struct {
		new  *rayv1.RayCluster
		want field.ErrorList
	}{
		"metadata only: labels, annotations, finalizers, owner references": {new: edit(func(rc *rayv1.RayCluster) {
			rc.Labels = map[string]string{"team": "ml"}
			rc.Annotations = map[string]string{"note": "imported from KubeRay"}
			rc.Finalizers = []string{"example.com/keep"}
			rc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u"}}
		})},
		"the autoscaler patches replicas and workersToDelete": {new: edit(func(rc *rayv1.RayCluster) {
			rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4)
			rc.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{"rc-bad-name-worker-x7k2p"}
		})},
		"an unrelated change (the image)": {new: edit(func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
		})},
		"changing an invalid field": {
			new:  edit(func(rc *rayv1.RayCluster) { rc.Spec.AuthOptions.Mode = rayv1.AuthModeDisabled }),
			want: field.ErrorList{field.Forbidden(p("spec.authOptions.enableK8sTokenAuth"), "")},
		},
		"a rule that reads two fields counts when either changed": {
			new: edit(func(rc *rayv1.RayCluster) {
				rc.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](6)
				rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "0"}
			}),
			want: field.ErrorList{
				field.Forbidden(p("spec.headGroupSpec.resources"), ""),
				field.Invalid(p("spec.workerGroupSpecs[0].maxReplicas"), nil, ""),
			},
		},
		"a new worker group is checked in full": {
			new: edit(func(rc *rayv1.RayCluster) {
				rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, rc.Spec.WorkerGroupSpecs[0])
			}),
			want: field.ErrorList{
				field.Invalid(p("spec.workerGroupSpecs[1].groupName"), nil, ""),
				field.Duplicate(p("spec.workerGroupSpecs[1].groupName"), nil),
				field.Invalid(p("spec.workerGroupSpecs[1].maxReplicas"), nil, ""),
			},
		},
		"fixing one mistake leaves the others stored": {new: edit(func(rc *rayv1.RayCluster) { rc.Spec.AuthOptions = nil })},
	}
	old := cluster(storedInvalid)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, _ := RayClusterUpdate(old, tc.new, gateOff)
			diffErrors(t, tc.want, errs)
		})
	}
}

func TestRatchetingOfARayService(t *testing.T) {
	dupRoutes := "applications:\n  - {name: a, import_path: m:a, route_prefix: /x}\n  - {name: b, import_path: m:b, route_prefix: /x}\n"
	stored := func(s *rayv1.RayService) {
		s.Spec.ServeConfigV2 = dupRoutes
		s.Spec.RayClusterSpec.WorkerGroupSpecs = append(s.Spec.RayClusterSpec.WorkerGroupSpecs, s.Spec.RayClusterSpec.WorkerGroupSpecs[0])
		s.Spec.RayClusterSpec.WorkerGroupSpecs[1].GroupName = "other"
	}
	old := service(stored)
	cases := map[string]struct {
		mutate func(*rayv1.RayService)
		want   field.ErrorList
	}{
		"an image change with the serve config unchanged": {mutate: func(s *rayv1.RayService) {
			s.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
		}},
		"any change to the serve config re-checks all of it": {
			mutate: func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = dupRoutes + "proxy_location: EveryNode\n" },
			want:   field.ErrorList{field.Duplicate(p("spec.serveConfigV2.applications[1].route_prefix"), nil)},
		},
		"a duplicate made by renaming the other group counts": {
			mutate: func(s *rayv1.RayService) { s.Spec.RayClusterSpec.WorkerGroupSpecs[1].GroupName = "workers" },
			want:   field.ErrorList{field.Duplicate(p("spec.rayClusterConfig.workerGroupSpecs[1].groupName"), nil)},
		},
		"deleting always passes": {mutate: func(s *rayv1.RayService) {
			s.DeletionTimestamp = &metav1.Time{}
			s.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, _ := RayServiceUpdate(old, service(func(s *rayv1.RayService) { stored(s); tc.mutate(s) }), gateOff)
			diffErrors(t, tc.want, errs)
		})
	}
}

// TestErrorPathsResolve: the ratchet compares values at error paths, so every rule must
// report at a path that exists in the object's JSON form (or, for a missing field, whose
// parent does), or its errors would be compared as "missing in both" and never count.
func TestErrorPathsResolve(t *testing.T) {
	objects := []runtime.Object{
		cluster(storedInvalid),
		cluster(func(rc *rayv1.RayCluster) {
			rc.Annotations = map[string]string{rayv1.FTEnabledKey: "true"}
			rc.Spec.EnableInTreeAutoscaling = ptr.To(false)
			rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"labels": "a=b", "redis-username": "ray"}
			rc.Spec.HeadGroupSpec.Labels = map[string]string{"bad key!": "v"}
			rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: AutoscalerV2EnvVar, Value: "1"}, {Name: "RAY_REDIS_ADDRESS", Value: "r:6379"}}
			g := &rc.Spec.WorkerGroupSpecs[0]
			g.IdleTimeoutSeconds, g.NumOfHosts, g.Replicas = ptr.To[int32](5), -1, ptr.To[int32](-1)
			g.Template.Spec.Containers[0].Image = ""
			g.Priority = ptr.To[int32](3)
			rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{IdleTimeoutSeconds: ptr.To[int32](-1),
				Env: []corev1.EnvVar{{Name: "KUBERAY_GEN_AUTOSCALER_START_CMD"}}}
		}),
		incremental(func(s *rayv1.RayService) {
			s.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(false)
			s.Spec.RayClusterSpec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{}
			s.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](-1)
			s.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{ExternalIPs: []string{"192.0.2.1"}}}
			o := opts(s)
			o.MaxSurgePercent, o.StepSizePercent, o.IntervalSeconds, o.GatewayClassName = ptr.To[int32](0), ptr.To[int32](0), ptr.To[int32](0), "Bad_Class"
			s.Spec.ServeConfigV2 = "applications:\n  - {name: a, route_prefix: x}\n"
		}),
	}
	for _, obj := range objects {
		var errs field.ErrorList
		switch o := obj.(type) {
		case *rayv1.RayCluster:
			errs, _ = RayCluster(o, gateOn)
		case *rayv1.RayService:
			errs, _ = RayService(o, gateOn)
		}
		if len(errs) < 5 {
			t.Fatalf("test setup: want many errors, got %v", errs)
		}
		doc, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range errs {
			path := e.Field
			if e.Type == field.ErrorTypeRequired {
				path = path[:max(lastSegment(path), 0)]
			}
			if _, found := resolvePath(doc, path); !found {
				t.Errorf("%s does not resolve in the object (error: %v)", path, e)
			}
		}
	}
}

// lastSegment is where the last segment of a field path starts.
func lastSegment(path string) int {
	for i := len(path) - 1; i > 0; i-- {
		if path[i] == '.' || path[i] == '[' {
			return i
		}
	}
	return -1
}
