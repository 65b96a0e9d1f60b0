package kuberay

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

const (
	dashboardPort = 8265
	servePort     = 8000
	lookupTimeout = 5 * time.Second
)

// SimulatorRoutes send KubeRay to the suite's simulated Ray clusters: a RayCluster's head
// Service on the dashboard port reaches the cluster's simulator in reg (the one raygate's
// controllers reach in-process, so both operators see one Serve state), and a head pod's
// IP on the Serve port answers the Serve proxy's health check. Everything else is refused.
func SimulatorRoutes(c client.Reader, reg *raysim.Registry) Routes {
	sims := reg.Handler()
	return Routes{
		Service: func(namespace, name string, port int) http.Handler {
			cluster, ok := headServiceCluster(c, namespace, name, port)
			if !ok {
				return nil
			}
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				in := r.Clone(r.Context())
				in.URL.Path = "/" + namespace + "/" + cluster + "/" + strings.TrimPrefix(r.URL.Path, "/")
				sims.ServeHTTP(w, in)
			})
		},
		Pod: func(ip netip.Addr, port int) http.Handler {
			if port != servePort || !isHeadPodIP(c, ip) {
				return nil
			}
			return http.HandlerFunc(serveProxyHealth)
		},
	}
}

// headServiceCluster is the RayCluster whose head Service namespace/name is, when port is
// its dashboard port.
func headServiceCluster(c client.Reader, namespace, name string, port int) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	svc := &corev1.Service{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, svc); err != nil {
		return "", false
	}
	cluster := svc.Spec.Selector[rayv1.ClusterLabelKey]
	if cluster == "" || svc.Spec.Selector[rayv1.NodeTypeLabelKey] != string(rayv1.HeadNode) {
		return "", false
	}
	for _, p := range svc.Spec.Ports {
		if int(p.Port) == port && (p.Name == "dashboard" || p.Port == dashboardPort) {
			return cluster, true
		}
	}
	return "", false
}

func isHeadPodIP(c client.Reader, ip netip.Addr) bool {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.MatchingLabels{rayv1.NodeTypeLabelKey: string(rayv1.HeadNode)}); err != nil {
		return false
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP == ip.String() {
			return true
		}
	}
	return false
}

// serveProxyHealth answers like a healthy Ray Serve proxy.
func serveProxyHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/-/healthz" {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write([]byte("success"))
}
