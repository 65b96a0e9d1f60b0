package certmanager

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EndpointFollower plays kube-proxy for the webhook Service: it reads the Service's
// EndpointSlices (written by kube-controller-manager's EndpointSlice controller) and makes
// the tunnel's backends the ready endpoints, so a pod that leaves rotation stops getting
// new connections; connections already open stay, as kube-proxy leaves them. Endpoint
// addresses are the pods' API IPs, which nothing dials: Loopback maps each to the loopback
// address its process listens on.
type EndpointFollower struct {
	Client    client.Client
	Tunnel    *Tunnel
	Namespace string
	Service   string
	PortName  string
	Loopback  func(apiIP string) (string, bool)
	Period    time.Duration

	mu      sync.Mutex
	changes []BackendChange
}

// BackendChange is one change of the tunnel's backends.
type BackendChange struct {
	At       time.Time
	Backends []string
}

// Run follows the endpoints until ctx ends.
func (f *EndpointFollower) Run(ctx context.Context) {
	tick := time.NewTicker(f.Period)
	defer tick.Stop()
	var last []string
	for {
		var slices discoveryv1.EndpointSliceList
		err := f.Client.List(ctx, &slices, client.InNamespace(f.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: f.Service})
		if err == nil {
			cur := readyBackends(slices.Items, f.PortName, f.Loopback)
			if !equal(cur, last) {
				f.Tunnel.SetBackends(cur...)
				last = cur
				f.mu.Lock()
				f.changes = append(f.changes, BackendChange{At: time.Now(), Backends: cur})
				f.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Changes lists the backend changes so far, oldest first.
func (f *EndpointFollower) Changes() []BackendChange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]BackendChange(nil), f.changes...)
}

// readyBackends are the loopback host:port of the ready endpoints of slices (sorted).
func readyBackends(items []discoveryv1.EndpointSlice, portName string, loopback func(string) (string, bool)) []string {
	var out []string
	for _, s := range items {
		var port int32
		for _, p := range s.Ports {
			if p.Port != nil && (p.Name == nil && portName == "" || p.Name != nil && *p.Name == portName) {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				if l, ok := loopback(a); ok {
					out = append(out, net.JoinHostPort(l, strconv.Itoa(int(port))))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }
