package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// SimulatedPodIPs is the loopback range simulated pods get their IPs from: the fake
// kubelet's pool, and every kwok node's pod CIDR. A dashboard.PodResolver given it reaches
// simulators on pod IPs.
var SimulatedPodIPs = kwokcluster.PodIPs

// PodResolver is the production dashboard resolver, accepting simulated pods' IPs.
func PodResolver() dashboard.PodResolver {
	return dashboard.PodResolver{SimulatedPods: SimulatedPodIPs}
}

// PodServers makes the simulated Ray clusters of a Registry listen where a real Ray would: the
// dashboard at the head pod's IP and dashboard port, Serve's HTTP proxy at every Ray pod's IP
// and serve port (Ray runs a proxy on every node), and the pod's Serve metrics at its IP and
// metrics port. A pod gets its listeners once Running
// with an IP and its Ray container running, and loses them when that ends or the pod goes
// away. Pod IPs are on loopback (SimulatedPodIPs), so nothing leaves the machine.
type PodServers struct {
	c   client.Client
	reg *raysim.Registry
	log logr.Logger
	bg  *background

	mu   sync.Mutex
	pods map[types.NamespacedName]*podListeners
}

type podListeners struct {
	uid       types.UID
	listeners map[string]*http.Server // by address
}

// StartPodServers starts serving the registry's simulators on pod IPs of the control plane
// at cfg. Stop it when done.
func StartPodServers(cfg *rest.Config, reg *raysim.Registry) (*PodServers, error) {
	bg, err := newBackground(cfg)
	if err != nil {
		return nil, err
	}
	ps := &PodServers{c: bg.GetClient(), reg: reg, bg: bg, log: ctrl.Log.WithName("pod-servers"), pods: map[types.NamespacedName]*podListeners{}}
	err = ctrl.NewControllerManagedBy(bg).
		Named("simulated-ray-listeners").
		For(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: ptr.To(true)}).
		Complete(ps)
	if err != nil {
		return nil, err
	}
	if err := bg.start("simulated Ray listeners"); err != nil {
		return nil, err
	}
	return ps, nil
}

// Stop closes every listener and stops watching pods.
func (ps *PodServers) Stop() {
	ps.bg.stop()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for key, pl := range ps.pods {
		pl.closeAll()
		delete(ps.pods, key)
	}
}

// Addresses lists the addresses the pod's simulated Ray listens on now.
func (ps *PodServers) Addresses(namespace, name string) []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []string
	if pl := ps.pods[types.NamespacedName{Namespace: namespace, Name: name}]; pl != nil {
		for a := range pl.listeners {
			out = append(out, a)
		}
	}
	return out
}

// listenRole is what a listener on a pod serves.
type listenRole int

const (
	roleDashboard listenRole = iota
	roleServeProxy
	roleMetrics
)

// listenSpec is one listener a pod's simulated Ray wants.
type listenSpec struct {
	Addr string
	Role listenRole
}

// wantListeners is where a pod's simulated Ray listens: nothing unless the pod is a Ray
// pod, Running, not being deleted, with an IP and its Ray container running; then the
// Serve proxy on the serve port and Ray's metrics on the metrics port, and on the head the
// dashboard too.
func wantListeners(p *corev1.Pod, dashboardPort int32) []listenSpec {
	if p.Labels[rayv1.ClusterLabelKey] == "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" ||
		len(p.Spec.Containers) <= rayv1.RayContainerIndex {
		return nil
	}
	ray := p.Spec.Containers[rayv1.RayContainerIndex]
	running := false
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == ray.Name {
			running = cs.State.Running != nil
		}
	}
	if !running {
		return nil
	}
	ip := p.Status.PodIP
	out := []listenSpec{
		{Addr: net.JoinHostPort(ip, strconv.Itoa(int(rayspec.ContainerServePort(&ray)))), Role: roleServeProxy},
		{Addr: net.JoinHostPort(ip, strconv.Itoa(int(containerMetricsPort(&ray)))), Role: roleMetrics},
	}
	if p.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) {
		out = append(out, listenSpec{Addr: net.JoinHostPort(ip, strconv.Itoa(int(dashboardPort))), Role: roleDashboard})
	}
	return out
}

