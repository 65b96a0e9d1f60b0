package load

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceEndpoints is a Target that sends each request to one ready endpoint of a Service,
// in turn, the way kube-proxy would (there is no kube-proxy here): it reads the Service's
// EndpointSlices, keeps the endpoints whose ready condition is not false, and refreshes that
// set at most every refresh (kube-proxy programs changes with a similar small lag).
func ServiceEndpoints(c client.Reader, namespace, service, portName string, refresh time.Duration) Target {
	e := &endpoints{c: c, ns: namespace, svc: service, port: portName, refresh: refresh}
	return e.next
}

type endpoints struct {
	c             client.Reader
	ns, svc, port string
	refresh       time.Duration

	mu      sync.Mutex
	read    time.Time
	addrs   []string
	counter int
}

func (e *endpoints) next(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if time.Since(e.read) >= e.refresh {
		var list discoveryv1.EndpointSliceList
		if err := e.c.List(ctx, &list, client.InNamespace(e.ns), client.MatchingLabels{discoveryv1.LabelServiceName: e.svc}); err != nil {
			return "", fmt.Errorf("reading EndpointSlices of Service %s/%s: %w", e.ns, e.svc, err)
		}
		e.addrs, e.read = ReadyAddresses(list.Items, e.port), time.Now()
	}
	if len(e.addrs) == 0 {
		return "", fmt.Errorf("service %s/%s has no ready endpoint on port %q", e.ns, e.svc, e.port)
	}
	e.counter++
	return "http://" + e.addrs[e.counter%len(e.addrs)], nil
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
