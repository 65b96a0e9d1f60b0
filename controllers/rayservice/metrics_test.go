package rayservice

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
)

// seriesOf gathers the gauges of reg into sorted "name{l=v,...} value" lines (the per-
// RayService series; the upgrade and action counters start at zero for every label value).
func seriesOf(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetType() != dto.MetricType_GAUGE {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out = append(out, fmt.Sprintf("%s{%s} %g", f.GetName(), strings.Join(labels, ","), m.GetGauge().GetValue()))
		}
	}
	sort.Strings(out)
	return out
}

func serviceWith(conds map[rayv1.RayServiceConditionType]bool, active, pending rayv1.RayServiceStatus) *rayv1.RayService {
	svc := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "u1"}}
	for t, on := range conds {
		st := metav1.ConditionFalse
		if on {
			st = metav1.ConditionTrue
		}
		// A fixed transition time: the upgrade clock series show it.
		meta.SetStatusCondition(&svc.Status.Conditions, metav1.Condition{Type: string(t), Status: st, Reason: "R", LastTransitionTime: metav1.Unix(1000, 0)})
	}
	svc.Status.ActiveServiceStatus, svc.Status.PendingServiceStatus = active, pending
	return svc
}

func TestMetricsFollowAnUpgrade(t *testing.T) {
	const l, u = "name=s,namespace=ns", "uid=u1"
	cases := []struct {
		name string
		svc  *rayv1.RayService
		want []string
	}{{
		name: "NewCluster strategy, serving: no traffic or capacity series",
		svc: serviceWith(map[rayv1.RayServiceConditionType]bool{rayv1.RayServiceReady: true, rayv1.UpgradeInProgress: false},
			rayv1.RayServiceStatus{RayClusterName: "s-a"}, rayv1.RayServiceStatus{}),
		want: []string{
			"kuberay_service_condition_ready{condition=true," + l + "," + u + "} 1",
			"kuberay_service_condition_upgrade_in_progress{condition=false," + l + "," + u + "} 1",
			"kuberay_service_info{" + l + "," + u + "} 1",
			"raygate_service_condition_rollback_in_progress{condition=false," + l + "," + u + "} 1",
		},
	}, {
		name: "incremental upgrade half way",
		svc: serviceWith(map[rayv1.RayServiceConditionType]bool{rayv1.RayServiceReady: true, rayv1.UpgradeInProgress: true, rayv1.RollbackInProgress: false},
			rayv1.RayServiceStatus{RayClusterName: "s-a", TrafficRoutedPercent: ptr.To[int32](70), TargetCapacity: ptr.To[int32](100)},
			rayv1.RayServiceStatus{RayClusterName: "s-b", TrafficRoutedPercent: ptr.To[int32](30), TargetCapacity: ptr.To[int32](40)}),
		want: []string{
			"kuberay_service_condition_ready{condition=true," + l + "," + u + "} 1",
			"kuberay_service_condition_upgrade_in_progress{condition=true," + l + "," + u + "} 1",
			"kuberay_service_info{" + l + "," + u + "} 1",
			"raygate_service_condition_rollback_in_progress{condition=false," + l + "," + u + "} 1",
			"raygate_service_target_capacity_percent{" + l + ",role=active," + u + "} 100",
			"raygate_service_target_capacity_percent{" + l + ",role=pending," + u + "} 40",
			"raygate_service_traffic_routed_percent{" + l + ",role=active," + u + "} 70",
			"raygate_service_traffic_routed_percent{" + l + ",role=pending," + u + "} 30",
			"raygate_service_upgrade_expected_duration_seconds{" + l + "," + u + "} 0",
			"raygate_service_upgrade_start_time_seconds{" + l + "," + u + "} 1000",
		},
	}, {
		name: "rolling back",
		svc: serviceWith(map[rayv1.RayServiceConditionType]bool{rayv1.RayServiceReady: true, rayv1.UpgradeInProgress: true, rayv1.RollbackInProgress: true},
			rayv1.RayServiceStatus{RayClusterName: "s-a", TrafficRoutedPercent: ptr.To[int32](95), TargetCapacity: ptr.To[int32](100)},
			rayv1.RayServiceStatus{RayClusterName: "s-b", TrafficRoutedPercent: ptr.To[int32](5), TargetCapacity: ptr.To[int32](5)}),
		want: []string{
			"kuberay_service_condition_ready{condition=true," + l + "," + u + "} 1",
			"kuberay_service_condition_upgrade_in_progress{condition=true," + l + "," + u + "} 1",
			"kuberay_service_info{" + l + "," + u + "} 1",
			"raygate_service_condition_rollback_in_progress{condition=true," + l + "," + u + "} 1",
			"raygate_service_target_capacity_percent{" + l + ",role=active," + u + "} 100",
			"raygate_service_target_capacity_percent{" + l + ",role=pending," + u + "} 5",
			"raygate_service_traffic_routed_percent{" + l + ",role=active," + u + "} 95",
			"raygate_service_traffic_routed_percent{" + l + ",role=pending," + u + "} 5",
			"raygate_service_upgrade_expected_duration_seconds{" + l + "," + u + "} 0",
			"raygate_service_upgrade_start_time_seconds{" + l + "," + u + "} 1000",
		},
	}, {
		name: "promoted: the pending series are gone, the condition series flipped",
		svc: serviceWith(map[rayv1.RayServiceConditionType]bool{rayv1.RayServiceReady: true, rayv1.UpgradeInProgress: false},
			rayv1.RayServiceStatus{RayClusterName: "s-b", TrafficRoutedPercent: ptr.To[int32](100), TargetCapacity: ptr.To[int32](100)},
			// A stale percentage without a cluster is not reported.
			rayv1.RayServiceStatus{TrafficRoutedPercent: ptr.To[int32](0)}),
		want: []string{
			"kuberay_service_condition_ready{condition=true," + l + "," + u + "} 1",
			"kuberay_service_condition_upgrade_in_progress{condition=false," + l + "," + u + "} 1",
			"kuberay_service_info{" + l + "," + u + "} 1",
			"raygate_service_condition_rollback_in_progress{condition=false," + l + "," + u + "} 1",
			"raygate_service_target_capacity_percent{" + l + ",role=active," + u + "} 100",
			"raygate_service_traffic_routed_percent{" + l + ",role=active," + u + "} 100",
		},
	}}
	// One Metrics through every step, as one RayService moves through an upgrade.
	m, reg := NewMetrics(), prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		m.Observe(tc.svc)
		got := seriesOf(t, reg)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\ngot\n  %s\nwant\n  %s", tc.name, strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
		}
	}

	other := serviceWith(nil, rayv1.RayServiceStatus{}, rayv1.RayServiceStatus{})
	other.Name, other.UID = "other", "u2"
	m.Observe(other)
	m.Forget("ns", "s")
	for _, s := range seriesOf(t, reg) {
		if strings.Contains(s, "name=s,") {
			t.Errorf("series left after Forget: %s", s)
		}
	}
	if got := seriesOf(t, reg); len(got) != 4 {
		t.Errorf("Forget removed another RayService's series: %v", got)
	}
}

