package app

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// The kinds other tenants create in numbers are cached only when raygate labelled them, so
// the operator's memory does not grow with the cluster.
func TestCacheHoldsOnlyLabelledObjects(t *testing.T) {
	ours := labels.Set{rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName}
	theirs := labels.Set{"app": "other"}
	for _, gatewayAPI := range []bool{true, false} {
		opts := cacheOptions(DefaultOptions(), gatewayAPI)
		kinds := []client.Object{&corev1.Service{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &networkingv1.Ingress{}}
		if gatewayAPI {
			kinds = append(kinds, &gwv1.Gateway{}, &gwv1.HTTPRoute{})
		}
		for _, k := range kinds {
			var by *labels.Selector
			for o, b := range opts.ByObject {
				if sameType(o, k) {
					by = &b.Label
				}
			}
			if by == nil || *by == nil || !(*by).Matches(ours) || (*by).Matches(theirs) {
				t.Errorf("gatewayAPI=%v: %T is not cached by raygate's label only", gatewayAPI, k)
			}
		}
		for o := range opts.ByObject {
			if _, gw := o.(*gwv1.Gateway); gw && !gatewayAPI {
				t.Error("Gateways configured in the cache without the Gateway API")
			}
		}
	}
}

func sameType(a, b client.Object) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }
