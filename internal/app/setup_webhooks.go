package app

import ctrl "sigs.k8s.io/controller-runtime"

// setupWebhooks registers the webhooks part of raygate with the manager.
func setupWebhooks(mgr ctrl.Manager, o Options) error {
	_, _ = mgr, o
	return nil
}
