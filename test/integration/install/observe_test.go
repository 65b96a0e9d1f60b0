package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var _ = Describe("the chart's monitoring objects", func() {
	It("renders the dashboard and the PrometheusRule only when enabled", func() {
		objs := render("--set", "metrics.serviceMonitor.enabled=true")
		Expect(objs.ofKind("PrometheusRule")).To(BeEmpty())
		Expect(objs.get("ConfigMap", "raygate-dashboard")).To(BeNil())

		on := render("--set", "metrics.dashboard.enabled=true", "--set", "metrics.prometheusRule.enabled=true")
		Expect(on.ofKind("PrometheusRule")).To(HaveLen(1))
		Expect(on.get("ConfigMap", "raygate-dashboard")).NotTo(BeNil())
	})

	It("verifies the metrics endpoint with the cert-manager CA, skips verifying only without cert-manager, and takes metrics.serviceMonitor.tlsConfig as given", func() {
		tlsConfig := func(objs objects) any {
			sm := objs.ofKind("ServiceMonitor")
			Expect(sm).To(HaveLen(1))
			endpoints := nested[[]any](sm[0], "spec", "endpoints")
			Expect(endpoints).To(HaveLen(1))
			return endpoints[0].(map[string]any)["tlsConfig"]
		}
		monitored := func(args ...string) objects {
			return render(append([]string{"--set", "metrics.serviceMonitor.enabled=true"}, args...)...)
		}
		metricsService := "raygate-metrics." + releaseNS + ".svc"

		By("with cert-manager: the operator serves the certificate that names the metrics Service, and the scrape checks it")
		objs := monitored()
		Expect(tlsConfig(objs)).To(Equal(map[string]any{
			"ca": map[string]any{"secret": map[string]any{"name": "raygate-webhook-tls", "key": "ca.crt"}}, "serverName": metricsService,
		}))
		Expect(objs.deployment().Spec.Template.Spec.Containers[0].Args).To(ContainElement("--metrics-cert-dir=/etc/raygate/webhook-certs"))
		cert := objs.get("Certificate", "raygate-webhook-cert")
		Expect(cert).NotTo(BeNil())
		Expect(nested[[]any](cert, "spec", "dnsNames")).To(ContainElements(metricsService, metricsService+".cluster.local"))

		By("without cert-manager: a self-signed metrics certificate, not verified")
		byo := monitored("-f", filepath.Join(chartDir, "ci", "byo-cert-values.yaml"))
		Expect(tlsConfig(byo)).To(Equal(map[string]any{"insecureSkipVerify": true}))
		Expect(byo.deployment().Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--metrics-cert-dir")))

		By("a tlsConfig of the admin's own replaces the chart's")
		Expect(tlsConfig(monitored("--set-json", `metrics.serviceMonitor.tlsConfig={"ca":{"secret":{"name":"raygate-metrics-ca","key":"ca.crt"}},"serverName":"raygate-metrics.raygate-system.svc"}`))).To(Equal(map[string]any{
			"ca": map[string]any{"secret": map[string]any{"name": "raygate-metrics-ca", "key": "ca.crt"}}, "serverName": "raygate-metrics.raygate-system.svc",
		}))
	})

	It("keeps the series' own namespace label when Prometheus scrapes (honorLabels)", func() {
		sm := render("--set", "metrics.serviceMonitor.enabled=true").ofKind("ServiceMonitor")
		Expect(sm).To(HaveLen(1))
		Expect(sm[0].Object["spec"]).To(HaveKeyWithValue("endpoints", ContainElement(HaveKeyWithValue("honorLabels", true))))
	})

	It("ships the dashboard JSON unchanged for the Grafana sidecar, under the configured label", func() {
		want, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "raygate.json"))
		Expect(err).NotTo(HaveOccurred())
		cm := render("--set", "metrics.dashboard.enabled=true").get("ConfigMap", "raygate-dashboard")
		Expect(cm.GetNamespace()).To(Equal(releaseNS))
		Expect(cm.GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"))
		data := nested[map[string]any](cm, "data")
		Expect(data).To(HaveKey("raygate.json"))
		var got, exp any
		Expect(json.Unmarshal([]byte(data["raygate.json"].(string)), &got)).To(Succeed())
		Expect(json.Unmarshal(want, &exp)).To(Succeed())
		Expect(got).To(Equal(exp))

		custom := render("--set", "metrics.dashboard.enabled=true", "--set", "metrics.dashboard.label=grafana.example.com/dashboard",
			"--set-string", "metrics.dashboard.labelValue=yes", "--set", "metrics.dashboard.namespace=monitoring",
			"--set", "metrics.dashboard.folder=Ray").get("ConfigMap", "raygate-dashboard")
		Expect(custom.GetNamespace()).To(Equal("monitoring"))
		Expect(custom.GetLabels()).To(HaveKeyWithValue("grafana.example.com/dashboard", "yes"))
		Expect(custom.GetLabels()).NotTo(HaveKey("grafana_dashboard"))
		Expect(custom.GetAnnotations()).To(HaveKeyWithValue("grafana_folder", "Ray"))
	})

	It("gives every alert a severity and a runbook section that exists in docs/runbooks.md", func() {
		runbooks, err := os.ReadFile(filepath.Join(repoRoot, "docs", "runbooks.md"))
		Expect(err).NotTo(HaveOccurred())
		rule := render("--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.prometheusRule.labels.release=kps").ofKind("PrometheusRule")[0]
		Expect(rule.GetLabels()).To(HaveKeyWithValue("release", "kps"))
		alerts := alertsOf(rule)
		Expect(alerts).To(HaveKey("RaygateOperatorDown"))
		Expect(alerts).To(HaveLen(8))
		for name, r := range alerts {
			Expect(r.Labels).To(HaveKeyWithValue("severity", BeElementOf("critical", "warning", "info")), name)
			Expect(r.Annotations["runbook_url"]).To(Equal("https://github.com/raygate/raygate/blob/main/docs/runbooks.md#"+strings.ToLower(name)), name)
			Expect(string(runbooks)).To(MatchRegexp(`(?m)^## `+regexp.QuoteMeta(name)+`$`), "docs/runbooks.md lacks a section for %s", name)
			Expect(r.Expr).To(ContainSubstring(`job="raygate-metrics"`), "%s selects the operator's series", name)
			Expect(r.Annotations["summary"]).NotTo(BeEmpty(), name)
		}
		Expect(alerts["RaygateNotLeading"].Expr).To(ContainSubstring(`name="raygate.ray.io"`))
	})

	It("derives the stuck-upgrade alert from the RayService's pacing, with the slack from values, and never while paused", func() {
		stuck := alertsOf(render("--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.prometheusRule.upgradeStuckSlackSeconds=1800").
			ofKind("PrometheusRule")[0])["RayServiceUpgradeStuck"]
		Expect(stuck.Expr).To(ContainSubstring("raygate_service_upgrade_expected_duration_seconds"))
		Expect(stuck.Expr).To(ContainSubstring("+ 1800)"))
		Expect(stuck.Expr).To(MatchRegexp(`unless on\(namespace, name, uid\)\s+\(max by \(namespace, name, uid\) \(raygate_service_upgrade_action\{[^}]*reason="UpgradePaused"\}\) == 1\)`))
	})

	DescribeTable("refuses monitoring values outside the schema",
		func(args ...string) {
			_, err := runHelm(append([]string{"template", release, chartDir, "--namespace", releaseNS}, args...)...)
			Expect(err).To(MatchError(ContainSubstring("schema")))
		},
		Entry("an unknown dashboard key", "--set", "metrics.dashboard.labels.a=b"),
		Entry("a label key Kubernetes refuses", "--set", "metrics.dashboard.label=not a label"),
		Entry("a negative slack", "--set", "metrics.prometheusRule.upgradeStuckSlackSeconds=-1"),
		Entry("a ratio above 1", "--set", "metrics.prometheusRule.reconcileErrorRatio=2"),
		Entry("a duration without unit", "--set", "metrics.prometheusRule.notReadyFor=10"),
		Entry("a runbook URL with a fragment", "--set", "metrics.prometheusRule.runbookBaseURL=https://x/runbooks.md#top"),
	)
})

type alertRule struct {
	Expr        string
	Labels      map[string]string
	Annotations map[string]string
}

// alertsOf reads a PrometheusRule's alerts by name.
func alertsOf(rule *unstructured.Unstructured) map[string]alertRule {
	out := map[string]alertRule{}
	for _, g := range nested[[]any](rule, "spec", "groups") {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			m := r.(map[string]any)
			a := alertRule{Expr: m["expr"].(string), Labels: map[string]string{}, Annotations: map[string]string{}}
			for k, v := range m["labels"].(map[string]any) {
				a.Labels[k] = v.(string)
			}
			for k, v := range m["annotations"].(map[string]any) {
				a.Annotations[k] = v.(string)
			}
			out[m["alert"].(string)] = a
		}
	}
	return out
}
