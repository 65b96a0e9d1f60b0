package rayservice

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/promgauge"
)

// Metrics are the RayService metrics: KubeRay's three (same names and labels, so existing
// dashboards work) and raygate's upgrade progress — the rollback condition and, per cluster
// role, the traffic share and Serve target capacity — so a platform team can graph and alert
// on an upgrade without reading statuses. Every per-RayService series carries the object's
// name, namespace and uid, as KubeRay's do, so a RayService deleted and created again under
// the same name starts new series. A RayService's series go when it is deleted.
type Metrics struct {
	info        *prometheus.GaugeVec
	ready       *prometheus.GaugeVec
	upgrading   *prometheus.GaugeVec
	rollingBack *prometheus.GaugeVec
	traffic     *prometheus.GaugeVec
	capacity    *prometheus.GaugeVec
	// upgrades are finished upgrades by strategy and result, without per-object labels, for
	// SLOs over many RayServices; the per-object story is in the events.
	upgrades *prometheus.HistogramVec
	// action is 1 for the UpgradeAction condition's reason while it is present (paused,
	// aborting, aborted, promoting, resumed); actions counts the actions taken up, by action.
	action  *prometheus.GaugeVec
	actions *prometheus.CounterVec
	// gateFailures counts failed metric gates.
	gateFailures *prometheus.CounterVec
	// upgradeStart and upgradeExpected are the clock of an upgrade in progress, for the
	// "upgrade stuck" alert: time() - start > expected + slack (see expectedUpgrade).
	upgradeStart    *prometheus.GaugeVec
	upgradeExpected *prometheus.GaugeVec

	mu sync.Mutex
	// uids are the uid each RayService's series carry, so the series of an object deleted
	// and created again before a pass saw it gone are replaced, not kept beside the new ones.
	uids map[types.NamespacedName]types.UID
}

// Roles label the traffic and capacity series: the serving cluster and the one being
// prepared (present only during an upgrade).
const (
	roleActive  = "active"
	rolePending = "pending"
)

// processMetrics is the one set the process's reconcilers observe into. Managers started
// in the same process (tests run several, against different API servers) then share the
// registered collectors, instead of a later manager's registration hiding an earlier one's
// series.
var processMetrics = NewMetrics()

// NewMetrics creates the metrics; Register adds them to a registry.
func NewMetrics() *Metrics {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, append([]string{"name", "namespace", "uid"}, labels...))
	}
	m := &Metrics{
		info:        gauge("kuberay_service_info", "Metadata of RayServices (always 1)."),
		ready:       gauge("kuberay_service_condition_ready", "Whether a RayService is Ready: it serves through at least one serve endpoint (the condition label is true or false).", "condition"),
		upgrading:   gauge("kuberay_service_condition_upgrade_in_progress", "Whether a RayService is upgrading: a pending cluster exists (the condition label is true or false).", "condition"),
		rollingBack: gauge("raygate_service_condition_rollback_in_progress", "Whether a RayService is moving traffic and capacity back to its active cluster (the condition label is true or false).", "condition"),
		traffic:     gauge("raygate_service_traffic_routed_percent", "Share of the HTTPRoute's traffic sent to the RayService's active or pending cluster (incremental upgrades only).", "role"),
		capacity:    gauge("raygate_service_target_capacity_percent", "Serve target_capacity set on the RayService's active or pending cluster (incremental upgrades only).", "role"),
		upgrades: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "raygate_service_upgrade_duration_seconds",
			Help: "Seconds from the pending cluster's creation until it was promoted, or until a rollback dropped it.",
			// From a few seconds (small clusters, short intervals) to hours (large models).
			Buckets: []float64{30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400},
		}, []string{"strategy", "result"}),
		action: gauge("raygate_service_upgrade_action", "1 while an upgrade action holds a RayService's upgrade; the reason label says which (UpgradePaused, UpgradeAborting, UpgradeAborted, UpgradePromoting, UpgradeResumed).", "reason"),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raygate_service_upgrade_actions_total",
			Help: "Upgrade actions (raygate.ray.io/upgrade-action) the RayService controller took up, by action.",
		}, []string{"action"}),
		gateFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raygate_service_upgrade_gate_failures_total",
			Help: "Metric gates (UpgradePolicy) that failed during an incremental upgrade, by namespace, gate and the action taken (pause or abort).",
		}, []string{"namespace", "gate", "action"}),
		upgradeStart:    gauge("raygate_service_upgrade_start_time_seconds", "Unix time the RayService's upgrade in progress started (UpgradeInProgress became true); present only during an upgrade."),
		upgradeExpected: gauge("raygate_service_upgrade_expected_duration_seconds", "How long the RayService's upgrade in progress should take from its start at its own pacing: the time until its last traffic step or upgrade action, plus intervalSeconds per traffic step left (0 for NewCluster); present only during an upgrade."),
		uids:            map[types.NamespacedName]types.UID{},
	}
	m.initCounters()
	return m
}

