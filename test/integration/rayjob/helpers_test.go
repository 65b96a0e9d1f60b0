package rayjob

import (
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/framework"
)

func ptrTo[T any](v T) *T { return &v }

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func clientInNamespace(ns string) client.ListOption { return client.InNamespace(ns) }

func clientLabels(l map[string]string) client.ListOption { return client.MatchingLabels(l) }

// jobMetrics are a RayJob's KubeRay metrics: "info" (kuberay_job_info), one entry per
// deployment status series (kuberay_job_deployment_status), and "execution" when
// kuberay_job_execution_duration_seconds has a series.
func jobMetrics(ns, name string) map[string]float64 {
	out := map[string]float64{}
	_, values, err := framework.MetricSeries("kuberay_job_info", ns, name)
	Expect(err).NotTo(HaveOccurred())
	for _, v := range values {
		out["info"] = v
	}
	labels, values, err := framework.MetricSeries("kuberay_job_deployment_status", ns, name)
	Expect(err).NotTo(HaveOccurred())
	for i, l := range labels {
		out[l["deployment_status"]] = values[i]
	}
	_, values, err = framework.MetricSeries("kuberay_job_execution_duration_seconds", ns, name)
	Expect(err).NotTo(HaveOccurred())
	if len(values) > 0 {
		out["execution"] = values[len(values)-1]
	}
	return out
}
