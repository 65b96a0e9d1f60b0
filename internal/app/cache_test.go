package app

import (
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/controllers/rayjob"
	"github.com/raygate/raygate/controllers/rayservice"
	"github.com/raygate/raygate/internal/batchscheduler"
	"github.com/raygate/raygate/internal/batchscheduler/volcano"
	"github.com/raygate/raygate/internal/cacheneeds"
	"github.com/raygate/raygate/internal/capabilities"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// testNeeds is what the controllers declare with the default options and caps.
func testNeeds(t *testing.T, caps capabilities.Capabilities, scheduler batchscheduler.Scheduler) cacheneeds.Needs {
	t.Helper()
	ctrls, err := newControllerConfigs(&rest.Config{Host: "https://127.0.0.1:6443"}, DefaultOptions(), caps, scheduler)
	if err != nil {
		t.Fatal(err)
	}
	needs, err := ctrls.cacheNeeds(rayscheme.New())
	if err != nil {
		t.Fatal(err)
	}
	return needs
}

var volcanoPodGroup = volcano.Scheduler{}.PodGroupKind()

// The capabilities the cache tests run with.
var capabilityCases = []struct {
	name      string
	caps      capabilities.Capabilities
	scheduler batchscheduler.Scheduler
}{
	{"bare", capabilities.Capabilities{}, nil},
	{"gateway API", capabilities.Capabilities{GatewayAPI: true}, nil},
	{"gateway API and GRPCRoute", capabilities.Capabilities{GatewayAPI: true, GRPCRoute: true}, nil},
	{"cert-manager", capabilities.Capabilities{CertManager: true}, nil},
	{"volcano without its CRD", capabilities.Capabilities{}, volcano.Scheduler{}},
	{"volcano", capabilities.Capabilities{PodGroup: volcanoPodGroup}, volcano.Scheduler{}},
	{"everything", capabilities.Capabilities{GatewayAPI: true, GRPCRoute: true, CertManager: true, PodGroup: volcanoPodGroup}, volcano.Scheduler{}},
}

// The kinds other tenants create in numbers are cached only when raygate labelled them, so
// the operator's memory does not grow with the cluster; and a kind the API server did not
// serve at start is never configured (the cache could not start its informer).
func TestCacheHoldsOnlyLabelledObjects(t *testing.T) {
	ours := labels.Set{rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName}
	theirs := labels.Set{"app": "other"}
	for _, tc := range capabilityCases {
		opts := cacheOptions(DefaultOptions(), testNeeds(t, tc.caps, tc.scheduler))
		kinds := []client.Object{&corev1.Service{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &networkingv1.Ingress{}, &networkingv1.NetworkPolicy{}, &batchv1.Job{}}
		if tc.caps.GatewayAPI {
			kinds = append(kinds, &gwv1.Gateway{}, &gwv1.HTTPRoute{})
		}
		if tc.caps.GRPCRoute {
			kinds = append(kinds, &gwv1.GRPCRoute{})
		}
		optional := map[schema.GroupVersionKind]bool{raypod.CertificateGVK: tc.caps.CertManager, raypod.IssuerGVK: tc.caps.CertManager,
			volcanoPodGroup: !tc.caps.PodGroup.Empty()}
		for gvk, want := range optional {
			if want {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(gvk)
				kinds = append(kinds, u)
			}
		}
		for _, k := range kinds {
			var by *labels.Selector
			for o, b := range opts.ByObject {
				if sameKind(o, k) {
					by = &b.Label
				}
			}
			if by == nil || *by == nil || !(*by).Matches(ours) || (*by).Matches(theirs) {
				t.Errorf("%s: %T %v is not cached by raygate's label only", tc.name, k, k.GetObjectKind().GroupVersionKind())
			}
		}
		if got, want := len(opts.ByObject), len(kinds)+4; got != want { // and pods, RayClusters, RayServices, RayJobs
			t.Errorf("%s: %d kinds configured, want %d: %v", tc.name, got, want, opts.ByObject)
		}
		for o := range opts.ByObject {
			switch o.(type) {
			case *gwv1.Gateway, *gwv1.HTTPRoute:
				if !tc.caps.GatewayAPI {
					t.Errorf("%s: %T configured in the cache without the Gateway API", tc.name, o)
				}
			case *gwv1.GRPCRoute:
				if !tc.caps.GRPCRoute {
					t.Errorf("%s: GRPCRoutes configured in the cache without the kind", tc.name)
				}
			}
		}
	}
}

// Every pod field a controller declares is kept, and nothing else: the cache's pod
// transform is the union of the controllers' declarations.
func TestCachedPodsKeepTheDeclaredFields(t *testing.T) {
	needs := testNeeds(t, capabilities.Capabilities{}, nil)
	if needs.Pods != raycluster.PodFields|rayservice.PodFields|rayjob.PodFields {
		t.Fatalf("pod fields %s, want the controllers' %s, %s and %s", needs.Pods, raycluster.PodFields, rayservice.PodFields, rayjob.PodFields)
	}
	opts := cacheOptions(DefaultOptions(), needs)
	var by *cache.ByObject
	for o, b := range opts.ByObject {
		if _, ok := o.(*corev1.Pod); ok {
			by = &b
		}
	}
	if by == nil || by.Transform == nil || !by.Label.Matches(labels.Set{rayv1.ClusterLabelKey: "c"}) || by.Label.Matches(labels.Set{"app": "web"}) {
		t.Fatalf("pods: %+v; want the Ray pods, slimmed", by)
	}
	pod := decodedWorkerPod(t, 0)
	want := cacheneeds.SlimPod(pod.DeepCopy(), needs.Pods)
	got, err := by.Transform(pod)
	if err != nil || !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("cached pod %+v (%v), want %+v", got, err, want)
	}
}

// slimPod is the cache's pod transform without shared strings.
func slimPod(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		return cacheneeds.SlimPod(pod, raycluster.PodFields|rayservice.PodFields), nil
	}
	return obj, nil
}

