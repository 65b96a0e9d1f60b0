package raycluster

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/promgauge"
)

// Metrics are the RayCluster metrics, with KubeRay's names and labels so existing dashboards
// work. They are registered on controller-runtime's registry (served on /metrics next to
// its reconcile metrics).
//
// The series are made at each scrape from the RayClusters in the informer cache, as
// kube-state-metrics does, instead of being kept in gauge vectors the reconciler sets: kept
// series (three per cluster) held live heap in proportion to the fleet, and twice as much at
// the GC's peak (docs/benchmarks.md), and each update had to look through every series. A
// deleted cluster's series go with it from the cache, and a restarted operator reports every
// cluster at once, its provisioning time included.
type Metrics struct {
	provisionedDuration *prometheus.Desc
	info                *prometheus.Desc
	provisioned         *prometheus.Desc

	mu       sync.RWMutex
	clusters client.Reader   // the informer cache
	elected  <-chan struct{} // closed once this replica leads
}

// processMetrics is the one collector of the process. Managers started in the same process
// (tests run several) register their cache in turn, instead of a later manager's
// registration hiding an earlier one's series.
var processMetrics = NewMetrics()

// scrapeListTimeout bounds a scrape's read of the cache (it waits for the cache to sync).
const scrapeListTimeout = 10 * time.Second

// NewMetrics creates the metrics; Register adds them to a registry.
func NewMetrics() *Metrics {
	labels := []string{"name", "namespace", "uid"}
	return &Metrics{
		provisionedDuration: prometheus.NewDesc("kuberay_cluster_provisioned_duration_seconds",
			"Seconds from a RayCluster's creation until its RayClusterProvisioned condition last became true.", labels, nil),
		info: prometheus.NewDesc("kuberay_cluster_info",
			"Metadata of RayClusters; owner_kind is RayService, RayJob or None.", append(labels, "owner_kind"), nil),
		provisioned: prometheus.NewDesc("kuberay_cluster_condition_provisioned",
			"Whether a RayCluster is provisioned (the condition label is true or false).", append(labels, "condition"), nil),
	}
}

// Register adds the metrics to reg, made from the RayClusters clusters holds, once elected
// is closed: only the leader reconciles, so only the leader reports (a nil elected: at
// once). A later Register replaces an earlier manager's.
func (m *Metrics) Register(reg prometheus.Registerer, clusters client.Reader, elected <-chan struct{}) error {
	m.mu.Lock()
	m.clusters, m.elected = clusters, elected
	m.mu.Unlock()
	return promgauge.Register(reg, m)
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.provisionedDuration
	ch <- m.info
	ch <- m.provisioned
}

// Collect implements prometheus.Collector: the series of every RayCluster this operator
// reconciles.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.RLock()
	clusters, elected := m.clusters, m.elected
	m.mu.RUnlock()
	if clusters == nil || !closed(elected) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeListTimeout)
	defer cancel()
	var list rayv1.RayClusterList
	// Read only, so no deep copies: the items share their contents with the cache.
	if err := clusters.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(m.info, err)
		return
	}
	for i := range list.Items {
		m.collectCluster(ch, &list.Items[i])
	}
}

func closed(c <-chan struct{}) bool {
	if c == nil {
		return true
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// collectCluster sends what a RayCluster reports: nothing when another controller manages
// it; its info and whether it is provisioned; and, once RayClusterProvisioned is true, the
// seconds from its creation until the condition last turned true (whole seconds: both times
// are stored to the second).
func (m *Metrics) collectCluster(ch chan<- prometheus.Metric, rc *rayv1.RayCluster) {
	if managedByOther(rc) {
		return
	}
	uid := string(rc.UID)
	owner := rc.Labels[rayv1.OriginatedFromCRDLabelKey]
	if owner == "" {
		owner = "None"
	}
	c := meta.FindStatusCondition(rc.Status.Conditions, string(rayv1.RayClusterProvisioned))
	provisioned := c != nil && c.Status == metav1.ConditionTrue
	ch <- prometheus.MustNewConstMetric(m.info, prometheus.GaugeValue, 1, rc.Name, rc.Namespace, uid, owner)
	ch <- prometheus.MustNewConstMetric(m.provisioned, prometheus.GaugeValue, 1, rc.Name, rc.Namespace, uid, strconv.FormatBool(provisioned))
	if provisioned && !c.LastTransitionTime.Before(&rc.CreationTimestamp) {
		ch <- prometheus.MustNewConstMetric(m.provisionedDuration, prometheus.GaugeValue,
			c.LastTransitionTime.Sub(rc.CreationTimestamp.Time).Seconds(), rc.Name, rc.Namespace, uid)
	}
}
