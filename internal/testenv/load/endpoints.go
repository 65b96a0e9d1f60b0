package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceEndpoints is a Target that sends each request to one ready endpoint of a Service,
// in turn, the way kube-proxy would (there is no kube-proxy here): it reads the Service's
// EndpointSlices, keeps the endpoints whose ready condition is not false, and refreshes that
// set at most every refresh (kube-proxy programs changes with a similar small lag).
//
// The API server refuses loopback addresses in EndpointSlices and Endpoints, so Services
// over simulated pods (whose IPs are on loopback) have none: use ServicePods for them.
func ServiceEndpoints(c client.Reader, namespace, service, portName string, refresh time.Duration) Target {
	return (&endpoints{refresh: refresh, read: func(ctx context.Context) ([]string, error) {
		var list discoveryv1.EndpointSliceList
		if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
			return nil, fmt.Errorf("reading EndpointSlices of Service %s/%s: %w", namespace, service, err)
		}
		return ReadyAddresses(list.Items, portName), nil
	}}).next
}

// ServicePods is a Target that sends each request to one ready pod the Service selects, in
// turn, on the Service port's target port: what the EndpointSlice controller would publish
// and kube-proxy program, read from the Service and its pods directly (refreshed at most
// every refresh), for simulated pods whose loopback IPs cannot be in an EndpointSlice.
func ServicePods(c client.Reader, namespace, service, portName string, refresh time.Duration) Target {
	return (&endpoints{refresh: refresh, read: func(ctx context.Context) ([]string, error) {
		svc := &corev1.Service{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: service}, svc); err != nil {
			return nil, fmt.Errorf("reading Service %s/%s: %w", namespace, service, err)
		}
		if len(svc.Spec.Selector) == 0 {
			return nil, fmt.Errorf("service %s/%s has no selector", namespace, service)
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels(svc.Spec.Selector)); err != nil {
			return nil, fmt.Errorf("reading the pods of Service %s/%s: %w", namespace, service, err)
		}
		return PodAddresses(svc, pods.Items, portName), nil
	}}).next
}

type endpoints struct {
	refresh time.Duration
	read    func(context.Context) ([]string, error)

	mu      sync.Mutex
	readAt  time.Time
	addrs   []string
	counter int
}

func (e *endpoints) next(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if time.Since(e.readAt) >= e.refresh {
		addrs, err := e.read(ctx)
		if err != nil {
			return "", err
		}
		e.addrs, e.readAt = addrs, time.Now()
	}
	if len(e.addrs) == 0 {
		return "", errors.New("no ready endpoint")
	}
	e.counter++
	return "http://" + e.addrs[e.counter%len(e.addrs)], nil
}

// PodAddresses lists host:port of every pod kube-proxy would send the Service's traffic to:
// Running, Ready, not being deleted, with an IP; the port is the named Service port's target
// port (a number, or a container port name the pod declares), sorted.
func PodAddresses(svc *corev1.Service, pods []corev1.Pod, portName string) []string {
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Name == portName || portName == "" && len(svc.Spec.Ports) == 1 {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return nil
	}
	var out []string
	for i := range pods {
		p := &pods[i]
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !podReady(p) {
			continue
		}
		if port := targetPort(sp, p); port != 0 {
			out = append(out, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port))))
		}
	}
	slices.Sort(out)
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func targetPort(sp *corev1.ServicePort, p *corev1.Pod) int32 {
	switch {
	case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "":
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == sp.TargetPort.StrVal {
					return cp.ContainerPort
				}
			}
		}
		return 0
	case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal
	}
	return sp.Port
}

// ReadyAddresses lists host:port of every endpoint kube-proxy would send traffic to (ready
// not false), on the named port, sorted and without duplicates.
func ReadyAddresses(list []discoveryv1.EndpointSlice, portName string) []string {
	var out []string
	for _, s := range list {
		var port int32
		for _, p := range s.Ports {
			if p.Port != nil && (p.Name != nil && *p.Name == portName || portName == "" && len(s.Ports) == 1) {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				out = append(out, net.JoinHostPort(a, strconv.Itoa(int(port))))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