// Reconcile opens and closes the pod's listeners to match wantListeners.
func (ps *PodServers) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := ps.c.Get(ctx, req.NamespacedName, pod); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	} else if err != nil {
		ps.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	want := wantListeners(pod, ps.dashboardPort(ctx, pod))
	ps.mu.Lock()
	defer ps.mu.Unlock()
	pl := ps.pods[req.NamespacedName]
	if pl != nil && pl.uid != pod.UID { // a new pod of the same name
		pl.closeAll()
		pl = nil
	}
	if pl == nil {
		pl = &podListeners{uid: pod.UID, listeners: map[string]*http.Server{}}
		ps.pods[req.NamespacedName] = pl
		if len(want) > 0 {
			ps.restartNode(pod) // a pod (or its Ray container) started again counts from zero
		}
	}
	keep := map[string]bool{}
	var errs []error
	for _, l := range want {
		keep[l.Addr] = true
		if pl.listeners[l.Addr] != nil {
			continue
		}
		srv, err := ps.listen(pod, l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pl.listeners[l.Addr] = srv
	}
	for addr, srv := range pl.listeners {
		if !keep[addr] {
			_ = srv.Close()
			delete(pl.listeners, addr)
		}
	}
	if len(pl.listeners) == 0 {
		delete(ps.pods, req.NamespacedName)
	}
	if err := errors.Join(errs...); err != nil {
		// Retried: an address still held by a pod whose deletion this controller has not
		// seen yet (kwok may hand its IP to a new pod) frees up once it does.
		ps.log.Info("cannot listen yet", "pod", req.NamespacedName, "err", err.Error())
		return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	return ctrl.Result{}, nil
}

// listen opens one listener. An address in use by a pod this process still serves (whose
// deletion was not seen yet) is taken back from that pod when it is gone or not that IP's.
func (ps *PodServers) listen(pod *corev1.Pod, l listenSpec) (*http.Server, error) {
	cluster := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[rayv1.ClusterLabelKey]}
	sim, err := ps.reg.Ensure(cluster)
	if err != nil {
		return nil, err
	}
	var h http.Handler = sim
	switch l.Role {
	case roleServeProxy:
		h = sim.NodeProxyHandler(pod.Name)
	case roleMetrics:
		h = sim.MetricsHandler(pod.Name)
	}
	ln, err := net.Listen("tcp", l.Addr)
	if errors.Is(err, syscall.EADDRINUSE) && ps.releaseStale(pod, l.Addr) {
		ln, err = net.Listen("tcp", l.Addr)
	}
	if err != nil {
		return nil, fmt.Errorf("simulated Ray of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

// restartNode forgets the Serve metrics the pod's name counted so far.
func (ps *PodServers) restartNode(pod *corev1.Pod) {
	if sim := ps.reg.Server(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[rayv1.ClusterLabelKey]}); sim != nil {
		sim.RestartNode(pod.Name)
	}
}

// containerMetricsPort is the container's port named "metrics", or Ray's default metrics port.
func containerMetricsPort(c *corev1.Container) int32 {
	for _, p := range c.Ports {
		if p.Name == rayspec.MetricsPortName {
			return p.ContainerPort
		}
	}
	return rayspec.DefaultMetricsPort
}

// releaseStale closes addr where another pod of ours holds it (called with ps.mu held): two
// live pods never share an IP, so the holder is a pod that went away.
func (ps *PodServers) releaseStale(pod *corev1.Pod, addr string) bool {
	for key, pl := range ps.pods {
		if pl.uid == pod.UID {
			continue
		}
		if srv := pl.listeners[addr]; srv != nil {
			_ = srv.Close()
			delete(pl.listeners, addr)
			if len(pl.listeners) == 0 {
				delete(ps.pods, key)
			}
			return true
		}
	}
	return false
}

func (ps *PodServers) forget(key types.NamespacedName) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if pl := ps.pods[key]; pl != nil {
		pl.closeAll()
		delete(ps.pods, key)
	}
}

func (pl *podListeners) closeAll() {
	for _, srv := range pl.listeners {
		_ = srv.Close()
	}
	pl.listeners = map[string]*http.Server{}
}

// dashboardPort is the head's dashboard port from its RayCluster (rayStartParams
// dashboard-port), else Ray's default.
func (ps *PodServers) dashboardPort(ctx context.Context, pod *corev1.Pod) int32 {
	rc := &rayv1.RayCluster{}
	if err := ps.c.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[rayv1.ClusterLabelKey]}, rc); err != nil {
		return rayspec.DefaultDashboardPort
	}
	return rayspec.PortParam(rc.Spec.HeadGroupSpec.RayStartParams, "dashboard-port", rayspec.DefaultDashboardPort)
}
