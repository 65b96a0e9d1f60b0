package rayjob

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/promgauge"
)

// Metrics are KubeRay's three RayJob metrics, with its names, help texts and labels, so
// dashboards and alerts written for KubeRay work:
//
//   - kuberay_job_info{name,namespace,uid}: 1 per RayJob;
//   - kuberay_job_deployment_status{name,namespace,uid,deployment_status}: 1 for the
//     RayJob's current jobDeploymentStatus (KubeRay lists RayJobs at every scrape; raygate
//     sets the series when a pass records a status, which gives the same series);
//   - kuberay_job_execution_duration_seconds{name,namespace,uid,job_deployment_status,
//     retry_count}: the seconds from the attempt's start to its end, set when an attempt
//     ends in Complete, Failed or Retrying (plan.MetricFacts.Execution).
//
// A RayJob's series go when it is deleted (Forget), and when one with the same name is
// created again under another uid.
type Metrics struct {
	info             *prometheus.GaugeVec
	deploymentStatus *prometheus.GaugeVec
	execution        *prometheus.GaugeVec

	mu sync.Mutex
	// seen is, per RayJob, the uid and deployment status its series carry.
	seen map[types.NamespacedName]seenJob
}

type seenJob struct {
	uid    types.UID
	status rayv1.JobDeploymentStatus
}

// NewMetrics creates the metrics; Register adds them to a registry.
func NewMetrics() *Metrics {
	labels := []string{"name", "namespace", "uid"}
	return &Metrics{
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kuberay_job_info",
			Help: "Metadata information about RayJob custom resources",
		}, labels),
		deploymentStatus: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kuberay_job_deployment_status",
			Help: "The RayJob's current deployment status",
		}, append(labels, "deployment_status")),
		execution: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kuberay_job_execution_duration_seconds",
			Help: "Duration from when the RayJob CR’s JobDeploymentStatus transitions from Initializing to either the Retrying state or a terminal state, such as Complete or Failed. The Retrying state indicates that the CR previously failed and that spec.backoffLimit is enabled.",
		}, append(labels, "job_deployment_status", "retry_count")),
		seen: map[types.NamespacedName]seenJob{},
	}
}

// Register adds the metrics to reg, replacing those of an earlier manager in the process.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	return promgauge.Register(reg, m.info, m.deploymentStatus, m.execution)
}

// Observe sets a RayJob's info and deployment status series from its status (every pass,
// also for a RayJob another controller manages, as KubeRay counts every RayJob).
func (m *Metrics) Observe(job *rayv1.RayJob) {
	key := types.NamespacedName{Namespace: job.Namespace, Name: job.Name}
	uid, status := string(job.UID), job.Status.JobDeploymentStatus
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.seen[key]; ok {
		if prev.uid != job.UID {
			m.forget(key)
		} else if prev.status != status {
			m.deploymentStatus.DeleteLabelValues(job.Name, job.Namespace, uid, string(prev.status))
		}
	}
	m.seen[key] = seenJob{uid: job.UID, status: status}
	m.info.WithLabelValues(job.Name, job.Namespace, uid).Set(1)
	m.deploymentStatus.WithLabelValues(job.Name, job.Namespace, uid, string(status)).Set(1)
}

// Record counts a pass's metric facts, once its status is stored.
func (m *Metrics) Record(job *rayv1.RayJob, facts plan.MetricFacts) {
	if e := facts.Execution; e != nil {
		m.execution.WithLabelValues(job.Name, job.Namespace, string(job.UID), string(e.DeploymentStatus), strconv.Itoa(e.RetryCount)).Set(e.Seconds)
	}
}

// Forget removes every series of a deleted RayJob.
func (m *Metrics) Forget(namespace, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forget(types.NamespacedName{Namespace: namespace, Name: name})
}

func (m *Metrics) forget(key types.NamespacedName) {
	delete(m.seen, key)
	for _, v := range []*prometheus.GaugeVec{m.info, m.deploymentStatus, m.execution} {
		v.DeletePartialMatch(prometheus.Labels{"name": key.Name, "namespace": key.Namespace})
	}
}
