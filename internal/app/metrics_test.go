package app

import "testing"

// Which managers make a registration: the webhooks' metrics with the webhooks, the
// controllers' without --webhooks-only, the per-object metrics only with --object-metrics.
func TestMetricRegistrationMadeBy(t *testing.T) {
	var (
		controllers   = MetricRegistration{}
		objects       = MetricRegistration{ObjectMetrics: true}
		webhookMetric = MetricRegistration{Webhooks: true}
	)
	defaults := DefaultOptions()
	noObjects := DefaultOptions()
	noObjects.ObjectMetrics = false
	noWebhooks := DefaultOptions()
	noWebhooks.EnableWebhooks = false
	webhooksOnly := DefaultOptions()
	webhooksOnly.WebhooksOnly = true
	for _, c := range []struct {
		name string
		o    Options
		r    MetricRegistration
		want bool
	}{
		{"controllers, defaults", defaults, controllers, true},
		{"object metrics, defaults", defaults, objects, true},
		{"webhooks, defaults", defaults, webhookMetric, true},
		{"controllers, --object-metrics=false", noObjects, controllers, true},
		{"object metrics, --object-metrics=false", noObjects, objects, false},
		{"webhooks, --object-metrics=false", noObjects, webhookMetric, true},
		{"controllers, webhooks off", noWebhooks, controllers, true},
		{"webhooks, webhooks off", noWebhooks, webhookMetric, false},
		{"controllers, --webhooks-only", webhooksOnly, controllers, false},
		{"object metrics, --webhooks-only", webhooksOnly, objects, false},
		{"webhooks, --webhooks-only", webhooksOnly, webhookMetric, true},
	} {
		if got := c.r.madeBy(c.o); got != c.want {
			t.Errorf("%s: madeBy = %v; want %v", c.name, got, c.want)
		}
	}
}
