// Package scheme holds the one runtime.Scheme raygate uses: Kubernetes' built-in types, ray.io/v1
// and the Gateway API. The operator, the test harness and the local mode share it, so none of
// them needs to import another's package just for the scheme.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
)

// New returns a scheme with every type the manager reads or writes.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(rayv1.AddToScheme(s))
	utilruntime.Must(raygatev1alpha1.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	return s
}
