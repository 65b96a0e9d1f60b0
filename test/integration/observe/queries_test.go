package observe

import (
	"slices"
	"testing"
)

func TestMetricNames(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`sum(up{job=~"$job"})`, []string{"up"}},
		{`sum by (controller, result) (rate(controller_runtime_reconcile_total{job=~"$job"}[$__rate_interval]))`, []string{"controller_runtime_reconcile_total"}},
		{`histogram_quantile(0.99, sum by (webhook, le) (rate(controller_runtime_webhook_latency_seconds_bucket{ }[10m]))) > 2`, []string{"controller_runtime_webhook_latency_seconds_bucket"}},
		{"(time() - raygate_service_upgrade_start_time_seconds{job=\"x\"})\n  > on(namespace, name, uid)\n(raygate_service_upgrade_expected_duration_seconds{job=\"x\"} + 900)\nunless on(namespace, name, uid)\n(raygate_service_upgrade_action{reason=\"UpgradePaused\"} == 1)",
			[]string{"raygate_service_upgrade_start_time_seconds", "raygate_service_upgrade_expected_duration_seconds", "raygate_service_upgrade_action"}},
		{`count(kuberay_service_condition_ready{condition="false", name=~"a|b{c}"} == 1) or vector(0)`, []string{"kuberay_service_condition_ready"}},
		{`(sum(up{ }) > 0) unless on() (max(leader_election_master_status{ , name="raygate.ray.io"}) == 1)`, []string{"up", "leader_election_master_status"}},
		{`a / b > 1e3 and c offset 5m`, []string{"a", "b", "c"}},
		{`sum without (instance) (x) * 2.5e-1`, []string{"x"}},
	} {
		if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

func TestRuleExprsReadsBlocksAndDropsTemplateActions(t *testing.T) {
	exprs, err := ruleExprs("testdata/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"absent(up{ } == 1)",
		"        sum(rate(a_total{ }[10m]))\n          / sum(rate(b_total{ }[10m]))\n          > ",
		"c{job=} == 1",
	}
	if !slices.Equal(exprs, want) {
		t.Errorf("got %q, want %q", exprs, want)
	}
}

func TestFamily(t *testing.T) {
	served := map[string]bool{"x_count": true}
	for name, want := range map[string]string{"a_bucket": "a", "a_sum": "a", "x_count": "x_count", "plain": "plain", "a_total": "a_total"} {
		if got := family(name, served); got != want {
			t.Errorf("family(%q) = %q, want %q", name, got, want)
		}
	}
}

// The chart's queries, read as the suite reads them: a new metric in the dashboard or the
// rules shows up here first, and the suite then checks the operator serves it.
func TestTheChartQueries(t *testing.T) {
	dash, err := dashboardExprs("../../../charts/raygate/dashboards/raygate.json")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := ruleExprs("../../../charts/raygate/templates/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range append(dash, rules...) {
		for _, n := range metricNames(e) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	want := []string{
		"controller_runtime_reconcile_errors_total",
		"controller_runtime_reconcile_time_seconds_bucket",
		"controller_runtime_reconcile_total",
		"controller_runtime_webhook_latency_seconds_bucket",
		"controller_runtime_webhook_requests_total",
		"kuberay_cluster_condition_provisioned",
		"kuberay_cluster_info",
		"kuberay_cluster_provisioned_duration_seconds",
		"kuberay_service_condition_ready",
		"kuberay_service_condition_upgrade_in_progress",
		"kuberay_service_info",
		"leader_election_master_status",
		"raygate_service_condition_rollback_in_progress",
		"raygate_service_target_capacity_percent",
		"raygate_service_traffic_routed_percent",
		"raygate_service_upgrade_action",
		"raygate_service_upgrade_actions_total",
		"raygate_service_upgrade_duration_seconds_bucket",
		"raygate_service_upgrade_duration_seconds_count",
		"raygate_service_upgrade_expected_duration_seconds",
		"raygate_service_upgrade_start_time_seconds",
		"raygate_webhook_rejections_total",
		"up",
		"workqueue_depth",
		"workqueue_queue_duration_seconds_bucket",
	}
	if !slices.Equal(names, want) {
		t.Errorf("the chart queries\n  %q\nwant\n  %q", names, want)
	}
}