func TestMetricsOfARecreatedRayServiceStartAfresh(t *testing.T) {
	m, reg := NewMetrics(), prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	old := serviceWith(map[rayv1.RayServiceConditionType]bool{rayv1.RayServiceReady: true, rayv1.UpgradeInProgress: true},
		rayv1.RayServiceStatus{RayClusterName: "s-a"}, rayv1.RayServiceStatus{RayClusterName: "s-b"})
	m.Observe(old)
	// Deleted and created again before a pass saw it gone: only the new uid's series remain.
	fresh := serviceWith(map[rayv1.RayServiceConditionType]bool{rayv1.RayServiceReady: false, rayv1.UpgradeInProgress: false},
		rayv1.RayServiceStatus{}, rayv1.RayServiceStatus{})
	fresh.UID = "u2"
	m.Observe(fresh)
	const l = "name=s,namespace=ns,uid=u2"
	want := []string{
		"kuberay_service_condition_ready{condition=false," + l + "} 1",
		"kuberay_service_condition_upgrade_in_progress{condition=false," + l + "} 1",
		"kuberay_service_info{" + l + "} 1",
		"raygate_service_condition_rollback_in_progress{condition=false," + l + "} 1",
	}
	if got := seriesOf(t, reg); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestUpgradeFinishedIsAHistogramByStrategyAndResult(t *testing.T) {
	m, reg := NewMetrics(), prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	m.UpgradeFinished(rayv1.NewClusterWithIncrementalUpgrade, plan.ResultPromoted, 95)
	m.UpgradeFinished(rayv1.NewClusterWithIncrementalUpgrade, plan.ResultPromoted, 400)
	m.UpgradeFinished(rayv1.NewCluster, plan.ResultRolledBack, 10)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range families {
		if f.GetName() != "raygate_service_upgrade_duration_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			var key []string
			for _, l := range s.GetLabel() {
				key = append(key, l.GetValue())
			}
			h := s.GetHistogram()
			got[strings.Join(key, "/")] = fmt.Sprintf("count=%d sum=%g", h.GetSampleCount(), h.GetSampleSum())
		}
	}
	// Every strategy and result has a series from the start (at 0), so the first
	// upgrade of each is an increase.
	want := map[string]string{
		"promoted/NewClusterWithIncrementalUpgrade":    "count=2 sum=495",
		"rolled_back/NewClusterWithIncrementalUpgrade": "count=0 sum=0",
		"promoted/NewCluster":                          "count=0 sum=0",
		"rolled_back/NewCluster":                       "count=1 sum=10",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
