package install

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/test/builders"
)

var _ = Describe("the chart's PodMonitor for Ray's own metrics", func() {
	podMonitor := func(args ...string) objects {
		GinkgoHelper()
		return render(append([]string{"--set", "rayMetrics.podMonitor.enabled=true"}, args...)...).ofKind("PodMonitor")
	}

	It("is off by default", func() {
		Expect(render().ofKind("PodMonitor")).To(BeEmpty())
	})

	It("scrapes the port named metrics of every head and worker pod raygate builds, in every namespace", func() {
		pms := podMonitor()
		Expect(pms).To(HaveLen(1))
		pm := pms[0]
		Expect(pm.GetNamespace()).To(Equal(releaseNS))
		Expect(nested[map[string]any](pm, "spec", "namespaceSelector")).To(Equal(map[string]any{"any": true}))

		endpoints := nested[[]any](pm, "spec", "podMetricsEndpoints")
		Expect(endpoints).To(HaveLen(1))
		ep := endpoints[0].(map[string]any)
		Expect(ep).To(HaveKeyWithValue("port", rayspec.MetricsPortName))
		Expect(ep).To(HaveKeyWithValue("path", "/metrics"))
		Expect(ep).To(HaveKeyWithValue("interval", "30s"))
		Expect(ep["relabelings"]).To(ContainElements(
			map[string]any{"sourceLabels": []any{"__meta_kubernetes_pod_label_ray_io_cluster"}, "targetLabel": "ray_io_cluster"},
			map[string]any{"sourceLabels": []any{"__meta_kubernetes_pod_label_ray_io_node_type"}, "targetLabel": "ray_io_node_type"},
		))

		// The selector and the port against the pods the controller really creates.
		matchLabels := map[string]string{}
		for k, v := range nested[map[string]any](pm, "spec", "selector", "matchLabels") {
			matchLabels[k] = v.(string)
		}
		selector := labels.SelectorFromSet(matchLabels)
		rc := builders.RayCluster("scraped", "team-a").Obj()
		Expect(rc.Spec.WorkerGroupSpecs).NotTo(BeEmpty())
		for _, pod := range []*corev1.Pod{raypod.HeadPod(rc, "", raypod.Settings{}), raypod.WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, raypod.Settings{})} {
			Expect(selector.Matches(labels.Set(pod.Labels))).To(BeTrue(), "%s pod labels %v", pod.Labels[rayv1.NodeTypeLabelKey], pod.Labels)
			Expect(pod.Spec.Containers[rayv1.RayContainerIndex].Ports).To(ContainElement(And(
				HaveField("Name", rayspec.MetricsPortName), HaveField("ContainerPort", BeEquivalentTo(rayspec.DefaultMetricsPort)))), "%s pod", pod.Labels[rayv1.NodeTypeLabelKey])
		}
	})

	It("keeps to the watched namespaces, or the ones listed, and takes its namespace, interval and labels from values", func() {
		Expect(nested[map[string]any](podMonitor("--set", "watchNamespaces={team-a,team-b}")[0], "spec", "namespaceSelector")).To(Equal(
			map[string]any{"matchNames": []any{"team-a", "team-b"}}))
		pm := podMonitor("--set", "watchNamespaces={team-a}", "--set", "rayMetrics.podMonitor.namespaces={ml}",
			"--set", "rayMetrics.podMonitor.namespace=monitoring", "--set", "rayMetrics.podMonitor.interval=15s",
			"--set", "rayMetrics.podMonitor.labels.release=kube-prometheus-stack")[0]
		Expect(nested[map[string]any](pm, "spec", "namespaceSelector")).To(Equal(map[string]any{"matchNames": []any{"ml"}}))
		Expect(pm.GetNamespace()).To(Equal("monitoring"))
		Expect(pm.GetLabels()).To(HaveKeyWithValue("release", "kube-prometheus-stack"))
		Expect(nested[[]any](pm, "spec", "podMetricsEndpoints")[0]).To(HaveKeyWithValue("interval", "15s"))
	})

	DescribeTable("refuses values outside the schema",
		func(args ...string) {
			_, err := runHelm(append([]string{"template", release, chartDir, "--namespace", releaseNS}, args...)...)
			Expect(err).To(MatchError(ContainSubstring("schema")))
		},
		Entry("an unknown key", "--set", "rayMetrics.podMonitor.port=8080"),
		Entry("a namespace that is no DNS label", "--set", "rayMetrics.podMonitor.namespace=Monitoring"),
		Entry("an interval without unit", "--set", "rayMetrics.podMonitor.interval=30"),
	)
})
