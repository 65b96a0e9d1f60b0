package capabilities

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeDiscovery serves the kinds of each group version it holds; other group versions are
// not found, and a group version in fail answers with that error. It counts the requests.
type fakeDiscovery struct {
	served map[string][]string
	fail   map[string]error
	asked  map[string]int
}

func (f *fakeDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if f.asked == nil {
		f.asked = map[string]int{}
	}
	f.asked[gv]++
	if err := f.fail[gv]; err != nil {
		return nil, err
	}
	kinds, ok := f.served[gv]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	list := &metav1.APIResourceList{GroupVersion: gv}
	for _, k := range kinds {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: strings.ToLower(k) + "s", Kind: k})
	}
	return list, nil
}

const (
	gatewayGV = "gateway.networking.k8s.io/v1"
	certGV    = "cert-manager.io/v1"
	volcanoGV = "scheduling.volcano.sh/v1beta1"
	routeGV   = "route.openshift.io/v1"
)

var volcanoPodGroup = schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}

func TestDiscover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		served   map[string][]string
		podGroup schema.GroupVersionKind
		want     Capabilities
	}{
		{name: "a bare API server", want: Capabilities{}},
		{name: "the Gateway API with GRPCRoute", served: map[string][]string{gatewayGV: {"GatewayClass", "Gateway", "HTTPRoute", "GRPCRoute"}},
			want: Capabilities{GatewayAPI: true, GRPCRoute: true}},
		{name: "the Gateway API without GRPCRoute", served: map[string][]string{gatewayGV: {"Gateway", "HTTPRoute"}},
			want: Capabilities{GatewayAPI: true}},
		{name: "GRPCRoute alone is no Gateway API", served: map[string][]string{gatewayGV: {"GRPCRoute", "Gateway"}},
			want: Capabilities{}},
		{name: "the Gateway API only in v1beta1", served: map[string][]string{"gateway.networking.k8s.io/v1beta1": {"Gateway", "HTTPRoute"}},
			want: Capabilities{}},
		{name: "cert-manager", served: map[string][]string{certGV: {"Certificate", "Issuer", "ClusterIssuer", "CertificateRequest"}},
			want: Capabilities{CertManager: true}},
		{name: "cert-manager without Issuer", served: map[string][]string{certGV: {"Certificate"}}, want: Capabilities{}},
		{name: "the batch scheduler's PodGroup", served: map[string][]string{volcanoGV: {"PodGroup", "Queue"}}, podGroup: volcanoPodGroup,
			want: Capabilities{PodGroup: volcanoPodGroup}},
		{name: "the PodGroup CRD missing", served: map[string][]string{volcanoGV: {"Queue"}}, podGroup: volcanoPodGroup, want: Capabilities{}},
		{name: "a PodGroup served but not asked for", served: map[string][]string{volcanoGV: {"PodGroup"}}, want: Capabilities{}},
		{name: "OpenShift's Route", served: map[string][]string{routeGV: {"Route"}}, want: Capabilities{Route: true}},
		{name: "the Route group without the Route kind", served: map[string][]string{routeGV: {"RouteSomethingElse"}}, want: Capabilities{}},
		{name: "other OpenShift groups are no Route", served: map[string][]string{"security.openshift.io/v1": {"SecurityContextConstraints"}, "config.openshift.io/v1": {"Ingress"}},
			want: Capabilities{}},
		{name: "everything", served: map[string][]string{gatewayGV: {"Gateway", "HTTPRoute", "GRPCRoute"}, certGV: {"Certificate", "Issuer"}, volcanoGV: {"PodGroup"}, routeGV: {"Route"}},
			podGroup: volcanoPodGroup, want: Capabilities{GatewayAPI: true, GRPCRoute: true, CertManager: true, PodGroup: volcanoPodGroup, Route: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDiscovery{served: tc.served}
			got, err := Discover(d, tc.podGroup)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			for gv, n := range d.asked {
				if n != 1 {
					t.Errorf("%s asked %d times; once is enough", gv, n)
				}
			}
		})
	}
}

// A discovery failure other than "not found" (the API server down, an aggregated API
// unavailable) stops the start: guessing would leave a kind unwatched until a restart.
func TestDiscoverFailsOnErrors(t *testing.T) {
	down := errors.New("connection refused")
	for _, gv := range []string{gatewayGV, certGV, volcanoGV, routeGV} {
		d := &fakeDiscovery{fail: map[string]error{gv: down}}
		if _, err := Discover(d, volcanoPodGroup); !errors.Is(err, down) || !strings.Contains(err.Error(), gv) {
			t.Errorf("%s failing: err = %v, want it wrapped with the group version", gv, err)
		}
	}
}
