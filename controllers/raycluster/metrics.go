package raycluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/promgauge"
)

// Metrics are the RayCluster metrics, with KubeRay's names and labels so existing dashboards
// work. They are registered on controller-runtime's registry (served on /metrics next to
// its reconcile metrics) and a cluster's series are removed when it is deleted.
type Metrics struct {
	provisionedDuration *prometheus.GaugeVec
	info                *prometheus.GaugeVec
	provisioned         *prometheus.GaugeVec
}

// processMetrics is the one set the process's reconcilers observe into. Managers started
// in the same process (tests run several) then share the registered collectors, instead of
// a later manager's registration hiding an earlier one's series.
var processMetrics = NewMetrics()

// NewMetrics creates the metrics; Register adds them to a registry.
func NewMetrics() *Metrics {
	return &Metrics{
		provisionedDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kuberay_cluster_provisioned_duration_seconds",
			Help: "Seconds from a RayCluster's creation until its RayClusterProvisioned condition first became true.",
		}, []string{"name", "namespace", "uid"}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kuberay_cluster_info",
			Help: "Metadata of RayClusters; owner_kind is RayService, RayJob or None.",
		}, []string{"name", "namespace", "uid", "owner_kind"}),
		provisioned: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kuberay_cluster_condition_provisioned",
			Help: "Whether a RayCluster is provisioned (the condition label is true or false).",
		}, []string{"name", "namespace", "uid", "condition"}),
	}
}

// Register adds the metrics to reg, replacing those of an earlier manager in the process.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	return promgauge.Register(reg, m.provisionedDuration, m.info, m.provisioned)
}

// Observe records a cluster's current state; provisionedAfter is >= 0 when the cluster just
// became provisioned, in seconds since its creation.
func (m *Metrics) Observe(rc *rayv1.RayCluster, provisionedAfter float64) {
	uid := string(rc.UID)
	owner := rc.Labels[rayv1.OriginatedFromCRDLabelKey]
	if owner == "" {
		owner = "None"
	}
	m.info.DeletePartialMatch(prometheus.Labels{"name": rc.Name, "namespace": rc.Namespace, "uid": uid})
	m.info.WithLabelValues(rc.Name, rc.Namespace, uid, owner).Set(1)
	promgauge.SetCondition(m.provisioned, meta.IsStatusConditionTrue(rc.Status.Conditions, string(rayv1.RayClusterProvisioned)), rc.Name, rc.Namespace, uid)
	if provisionedAfter >= 0 {
		m.provisionedDuration.WithLabelValues(rc.Name, rc.Namespace, uid).Set(provisionedAfter)
	}
}

// Forget removes every series of a deleted cluster.
func (m *Metrics) Forget(namespace, name string) {
	l := prometheus.Labels{"name": name, "namespace": namespace}
	for _, v := range []*prometheus.GaugeVec{m.provisionedDuration, m.info, m.provisioned} {
		v.DeletePartialMatch(l)
	}
}
