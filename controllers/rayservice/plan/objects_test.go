package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/test/builders"
)

func testService() *rayv1.RayService {
	svc := builders.RayService("svc", "ns").Incremental(20, 5, 10, "istio").Obj()
	svc.UID = "uid-1"
	return svc
}

func TestGatewayShape(t *testing.T) {
	gw := gateway(testService(), "istio")
	if gw.Name != "svc-gateway" || gw.Namespace != "ns" || gw.Spec.GatewayClassName != "istio" {
		t.Fatalf("gateway %s/%s class %s", gw.Namespace, gw.Name, gw.Spec.GatewayClassName)
	}
	want := []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}}
	if d := cmp.Diff(want, gw.Spec.Listeners); d != "" {
		t.Errorf("listeners (-want +got):\n%s", d)
	}
	if c := metav1.GetControllerOf(gw); c == nil || c.Kind != "RayService" || c.Name != "svc" || c.UID != "uid-1" {
		t.Errorf("owner %+v", c)
	}
}

func TestHTTPRouteShape(t *testing.T) {
	rt := httpRoute(testService(), []backend{{Cluster: "svc-aaaaa", Port: 8000, Weight: 85}, {Cluster: "svc-bbbbb", Port: 8000, Weight: 15}})
	if rt.Name != "svc-httproute" {
		t.Fatalf("name %s", rt.Name)
	}
	wantParents := []gwv1.ParentReference{{Group: ptr.To(gwv1.Group("gateway.networking.k8s.io")), Kind: ptr.To(gwv1.Kind("Gateway")), Name: "svc-gateway"}}
	if d := cmp.Diff(wantParents, rt.Spec.ParentRefs); d != "" {
		t.Errorf("parentRefs (-want +got):\n%s", d)
	}
	if len(rt.Spec.Rules) != 1 {
		t.Fatalf("rules %d, want 1", len(rt.Spec.Rules))
	}
	r := rt.Spec.Rules[0]
	if d := cmp.Diff([]gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/")}}}, r.Matches); d != "" {
		t.Errorf("matches (-want +got):\n%s", d)
	}
	for _, b := range r.BackendRefs {
		if *b.Port != 8000 || *b.Kind != "Service" || *b.Group != "" {
			t.Errorf("backend %+v", b)
		}
	}
	if w := rayspec.RouteWeights(rt); w["svc-aaaaa"] != 85 || w["svc-bbbbb"] != 15 || len(w) != 2 {
		t.Errorf("weights %v", w)
	}
	if string(r.BackendRefs[0].Name) != "svc-aaaaa-serve-svc" || string(r.BackendRefs[1].Name) != "svc-bbbbb-serve-svc" {
		t.Errorf("backend names %s, %s", r.BackendRefs[0].Name, r.BackendRefs[1].Name)
	}
}

func TestRouteSpecMatches(t *testing.T) {
	svc := testService()
	two := httpRoute(svc, []backend{{"a", 8000, 100}, {"b", 8000, 0}})
	one := httpRoute(svc, []backend{{"a", 8000, 100}})
	stored := two.DeepCopy()
	stored.Spec.Rules[0].BackendRefs[0].Namespace = ptr.To(gwv1.Namespace("ns")) // a field raygate does not set
	if !routeSpecMatches(two, stored) {
		t.Error("a stored route with an extra defaulted field must match")
	}
	if routeSpecMatches(one, stored) {
		t.Error("a removed backend must not match (DeepDerivative alone would)")
	}
	moved := httpRoute(svc, []backend{{"a", 8000, 95}, {"b", 8000, 5}})
	if routeSpecMatches(moved, stored) {
		t.Error("changed weights must not match")
	}
}

func TestServeService(t *testing.T) {
	svc := testService()
	rc := newRayCluster(svc, "svc-aaaaa", mustGoal(t, svc.Spec.RayClusterSpec), "v1", false)
	s := serveService(svc, rc)
	if s.Name != "svc-serve-svc" || s.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Fatalf("%s %s", s.Name, s.Spec.Type)
	}
	if d := cmp.Diff(map[string]string{"ray.io/cluster": "svc-aaaaa", "ray.io/serve": "true"}, s.Spec.Selector); d != "" {
		t.Errorf("selector (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]corev1.ServicePort{{Name: "serve", Port: 8000, TargetPort: intstr.FromInt32(8000), Protocol: corev1.ProtocolTCP}}, s.Spec.Ports); d != "" {
		t.Errorf("ports (-want +got):\n%s", d)
	}

	// A user serveService keeps its name, labels, annotations, type and serve port.
	svc.Spec.ServeService = &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "custom", Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"lb": "internal"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"ignored": "x"},
			Ports: []corev1.ServicePort{{Name: "serve", Port: 80, TargetPort: intstr.FromInt32(8000)}, {Name: "other", Port: 9}}},
	}
	s = serveService(svc, rc)
	if s.Name != "custom" || s.Labels["team"] != "a" || s.Annotations["lb"] != "internal" || s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("overrides lost: %+v", s.ObjectMeta)
	}
	if s.Spec.Selector["ignored"] != "" || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 80 || s.Spec.Ports[0].TargetPort.IntValue() != 8000 {
		t.Errorf("selector %v ports %v", s.Spec.Selector, s.Spec.Ports)
	}
}

