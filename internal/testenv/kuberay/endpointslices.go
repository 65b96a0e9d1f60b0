package kuberay

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sliceManager marks the EndpointSlices this controller writes, as kube-controller-manager
// marks its own.
const sliceManager = "raygate-testenv-endpoints"

// endpointSlice is the EndpointSlice kube-controller-manager would write for a Service whose
// Endpoints are subsets: every address with its ready condition and the resolved ports.
// Load generators resolve Services through it, as kube-proxy does.
func endpointSlice(svc *corev1.Service, subsets []endpointSubset) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: svc.Namespace, Name: svc.Name + "-sim",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: sliceManager},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{},
		Ports:       []discoveryv1.EndpointPort{},
	}
	for _, ss := range subsets {
		add := func(addrs []corev1.EndpointAddress, ready bool) {
			for _, a := range addrs {
				s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
					Addresses:  []string{a.IP},
					Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)},
					TargetRef:  a.TargetRef,
				})
			}
		}
		add(ss.Addresses, true)
		add(ss.NotReadyAddresses, false)
		if len(s.Ports) == 0 {
			for _, p := range ss.Ports {
				s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(p.Port), Protocol: ptr.To(p.Protocol)})
			}
		}
	}
	return s
}

// applySlice creates or updates the Service's EndpointSlice.
func (e *Endpoints) applySlice(ctx context.Context, svc *corev1.Service, subsets []endpointSubset) error {
	want := endpointSlice(svc, subsets)
	cur := &discoveryv1.EndpointSlice{}
	err := e.c.Get(ctx, client.ObjectKeyFromObject(want), cur)
	if apierrors.IsNotFound(err) {
		return client.IgnoreAlreadyExists(e.c.Create(ctx, want))
	}
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) && apiequality.Semantic.DeepEqual(cur.Ports, want.Ports) {
		return nil
	}
	cur.Endpoints, cur.Ports = want.Endpoints, want.Ports
	return e.c.Update(ctx, cur)
}
