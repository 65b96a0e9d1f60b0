package observe

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/docqueries"
	testprom "github.com/raygate/raygate/internal/testenv/prometheus"
	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// Scrape labels as the chart's ServiceMonitor gives them: job is the metrics Service, the
// release namespace and the pod are added, and the series' own labels win (honorLabels).
const (
	metricsJob     = "raygate-metrics"
	scrapeInterval = time.Second
)

var _ = Describe("the chart's Grafana dashboard", func() {
	It("shows data in every panel during an upgrade, as Prometheus answers its queries with the variables set", func(ctx context.Context) {
		queries, vars, err := readDashboard(filepath.Join(tools.RepoRoot(), "charts", "raygate", "dashboards", "raygate.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(queries).To(HaveLen(27), "every panel target is read")

		// The chart's alerts too: on the live series every rule must evaluate without an
		// error, and the operator's must stay inactive while it is healthy (their selectors
		// match what it really serves: the job, the release namespace, the Lease's name).
		helm, err := tools.Path("helm")
		Expect(err).NotTo(HaveOccurred())
		rules, file, err := renderRules(helm, filepath.Join(tools.RepoRoot(), "charts", "raygate"))
		Expect(err).NotTo(HaveOccurred())
		rulesPath := filepath.Join(GinkgoT().TempDir(), renderedRulesFile)
		Expect(os.WriteFile(rulesPath, rules, 0o600)).To(Succeed())

		prom, err := testprom.Start(ctx, testprom.Options{
			ScrapeInterval: scrapeInterval,
			RuleFiles:      []string{rulesPath},
			Targets: []testprom.Target{{
				Job: metricsJob, URL: "http://" + metricsAddr + "/metrics", HonorLabels: true,
				Labels: map[string]string{"namespace": "raygate-system", "pod": "raygate-0", "service": metricsJob},
			}},
			Log: GinkgoWriter,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(prom.Stop)
		start := time.Now()

		By("an upgrade finishes, the next one is paused half-way, and a RayService is refused")
		ns := rstest.NewNamespace(ctx, env.Client, "dash-")
		const name = "shown"
		Expect(env.Client.Create(ctx, builders.RayService(name, ns).Incremental(50, 25, 1, gatewayClass).DeletionDelay(1).Obj())).To(Succeed())
		blue := rstest.WaitServing(ctx, env.Client, ns, name)
		rstest.Update(ctx, env.Client, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(rstest.ActiveName(ctx, env.Client, ns, name), 2*time.Minute).ShouldNot(Equal(blue), "the first upgrade is promoted")
		rstest.Update(ctx, env.Client, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.54.0") })
		Eventually(rstest.PendingTraffic(ctx, env.Client, ns, name), 2*time.Minute).Should(BeNumerically(">=", 25))
		rstest.SetAction(ctx, env.Client, ns, name, rayv1.UpgradeActionPause, rstest.PendingName(ctx, env.Client, ns, name)())
		Eventually(rstest.Condition(ctx, env.Client, ns, name, rayv1.UpgradeAction)).Should(Equal("True/UpgradePaused"))
		err = env.Client.Create(ctx, builders.RayService("refused", ns).ServeConfig("applications: [").Obj())
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the invalid RayService must be refused: %v", err)
		time.Sleep(5 * scrapeInterval) // Prometheus scrapes what happened last
		end := time.Now()

		By("the variables offer the operator's job, the namespace and the RayService")
		values := grafanaRange{Range: end.Sub(start).Truncate(time.Second), Step: time.Second, Scrape: scrapeInterval}.builtins()
		chosen := map[string]string{"job": metricsJob, "namespace": ns, "rayservice": name}
		for _, v := range vars {
			Expect(chosen).To(HaveKey(v.Name), "a value for the variable %s", v.Name)
			selector, err := substitute(v.Selector, values)
			Expect(err).NotTo(HaveOccurred())
			offered, _, err := prom.API().LabelValues(ctx, v.Label, []string{selector}, start, end)
			Expect(err).NotTo(HaveOccurred())
			Expect(offered).To(ContainElement(model.LabelValue(chosen[v.Name])), "the variable %s (%s)", v.Name, selector)
			values[v.Name] = regexValue(chosen[v.Name])
		}

		By("every panel query returns a series with a value")
		var empty []string
		for _, q := range queries {
			expr, err := substitute(q.Target.Expr, values)
			Expect(err).NotTo(HaveOccurred(), "%s", q)
			n, err := seriesWithValues(ctx, prom.API(), q.Target.Instant, expr, promv1.Range{Start: start, End: end, Step: time.Second})
			Expect(err).NotTo(HaveOccurred(), "%s: %s", q, expr)
			GinkgoWriter.Printf("%-60s %d series: %s\n", q, n, expr)
			if n == 0 {
				empty = append(empty, fmt.Sprintf("%s: %s", q, expr))
			}
		}
		Expect(empty).To(BeEmpty(), "panels without data:\n%s", strings.Join(empty, "\n"))

		By("the alerts evaluate on the live series, and the operator's stay inactive")
		res, err := prom.API().Rules(ctx)
		Expect(err).NotTo(HaveOccurred())
		states := map[string]string{}
		for _, g := range res.Groups {
			for _, r := range g.Rules {
				if a, ok := r.(promv1.AlertingRule); ok {
					Expect(a.Health).To(Equal(promv1.RuleHealth(promv1.RuleHealthGood)), "%s: %s", a.Name, a.LastError)
					states[a.Name] = string(a.State)
				}
			}
		}
		Expect(states).To(HaveLen(len(file.alertNames())), "every alert is loaded")
		Expect(states).To(HaveKeyWithValue("RaygateOperatorDown", "inactive"))
		Expect(states).To(HaveKeyWithValue("RaygateNotLeading", "inactive"))
		Expect(states).To(HaveKeyWithValue("RayServiceUpgradeStuck", "inactive"))

		By("the operator's documented PromQL examples evaluate on the live series")
		examples, err := docqueries.Read(operatorQueryDocs...)
		Expect(err).NotTo(HaveOccurred())
		checked := 0
		for _, ex := range examples {
			if ex.Kind != docqueries.PromQL || ex.HasPlaceholders() || !strings.Contains(ex.Query, "raygate_") && !strings.Contains(ex.Query, "kuberay_") {
				continue // gate queries and Ray's own series: the gateway and raysim tests run them
			}
			checked++
			n, err := seriesWithValues(ctx, prom.API(), true, ex.Query, promv1.Range{End: time.Now()})
			Expect(err).NotTo(HaveOccurred(), "%s: %s", ex.Where(), ex.Query)
			GinkgoWriter.Printf("%-60s %d series: %s\n", ex.Where(), n, ex.Query)
			switch {
			case strings.Contains(ex.Query, "raygate_service_upgrade_duration_seconds_bucket"):
				Expect(n).To(BeNumerically(">", 0), "%s: the promoted upgrade must show in the SLO query", ex.Where())
			case strings.Contains(ex.Query, "raygate_service_upgrade_expected_duration_seconds"):
				Expect(file.alertExprs()).To(ContainElement(normalizeSpace(ex.Query)), "%s: the stuck-upgrade rule as documented must be the rule the chart renders", ex.Where())
			}
		}
		Expect(checked).To(BeNumerically(">=", 3), "the SLO, stuck-upgrade and RayJob examples are found in the docs")

		rstest.SetAction(ctx, env.Client, ns, name, rayv1.UpgradeActionResume, "")
	})
})

// operatorQueryDocs are the documents whose PromQL examples read the operator's own series.
var operatorQueryDocs = []string{"docs/rayservice.md", "docs/monitoring.md", "docs/rayjob.md"}

// seriesWithValues runs a panel's query as Grafana does (a range query over the dashboard's
// time range, or an instant one at its end) and counts the series with at least one value
// that is a number: a histogram_quantile over no observations is NaN, which draws nothing.
func seriesWithValues(ctx context.Context, api promv1.API, instant bool, expr string, r promv1.Range) (int, error) {
	if instant {
		v, _, err := api.Query(ctx, expr, r.End)
		if err != nil {
			return 0, err
		}
		vec, ok := v.(model.Vector)
		if !ok {
			return 0, fmt.Errorf("an instant query returned %s", v.Type())
		}
		return len(slices.DeleteFunc(vec, func(s *model.Sample) bool { return math.IsNaN(float64(s.Value)) })), nil
	}
	v, _, err := api.QueryRange(ctx, expr, r)
	if err != nil {
		return 0, err
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return 0, fmt.Errorf("a range query returned %s", v.Type())
	}
	n := 0
	for _, s := range m {
		if slices.ContainsFunc(s.Values, func(p model.SamplePair) bool { return !math.IsNaN(float64(p.Value)) }) {
			n++
		}
	}
	return n, nil
}
