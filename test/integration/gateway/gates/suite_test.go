// Package gates has the real Prometheus judge raygate's metric gates: it scrapes the real
// Traefik and the simulated Ray pods' Serve metrics, and the operator's --prometheus-url is
// its address. It runs in the world of the gateway suite (../internal/gwenv), started
// once here, beside the gateway package's own.
package gates

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/localmode"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/load"
	"github.com/raygate/raygate/internal/testenv/prometheus"
	"github.com/raygate/raygate/test/integration/gateway/internal/gwenv"
)

const (
	className = gwenv.ClassName
	// interval is the width of the windows the load is tabulated over.
	interval = time.Second
	// scenarioLag is how long after an HTTPRoute change Traefik may still route by the old
	// weights (its 2 s providersThrottleDuration, and margin), as in the gateway package.
	scenarioLag = 2500 * time.Millisecond
)

var (
	world      *gwenv.World
	k8s        client.Client
	dashboards *framework.Dashboards
	// prom is the real Prometheus, scraping Traefik and the Ray pods; the operator's
	// --prometheus-url.
	prom *prometheus.Prometheus
)

func TestGates(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Metric gates on the real Prometheus, through Traefik")
}

var _ = BeforeSuite(func(ctx context.Context) {
	world = gwenv.Start(ctx, gwenv.Options{TraefikMetrics: true})
	k8s, dashboards = world.Client, world.Dashboards
	traefikTarget := prometheus.Target{Job: localmode.JobTraefik, URL: world.Traefik.MetricsURL()}
	var err error
	prom, err = prometheus.Start(ctx, prometheus.Options{
		Targets:  []prometheus.Target{traefikTarget},
		QueryLog: true, // what the gates asked, and when (gates_helpers_test.go)
		Log:      GinkgoWriter,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(prom.Stop()).To(Succeed()) })
	DeferCleanup(followRayPods(traefikTarget))
	world.StartManager(func(opts *app.Options) { opts.PrometheusURL = prom.URL() })
})

// followRayPods keeps Prometheus scraping every Ray pod's metrics port with the labels the
// chart's PodMonitor gives (namespace, pod, ...), as the local mode does, besides fixed;
// the returned function stops it.
func followRayPods(fixed prometheus.Target) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var applied string
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			var pods corev1.PodList
			if err := k8s.List(ctx, &pods, client.MatchingLabels{rayv1.IsRayNodeLabelKey: "yes"}); err == nil {
				targets := append([]prometheus.Target{fixed}, localmode.RayTargets(pods.Items)...)
				// A failed reload (Prometheus killed by a fault spec) is tried again; its
				// configuration file is written anyway, so a restart reads it.
				if key := fmt.Sprint(targets); key != applied && prom.SetTargets(ctx, targets) == nil {
					applied = key
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// The world's helpers, under the names the gateway package gives them.

type weightSample = load.WeightSample

type weightWatch struct{ *load.WeightWatch }

func watchWeights(ctx context.Context, ns, name string) *weightWatch {
	return &weightWatch{world.WatchWeights(ctx, ns, name)}
}

func (w *weightWatch) stop() []weightSample { return w.Stop() }

func createServing(ctx context.Context, ns, name string, svc *rayv1.RayService) string {
	return world.CreateServing(ctx, ns, name, svc)
}

func distinctShares(samples []weightSample, cluster string) int {
	return gwenv.DistinctShares(samples, cluster)
}

func failures(rep *load.Report) string { return gwenv.Failures(rep) }

func timeline(samples []weightSample) string { return gwenv.Timeline(samples) }