// initCounters creates the finished-upgrade and action series at zero: a series that a
// first observation creates at 1 has no earlier sample, so rate() and increase() miss that
// upgrade or action, and the dashboard's duration and count panels stay empty until the
// second one.
func (m *Metrics) initCounters() {
	for _, strategy := range []rayv1.RayServiceUpgradeType{rayv1.NewCluster, rayv1.NewClusterWithIncrementalUpgrade} {
		for _, result := range []string{plan.ResultPromoted, plan.ResultRolledBack} {
			m.upgrades.WithLabelValues(string(strategy), result)
		}
	}
	for _, action := range rayv1.UpgradeActions {
		m.actions.WithLabelValues(action)
	}
}

func (m *Metrics) vecs() []*prometheus.GaugeVec {
	return []*prometheus.GaugeVec{m.info, m.ready, m.upgrading, m.rollingBack, m.traffic, m.capacity, m.action, m.upgradeStart, m.upgradeExpected}
}

// Register adds the metrics to reg, replacing those of an earlier manager in the process.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	cs := []prometheus.Collector{m.upgrades, m.actions, m.gateFailures}
	for _, v := range m.vecs() {
		cs = append(cs, v)
	}
	return promgauge.Register(reg, cs...)
}

// Observe records a RayService's status as computed by the last pass.
func (m *Metrics) Observe(svc *rayv1.RayService) {
	name, ns, uid, st := svc.Name, svc.Namespace, string(svc.UID), &svc.Status
	key := types.NamespacedName{Namespace: ns, Name: name}
	m.mu.Lock()
	if prev, ok := m.uids[key]; ok && prev != svc.UID {
		m.forget(ns, name)
	}
	m.uids[key] = svc.UID
	m.mu.Unlock()
	m.info.WithLabelValues(name, ns, uid).Set(1)
	for v, t := range map[*prometheus.GaugeVec]rayv1.RayServiceConditionType{
		m.ready: rayv1.RayServiceReady, m.upgrading: rayv1.UpgradeInProgress, m.rollingBack: rayv1.RollbackInProgress,
	} {
		promgauge.SetCondition(v, meta.IsStatusConditionTrue(st.Conditions, string(t)), name, ns, uid)
	}
	current := ""
	if c := meta.FindStatusCondition(st.Conditions, string(rayv1.UpgradeAction)); c != nil {
		current = c.Reason
		m.action.WithLabelValues(name, ns, uid, current).Set(1)
	}
	for _, reason := range plan.UpgradeActionReasons {
		if reason != current {
			m.action.DeleteLabelValues(name, ns, uid, reason)
		}
	}
	for role, cs := range map[string]*rayv1.RayServiceStatus{roleActive: &st.ActiveServiceStatus, rolePending: &st.PendingServiceStatus} {
		var traffic, capacity *int32
		if cs.RayClusterName != "" {
			traffic, capacity = cs.TrafficRoutedPercent, cs.TargetCapacity
		}
		setPercent(m.traffic, traffic, name, ns, uid, role)
		setPercent(m.capacity, capacity, name, ns, uid, role)
	}
	if c, ok := plan.UpgradeClockOf(svc); ok {
		m.upgradeStart.WithLabelValues(name, ns, uid).Set(float64(c.Start.UnixMilli()) / 1000)
		m.upgradeExpected.WithLabelValues(name, ns, uid).Set(c.Expected.Seconds())
	} else {
		m.upgradeStart.DeleteLabelValues(name, ns, uid)
		m.upgradeExpected.DeleteLabelValues(name, ns, uid)
	}
}

// setPercent sets a series, or removes it when there is no value to report.
func setPercent(v *prometheus.GaugeVec, percent *int32, labels ...string) {
	if percent == nil {
		v.DeleteLabelValues(labels...)
		return
	}
	v.WithLabelValues(labels...).Set(float64(*percent))
}

// UpgradeFinished records an upgrade that ended: the pending cluster was promoted or,
// after a rollback, dropped.
func (m *Metrics) UpgradeFinished(strategy rayv1.RayServiceUpgradeType, result string, seconds float64) {
	m.upgrades.WithLabelValues(string(strategy), result).Observe(seconds)
}

// UpgradeAction counts an upgrade action the controller took up.
func (m *Metrics) UpgradeAction(action string) {
	m.actions.WithLabelValues(action).Inc()
}

// GateFailed counts a failed metric gate and the action it took.
func (m *Metrics) GateFailed(namespace, gate, action string) {
	m.gateFailures.WithLabelValues(namespace, gate, action).Inc()
}

// Forget removes every series of a deleted RayService.
func (m *Metrics) Forget(namespace, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.uids, types.NamespacedName{Namespace: namespace, Name: name})
	m.forget(namespace, name)
}

func (m *Metrics) forget(namespace, name string) {
	for _, v := range m.vecs() {
		v.DeletePartialMatch(prometheus.Labels{"name": name, "namespace": namespace})
	}
}
