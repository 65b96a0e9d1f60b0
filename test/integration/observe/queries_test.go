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
