package app

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/webhooks"
)

// The RayService validating webhook looks up the GatewayClass an incremental upgrade names,
// to warn when it does not exist.
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses,verbs=get

// setupWebhooks registers the mutating and validating webhooks of RayCluster and RayService.
func setupWebhooks(mgr ctrl.Manager, o Options) error {
	if !o.EnableWebhooks {
		return nil
	}
	webhooks.Register(mgr.GetWebhookServer(), webhooks.Options{
		Reader: mgr.GetAPIReader(),
		Gates:  features.Default(),
		Limits: o.Limits(),
	})
	return nil
}
