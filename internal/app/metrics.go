package app

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/controllers/rayjob"
	"github.com/raygate/raygate/controllers/rayservice"
	"github.com/raygate/raygate/webhooks"
)

// MetricRegistration is one of the manager's metric registrations on controller-runtime's
// registry, and which managers make it.
type MetricRegistration struct {
	// Webhooks: made by a manager serving the webhooks (--enable-webhooks); otherwise by one
	// running the controllers (not --webhooks-only).
	Webhooks bool
	// ObjectMetrics: made only with --object-metrics.
	ObjectMetrics bool
	Register      func(prometheus.Registerer) error
}

// ControllerMetrics are the metrics the controllers' reconcilers observe into.
type ControllerMetrics struct {
	Cluster *raycluster.Metrics
	Service *rayservice.Metrics
	Job     *rayjob.Metrics
}

// MetricRegistrations are every registration the manager makes (registerMetrics) and
// docs/reference/metrics.md lists (internal/docgen): one list, so a metric cannot be served
// undocumented or documented unserved.
func MetricRegistrations(m ControllerMetrics) []MetricRegistration {
	return []MetricRegistration{
		{ObjectMetrics: true, Register: m.Cluster.Register},
		{ObjectMetrics: true, Register: m.Service.Register},
		{Register: m.Job.Register},
		{Register: rayservice.RegisterGatePoolMetrics},
		{Webhooks: true, Register: webhooks.RegisterMetrics},
	}
}

// madeBy says whether a manager run with o makes the registration.
func (r MetricRegistration) madeBy(o Options) bool {
	part := !o.WebhooksOnly
	if r.Webhooks {
		part = o.EnableWebhooks
	}
	return part && (o.ObjectMetrics || !r.ObjectMetrics)
}

// registerMetrics makes the registrations of a manager run with o; m is zero when it runs no
// controllers (their registrations are then not made).
func registerMetrics(o Options, m ControllerMetrics) error {
	for _, r := range MetricRegistrations(m) {
		if !r.madeBy(o) {
			continue
		}
		if err := r.Register(metrics.Registry); err != nil {
			return fmt.Errorf("registering metrics: %w", err)
		}
	}
	return nil
}
