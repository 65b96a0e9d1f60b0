package app

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/poddryrun"
	"github.com/raygate/raygate/webhooks"
)

// The RayService validating webhook looks up the GatewayClass an incremental upgrade names,
// to warn when it does not exist.
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses,verbs=get

// The validating webhooks check the pods raygate would create against the namespace's Pod
// Security labels and ResourceQuotas, both read from the manager's cache.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch

// setupWebhooks registers the mutating and validating webhooks of RayCluster and RayService.
func setupWebhooks(mgr ctrl.Manager, o Options) error {
	if !o.EnableWebhooks {
		return nil
	}
	// Registered now so the cache starts them with the others, instead of on the first
	// admission request.
	for _, obj := range []client.Object{webhooks.NamespaceMetadata(), &corev1.ResourceQuota{}} {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return fmt.Errorf("watching %T for admission: %w", obj, err)
		}
	}
	var dryRun poddryrun.Creator
	if o.PodDryRun {
		// The identity that creates the pods for real; create on pods is the controllers' right.
		c, err := poddryrun.NewRESTCreator(mgr.GetConfig())
		if err != nil {
			return err
		}
		dryRun = c
	}
	webhooks.Register(mgr.GetWebhookServer(), webhooks.Options{
		Reader:              mgr.GetAPIReader(),
		Gates:               features.Default(),
		Limits:              o.Limits(),
		Policy:              o.Policy(),
		Namespaces:          mgr.GetCache(),
		PodDryRun:           dryRun,
		WatchNamespaces:     o.WatchNamespaces,
		DisableZeroDowntime: o.DisableZeroDowntime,
	})
	return nil
}
