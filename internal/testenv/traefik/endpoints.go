package traefik

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/testenv/kuberay"
)

// loopbackManager is the managed-by value of the slices LoopbackEndpoints writes, so the
// EndpointSlice controller of a kube-controller-manager leaves them alone.
const loopbackManager = "loopback-endpoints.raygate.ray.io"

// LoopbackSliceName is the EndpointSlice LoopbackEndpoints writes for a Service.
func LoopbackSliceName(service string) string { return service + "-loopback" }

// LoopbackEndpoints writes, for every Service with a selector, an EndpointSlice that lists
// the loopback IPs of the pods it selects. The API server refuses loopback addresses in IPv4
// EndpointSlices (so the EndpointSlice controller cannot publish pods whose simulated IPs are
// in 127.0.0.0/8); the slice is written with address type FQDN, which accepts a dotted quad,
// and Traefik dials its addresses as it would pod IPs. Stop it when done.
type LoopbackEndpoints struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartLoopbackEndpoints starts the writer against the control plane at cfg.
func StartLoopbackEndpoints(cfg *rest.Config) (*LoopbackEndpoints, error) {
	mgr, err := ctrl.NewManager(rest.CopyConfig(cfg), ctrl.Options{
		Scheme: rayscheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
	}
	c := mgr.GetClient()
	r := reconcileFunc(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		return ctrl.Result{}, syncLoopbackSlice(ctx, c, req.NamespacedName)
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("loopback-endpoints").For(&corev1.Service{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(kuberay.ServicesSelecting(c))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: ptr.To(true)}).Complete(r); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &LoopbackEndpoints{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		_ = mgr.Start(ctx)
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		l.Stop()
		return nil, fmt.Errorf("loopback endpoints: cache did not sync")
	}
	return l, nil
}

// Stop stops the writer and waits for it.
func (l *LoopbackEndpoints) Stop() {
	l.cancel()
	<-l.done
}

type reconcileFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcileFunc) Reconcile(ctx context.Context, r ctrl.Request) (ctrl.Result, error) {
	return f(ctx, r)
}

func syncLoopbackSlice(ctx context.Context, c client.Client, key client.ObjectKey) error {
	var svc corev1.Service
	if err := c.Get(ctx, key, &svc); err != nil {
		return client.IgnoreNotFound(err) // the slice is owned by the Service and goes with it
	}
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(svc.Namespace), client.MatchingLabels(svc.Spec.Selector)); err != nil {
		return err
	}
	want := LoopbackSlice(&svc, pods.Items)
	var got discoveryv1.EndpointSlice
	err := c.Get(ctx, client.ObjectKeyFromObject(want), &got)
	switch {
	case apierrors.IsNotFound(err):
		return client.IgnoreAlreadyExists(c.Create(ctx, want))
	case err != nil:
		return err
	}
	if slices.EqualFunc(got.Endpoints, want.Endpoints, endpointEqual) && slices.EqualFunc(got.Ports, want.Ports, portEqual) {
		return nil
	}
	got.Endpoints, got.Ports = want.Endpoints, want.Ports
	return c.Update(ctx, &got)
}

// LoopbackSlice is the FQDN EndpointSlice for svc: one endpoint per pod whose IP is in
// 127.0.0.0/8 (ready when the pod is Ready and not terminating), and the Service's ports
// with their numeric target ports (a named target port is looked up in the first pod).
func LoopbackSlice(svc *corev1.Service, pods []corev1.Pod) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: LoopbackSliceName(svc.Name), Namespace: svc.Namespace,
			Labels:          map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: loopbackManager},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID}},
		},
		AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	var first *corev1.Pod
	for i := range pods {
		p := &pods[i]
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !ip.IsLoopback() {
			continue
		}
		if first == nil {
			first = p
		}
		ready := p.DeletionTimestamp == nil && podReady(p)
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{ip.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		})
	}
	for _, sp := range svc.Spec.Ports {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{
			Name: ptr.To(sp.Name), Port: ptr.To(targetPort(sp, first)), Protocol: ptr.To(corev1.ProtocolTCP),
		})
	}
	return s
}

func targetPort(sp corev1.ServicePort, pod *corev1.Pod) int32 {
	if sp.TargetPort.IntVal != 0 {
		return sp.TargetPort.IntVal
	}
	if sp.TargetPort.StrVal != "" && pod != nil {
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == sp.TargetPort.StrVal {
					return cp.ContainerPort
				}
			}
		}
	}
	return sp.Port
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func endpointEqual(a, b discoveryv1.Endpoint) bool {
	return slices.Equal(a.Addresses, b.Addresses) && ptr.Deref(a.Conditions.Ready, false) == ptr.Deref(b.Conditions.Ready, false)
}

func portEqual(a, b discoveryv1.EndpointPort) bool {
	return ptr.Deref(a.Name, "") == ptr.Deref(b.Name, "") && ptr.Deref(a.Port, 0) == ptr.Deref(b.Port, 0)
}