func TestHeadService(t *testing.T) {
	svc := testService()
	rc := newRayCluster(svc, "svc-aaaaa", mustGoal(t, svc.Spec.RayClusterSpec), "v1", false)
	rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "dashboard", ContainerPort: 8266}}
	s := headService(svc, rc)
	if s.Name != "svc-head-svc" || s.Spec.Selector["ray.io/cluster"] != "svc-aaaaa" || s.Spec.Selector["ray.io/node-type"] != "head" {
		t.Fatalf("%s %v", s.Name, s.Spec.Selector)
	}
	ports := map[string]int32{}
	for _, p := range s.Spec.Ports {
		ports[p.Name] = p.Port
	}
	want := map[string]int32{"client": 10001, "dashboard": 8266, "gcs-server": 6379, "metrics": 8080, "serve": 8000}
	if d := cmp.Diff(want, ports); d != "" {
		t.Errorf("ports (-want +got):\n%s", d)
	}
}

func TestNewRayCluster(t *testing.T) {
	svc := testService()
	g := mustGoal(t, svc.Spec.RayClusterSpec)
	rc := newRayCluster(svc, "svc-aaaaa", g, "v9", true)
	if rc.Labels[rayv1.OriginatedFromCRNameLabelKey] != "svc" || rc.Labels[rayv1.OriginatedFromCRDLabelKey] != "RayService" {
		t.Errorf("labels %v", rc.Labels)
	}
	if rc.Annotations[rayv1.SpecHashKey] != g.Hash || rc.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey] != g.KubeRayHash ||
		rc.Annotations[rayv1.NumWorkerGroupsKey] != "1" || rc.Annotations[rayv1.KubeRayVersionKey] != "v9" {
		t.Errorf("annotations %v", rc.Annotations)
	}
	if c := metav1.GetControllerOf(rc); c == nil || c.Name != "svc" || !*c.BlockOwnerDeletion {
		t.Errorf("owner %+v", c)
	}
	if rc.Spec.WorkerGroupSpecs[0].Replicas != nil {
		t.Error("incremental pending cluster must start with replicas unset")
	}
}

func TestClusterServeServiceOwnedByCluster(t *testing.T) {
	svc := testService()
	rc := newRayCluster(svc, "svc-aaaaa", mustGoal(t, svc.Spec.RayClusterSpec), "v1", false)
	rc.UID = "rc-uid"
	s := clusterServeService(svc, rc)
	if s.Name != "svc-aaaaa-serve-svc" || s.Spec.Selector["ray.io/cluster"] != "svc-aaaaa" {
		t.Errorf("%s %v", s.Name, s.Spec.Selector)
	}
	if c := metav1.GetControllerOf(s); c == nil || c.Kind != "RayCluster" || c.UID != "rc-uid" {
		t.Errorf("owner %+v", c)
	}
}

// A new cluster carries the RayService's labels and annotations, as in KubeRay (a queue
// label reaches Kueue, ray.io/overwrite-container-cmd reaches the pods), but raygate's own
// keys are its own: a RayService cannot set a cluster's deletion time or its spec hash.
func TestNewClusterCarriesTheRayServicesLabelsAndAnnotations(t *testing.T) {
	svc := testService()
	svc.Labels = map[string]string{"team": "a", "kueue.x-k8s.io/queue-name": "q", rayv1.OriginatedFromCRNameLabelKey: "someone-else"}
	svc.Annotations = map[string]string{
		rayv1.OverwriteContainerCmdKey:                 "true",
		rayv1.DeleteAfterKey:                           "2000-01-01T00:00:00Z",
		rayv1.HashWithoutReplicasAndWorkersToDeleteKey: "forged",
		rayv1.SpecHashKey:                              "forged",
		corev1.LastAppliedConfigAnnotation:             `{"kind":"RayService"}`,
	}
	g := mustGoal(t, svc.Spec.RayClusterSpec)
	rc := newRayCluster(svc, "svc-aaaaa", g, "v1", false)
	if rc.Labels["team"] != "a" || rc.Labels["kueue.x-k8s.io/queue-name"] != "q" || rc.Labels[rayv1.OriginatedFromCRNameLabelKey] != svc.Name {
		t.Errorf("labels %v", rc.Labels)
	}
	if rc.Annotations[rayv1.OverwriteContainerCmdKey] != "true" || rc.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey] != g.KubeRayHash || rc.Annotations[rayv1.SpecHashKey] != g.Hash {
		t.Errorf("annotations %v", rc.Annotations)
	}
	for _, k := range []string{rayv1.DeleteAfterKey, corev1.LastAppliedConfigAnnotation} {
		if _, ok := rc.Annotations[k]; ok {
			t.Errorf("annotation %s copied to the cluster", k)
		}
	}
}
