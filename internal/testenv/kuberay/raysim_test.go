package kuberay

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

func TestSimulatorRoutes(t *testing.T) {
	head := map[string]string{rayv1.ClusterLabelKey: "rc", rayv1.NodeTypeLabelKey: "head"}
	c := fake.NewClientBuilder().WithObjects(
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rc-head-svc"},
			Spec: corev1.ServiceSpec{Selector: head, Ports: []corev1.ServicePort{
				{Name: "dashboard", Port: 8265}, {Name: "gcs-server", Port: 6379},
			}},
		},
		&corev1.Service{ // the Serve Service selects pods but is no head Service
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs-serve-svc"},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{rayv1.ClusterLabelKey: "rc"}, Ports: []corev1.ServicePort{{Name: "dashboard", Port: 8265}}},
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rc-head", Labels: head},
			Status:     corev1.PodStatus{PodIP: "10.244.0.3"},
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rc-worker", Labels: map[string]string{rayv1.ClusterLabelKey: "rc", rayv1.NodeTypeLabelKey: "worker"}},
			Status:     corev1.PodStatus{PodIP: "10.244.0.4"},
		},
	).Build()
	reg := raysim.NewRegistry(raysim.Options{})
	defer reg.Close()
	routes := SimulatorRoutes(c, reg)

	h := routes.Service("ns", "rc-head-svc", 8265)
	if h == nil {
		t.Fatal("no route to the head Service's dashboard port")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/serve/applications/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("dashboard: %d %s", rec.Code, rec.Body)
	}
	if reg.Server(types.NamespacedName{Namespace: "ns", Name: "rc"}) == nil {
		t.Error("the request did not reach the cluster's simulator")
	}
	for _, tc := range []struct {
		ns, name string
		port     int
	}{{"ns", "rc-head-svc", 6379}, {"ns", "rs-serve-svc", 8265}, {"ns", "missing", 8265}, {"other", "rc-head-svc", 8265}} {
		if routes.Service(tc.ns, tc.name, tc.port) != nil {
			t.Errorf("route to %s/%s:%d, want none", tc.ns, tc.name, tc.port)
		}
	}

	h = routes.Pod(netip.MustParseAddr("10.244.0.3"), 8000)
	if h == nil {
		t.Fatal("no route to the head pod's Serve proxy")
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/-/healthz", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "success" {
		t.Errorf("Serve proxy health: %d %q", rec.Code, rec.Body)
	}
	if routes.Pod(netip.MustParseAddr("10.244.0.3"), 8265) != nil || routes.Pod(netip.MustParseAddr("10.244.0.4"), 8000) != nil ||
		routes.Pod(netip.MustParseAddr("10.244.0.9"), 8000) != nil {
		t.Error("a route to something other than a head pod's Serve port")
	}
}
