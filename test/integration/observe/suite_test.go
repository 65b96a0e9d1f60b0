package observe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/test/builders"
)

var (
	env         *controlplane.Env
	metricsAddr string
)

// gatewayClass is the class the stand-in gateway controller accepts (the upgrade the
// dashboard spec watches is incremental).
const gatewayClass = "fake-gw"

func TestObserve(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(time.Minute) // RayServices start and upgrade on a shared machine
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "observe: the dashboard and alerts query what the operator serves, and the dashboard shows it")
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

var _ = BeforeSuite(func() {
	// Pods that become ready, simulated Ray dashboards on their IPs and a stand-in gateway
	// controller: RayServices serve and upgrade, so the upgrade series exist.
	s := suite.Start(suite.Options{ControlPlane: controlplane.Options{Webhooks: true, GatewayAPI: true}, Kubelet: &framework.KubeletOptions{}})
	env = s.Env
	gw, err := framework.StartGateway(env.Config, framework.GatewayOptions{ClassName: gatewayClass, Delay: 50 * time.Millisecond})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gw.Stop)
	dashboards := framework.StartDashboardsWith(raysim.Options{DeployDelay: 300 * time.Millisecond})
	DeferCleanup(dashboards.Close)
	Expect(dashboards.ListenOnPods(env.Config)).To(Succeed())

	// The operator as the chart runs it: leader election, webhooks, controllers. Metrics
	// over plain HTTP here (the chart's HTTPS and authentication are tested elsewhere).
	opts := dashboards.Wire(app.DefaultOptions())
	metricsAddr = freeAddr()
	opts.MetricsAddr, opts.SecureMetrics, opts.ProbeAddr = metricsAddr, false, "0"
	opts.LeaderElect, opts.LeaderElectionNS = true, "default"
	opts.SkipControllerNameValidation = true
	opts.RayServiceDeployingPoll = 150 * time.Millisecond
	m := s.StartManager(opts)
	DeferCleanup(func() { Expect(m.Stop()).To(Succeed()) })
})

// scrape reads the operator's /metrics as Prometheus would: the families with at least
// one sample.
func scrape() (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// registered says whether the operator's registry (the one /metrics serves) holds a
// collector of that name: registering another under the same name then fails.
func registered(name string) bool {
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe"})
	if err := metrics.Registry.Register(probe); err != nil {
		return true
	}
	metrics.Registry.Unregister(probe)
	return false
}

// onlyDuringAnUpgrade are the series that exist only while a RayService upgrades, or once
// an upgrade ended, or a RayCluster's pods were all ready (envtest runs no pods): for them
// the test asks that the operator registered them, not that they have a sample.
var onlyDuringAnUpgrade = []string{
	"raygate_service_traffic_routed_percent",
	"raygate_service_target_capacity_percent",
	"raygate_service_upgrade_action",
	"raygate_service_upgrade_actions_total",
	"raygate_service_upgrade_duration_seconds",
	"raygate_service_upgrade_start_time_seconds",
	"raygate_service_upgrade_expected_duration_seconds",
	"kuberay_cluster_provisioned_duration_seconds",
}

// fromPrometheus are series Prometheus makes itself, not the operator.
var fromPrometheus = []string{"up"}

var _ = Describe("the chart's dashboard and alerts", func() {
	It("query only metrics the operator registers, and serves each that needs no upgrade in flight", func(ctx context.Context) {
		chart := filepath.Join(tools.RepoRoot(), "charts", "raygate")
		dash, err := dashboardExprs(filepath.Join(chart, "dashboards", "raygate.json"))
		Expect(err).NotTo(HaveOccurred())
		rules, err := ruleExprs(filepath.Join(chart, "templates", "prometheusrule.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(dash).To(HaveLen(30), "every panel target and variable query is read")
		Expect(rules).To(HaveLen(8), "every alert is read")
		var names []string
		for _, e := range append(dash, rules...) {
			for _, n := range metricNames(e) {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		sort.Strings(names)
		GinkgoWriter.Printf("metrics queried: %v\n", names)

		// What makes the series exist: a RayService reconciled (and the RayCluster it
		// creates), admission requests allowed and denied, the leader elected.
		svc := builders.RayService("observed", "default").Obj()
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		bad := builders.RayService("refused", "default").ServeConfig("applications: [").Obj()
		err = env.Client.Create(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the invalid RayService must be refused: %v", err)

		Eventually(func() ([]string, error) {
			served, err := scrape()
			if err != nil {
				return nil, err
			}
			var missing []string
			for _, n := range names {
				switch {
				case slices.Contains(fromPrometheus, n):
				case slices.Contains(onlyDuringAnUpgrade, family(n, nil)):
					if !registered(family(n, nil)) {
						missing = append(missing, n+" (not registered)")
					}
				default:
					f := served[family(n, samples(served))]
					if f == nil || len(f.GetMetric()) == 0 {
						missing = append(missing, n+" (no sample on /metrics)")
					}
				}
			}
			return missing, nil
		}, 90*time.Second, time.Second).Should(BeEmpty())

		// And the exceptions really are registered under those names: a name the operator
		// does not have is told apart.
		Expect(registered("raygate_no_such_metric")).To(BeFalse())
	})
})

// samples are the names with a sample, by the family they are served under.
func samples(fams map[string]*dto.MetricFamily) map[string]bool {
	out := map[string]bool{}
	for n, f := range fams {
		if len(f.GetMetric()) > 0 {
			out[n] = true
		}
	}
	return out
}
