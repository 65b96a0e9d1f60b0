package certmanager

import (
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

func TestReadyBackends(t *testing.T) {
	loop := map[string]string{"10.244.0.1": "127.64.0.1", "10.244.0.2": "127.64.0.2", "10.244.0.3": "127.64.0.3"}
	lookup := func(ip string) (string, bool) { l, ok := loop[ip]; return l, ok }
	slice := discoveryv1.EndpointSlice{
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](9443)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			// Terminating: out of rotation although its process still serves.
			{Addresses: []string{"10.244.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}},
			{Addresses: []string{"10.244.0.3"}}, // unknown readiness counts as ready
			{Addresses: []string{"10.244.9.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}, // not ours: never dialled
		},
	}
	other := discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To[int32](8443)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.1"}}}}
	got := readyBackends([]discoveryv1.EndpointSlice{slice, other}, "https", lookup)
	want := []string{"127.64.0.2:9443", "127.64.0.3:9443"}
	if !slices.Equal(got, want) {
		t.Fatalf("readyBackends: got %v, want %v", got, want)
	}
}
