package raycluster

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

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

	mu sync.RWMutex
	// sources are the bound caches, newest last; a scrape reads the newest.
	sources []*source
}

// source is one bound cache.
type source struct{ clusters client.Reader }

// processMetrics is the one collector of the process. Managers started in the same process
// (tests run several, against different API servers) bind their caches in turn; one that
// stops hands the series back to the newest still running.
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

// Register adds the metrics to reg; they report nothing until a cache is bound (Bind,
// Source). A later Register replaces an earlier manager's.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	return promgauge.Register(reg, m)
}

// Bind makes the series from the RayClusters clusters holds until release is called. While
// several caches are bound, the newest is read.
func (m *Metrics) Bind(clusters client.Reader) (release func()) {
	s := &source{clusters: clusters}
	m.mu.Lock()
	m.sources = append(m.sources, s)
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.sources = slices.DeleteFunc(m.sources, func(b *source) bool { return b == s })
	}
}

// Source is the manager runnable that binds clusters, its manager's cache, while the manager
// leads and runs: only the leader reconciles, so only the leader reports, and a stopped
// manager's cache, which no longer follows the API server, is never read.
func (m *Metrics) Source(clusters client.Reader) manager.Runnable {
	return leaderSource{metrics: m, clusters: clusters}
}

type leaderSource struct {
	metrics  *Metrics
	clusters client.Reader
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: Start runs once elected.
func (leaderSource) NeedLeaderElection() bool { return true }

// Start binds the cache until the manager stops.
func (s leaderSource) Start(ctx context.Context) error {
	release := s.metrics.Bind(s.clusters)
	defer release()
	<-ctx.Done()
	return nil
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
	var clusters client.Reader
	if n := len(m.sources); n > 0 {
		clusters = m.sources[n-1].clusters
	}
	m.mu.RUnlock()
	if clusters == nil {
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