func sameKind(a, b client.Object) bool {
	ua, okA := a.(*unstructured.Unstructured)
	ub, okB := b.(*unstructured.Unstructured)
	if okA || okB {
		return okA && okB && ua.GroupVersionKind() == ub.GroupVersionKind()
	}
	return sameType(a, b)
}

func sameType(a, b client.Object) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }

// A cached pod keeps what the controllers read: readiness (phase and the Ready condition with
// its reason and message, which HeadPodReady mirrors) and container states; the kubelet's
// other conditions go (internal/cacheneeds checks each field on its own).
func TestSlimPodKeepsReadiness(t *testing.T) {
	cond := func(ty corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: ty, Status: s, Reason: "R-" + string(ty), Message: "m-" + string(ty)}
	}
	all := []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, corev1.ConditionTrue), cond(corev1.PodInitialized, corev1.ConditionTrue),
		cond(corev1.PodReady, corev1.ConditionFalse), cond(corev1.ContainersReady, corev1.ConditionFalse),
		cond(corev1.PodScheduled, corev1.ConditionTrue),
	}
	for _, tc := range []struct {
		name  string
		phase corev1.PodPhase
		conds []corev1.PodCondition
		want  []corev1.PodCondition
		ready bool
	}{
		{"kubelet's five, not ready", corev1.PodRunning, all, []corev1.PodCondition{cond(corev1.PodReady, corev1.ConditionFalse)}, false},
		{"ready", corev1.PodRunning, []corev1.PodCondition{cond(corev1.PodScheduled, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionTrue)},
			[]corev1.PodCondition{cond(corev1.PodReady, corev1.ConditionTrue)}, true},
		{"pending, scheduled only", corev1.PodPending, []corev1.PodCondition{cond(corev1.PodScheduled, corev1.ConditionTrue)}, nil, false},
		{"no conditions", corev1.PodPending, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray"}}, RestartPolicy: corev1.RestartPolicyAlways},
				Status: corev1.PodStatus{Phase: tc.phase, Conditions: tc.conds, PodIP: "127.0.0.2", HostIP: "127.0.0.1",
					ContainerStatuses: []corev1.ContainerStatus{{Name: "ray-head", Image: "rayproject/ray", RestartCount: 2,
						State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
			}
			before := rayspec.RunningAndReady(pod)
			out, err := slimPod(pod)
			if err != nil {
				t.Fatal(err)
			}
			slim := out.(*corev1.Pod)
			if !reflect.DeepEqual(slim.Status.Conditions, tc.want) {
				t.Errorf("conditions = %+v, want %+v", slim.Status.Conditions, tc.want)
			}
			if got := rayspec.RunningAndReady(slim); got != before || got != tc.ready {
				t.Errorf("RunningAndReady = %v after slimming, %v before, want %v", got, before, tc.ready)
			}
			cs := slim.Status.ContainerStatuses
			if slim.Status.PodIP != "127.0.0.2" || slim.Status.HostIP != "" || len(cs) != 1 || cs[0].RestartCount != 2 || cs[0].State.Running == nil || cs[0].Image != "" {
				t.Errorf("status = %+v", slim.Status)
			}
			if len(slim.Spec.Containers) != 1 || slim.Spec.Containers[0].Name != "ray-head" || slim.Spec.Containers[0].Image != "" || slim.Spec.RestartPolicy != corev1.RestartPolicyAlways {
				t.Errorf("spec = %+v", slim.Spec)
			}
		})
	}
}

// The RayService controller reads the head's Serve port from the cached pod: a custom one must
// survive slimming, or traffic checks would go to Ray's default port.
func TestSlimPodKeepsServePort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "ray-head", Ports: []corev1.ContainerPort{{Name: "gcs-server", ContainerPort: 6379}, {Name: rayspec.ServePortName, ContainerPort: 9000}}},
		{Name: "sidecar", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}},
	}}}
	out, err := slimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	c := out.(*corev1.Pod).Spec.Containers
	if got := rayspec.ContainerServePort(&c[rayv1.RayContainerIndex]); got != 9000 {
		t.Errorf("serve port after slimming = %d, want 9000", got)
	}
	if len(c[0].Ports) != 1 || len(c[1].Ports) != 0 {
		t.Errorf("ports kept: %+v, %+v; want only the serve port", c[0].Ports, c[1].Ports)
	}
}
