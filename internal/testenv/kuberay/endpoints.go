package kuberay

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rayscheme "github.com/raygate/raygate/apis/scheme"
)

// KubeRay v1.5.1 counts a RayService's serve endpoints from v1 Endpoints, deprecated since
// Kubernetes v1.33 but still served: that is what this controller must write.
type (
	v1Endpoints    = corev1.Endpoints      //nolint:staticcheck // what KubeRay reads
	endpointSubset = corev1.EndpointSubset //nolint:staticcheck // what KubeRay reads
)

// Endpoints writes the v1 Endpoints of every Service with a selector, as
// kube-controller-manager's Endpoints controller does, for pods the fake kubelet runs.
// KubeRay counts a RayService's serve endpoints from them. The real controller cannot be
// used: the fake kubelet's pods are bound to no node, and it would write an empty nodeName,
// which the API server rejects.
type Endpoints struct {
	c      client.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// StartEndpoints starts the controller against the control plane at cfg. Stop it when done.
func StartEndpoints(cfg *rest.Config) (*Endpoints, error) {
	mgr, err := ctrl.NewManager(rest.CopyConfig(cfg), ctrl.Options{
		Scheme:                 rayscheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
	}
	e := &Endpoints{c: mgr.GetClient()}
	podToServices := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		var svcs corev1.ServiceList
		if err := e.c.List(ctx, &svcs, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, s := range svcs.Items {
			if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(obj.GetLabels())) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
			}
		}
		return out
	})
	err = ctrl.NewControllerManagedBy(mgr).
		Named("test-endpoints").
		For(&corev1.Service{}).
		Watches(&corev1.Pod{}, podToServices).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(e)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go func() {
		defer close(e.done)
		_ = mgr.Start(ctx)
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("endpoints controller: cache did not sync")
	}
	return e, nil
}

// Stop stops the controller and waits for it to exit.
func (e *Endpoints) Stop() {
	e.cancel()
	<-e.done
}

// Reconcile writes one Service's Endpoints.
func (e *Endpoints) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	svc := &corev1.Service{}
	if err := e.c.Get(ctx, req.NamespacedName, svc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if len(svc.Spec.Selector) == 0 || !svc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var pods corev1.PodList
	if err := e.c.List(ctx, &pods, client.InNamespace(svc.Namespace), client.MatchingLabels(svc.Spec.Selector)); err != nil {
		return ctrl.Result{}, err
	}
	want := endpointSubsets(svc, pods.Items)
	cur := &v1Endpoints{}
	err := e.c.Get(ctx, req.NamespacedName, cur)
	if apierrors.IsNotFound(err) {
		ep := &v1Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name, Labels: svc.Labels}, Subsets: want}
		return ctrl.Result{}, client.IgnoreAlreadyExists(e.c.Create(ctx, ep))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if apiequality.Semantic.DeepEqual(cur.Subsets, want) {
		return ctrl.Result{}, nil
	}
	cur.Subsets = want
	return ctrl.Result{}, e.c.Update(ctx, cur)
}

// endpointSubsets is the Endpoints content for a Service: one subset with every selected
// pod that has an IP, ready ones (or all, with publishNotReadyAddresses) as addresses, the
// others as notReadyAddresses, and the Service's ports resolved against the pods.
func endpointSubsets(svc *corev1.Service, pods []corev1.Pod) []endpointSubset {
	var ready, notReady []corev1.EndpointAddress
	var ports []corev1.EndpointPort
	for _, p := range pods {
		if p.Status.PodIP == "" || !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		addr := corev1.EndpointAddress{IP: p.Status.PodIP, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}}
		if svc.Spec.PublishNotReadyAddresses || podReady(&p) {
			ready = append(ready, addr)
		} else {
			notReady = append(notReady, addr)
		}
		if ports == nil {
			ports = endpointPorts(svc, &p)
		}
	}
	if len(ready)+len(notReady) == 0 {
		return nil
	}
	byIP := func(a []corev1.EndpointAddress) {
		sort.Slice(a, func(i, j int) bool { return a[i].IP < a[j].IP })
	}
	byIP(ready)
	byIP(notReady)
	return []endpointSubset{{Addresses: ready, NotReadyAddresses: notReady, Ports: ports}}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// endpointPorts resolves the Service's target ports: a number as is, a name against the
// pod's container ports (a port the pod does not declare is left out).
func endpointPorts(svc *corev1.Service, p *corev1.Pod) []corev1.EndpointPort {
	out := []corev1.EndpointPort{}
	for _, sp := range svc.Spec.Ports {
		var port int32
		switch {
		case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "":
			for _, c := range p.Spec.Containers {
				for _, cp := range c.Ports {
					if cp.Name == sp.TargetPort.StrVal {
						port = cp.ContainerPort
					}
				}
			}
		case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0:
			port = sp.TargetPort.IntVal
		default:
			port = sp.Port
		}
		if port != 0 {
			out = append(out, corev1.EndpointPort{Name: sp.Name, Port: port, Protocol: sp.Protocol})
		}
	}
	return out
}
