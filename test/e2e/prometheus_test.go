package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// prometheusOf is the API of make run's Prometheus, whose URL it printed and keeps in its
// state directory.
func prometheusOf(t *testing.T, out, state string) promv1.API {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "prometheus-url"))
	if err != nil {
		t.Fatalf("make run keeps no Prometheus URL: %v", err)
	}
	u := strings.TrimSpace(string(b))
	if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(out, "Prometheus: "+u+" (scrapes raygate, Traefik and the simulated Ray pods") {
		t.Fatalf("make run does not print its Prometheus URL %q:\n%s", u, out)
	}
	c, err := promapi.NewClient(promapi.Config{Address: u})
	if err != nil {
		t.Fatal(err)
	}
	return promv1.NewAPI(c)
}

// waitQuery evaluates query until ok accepts its answer, or fails after timeout.
func waitQuery(t *testing.T, api promv1.API, query string, timeout time.Duration, ok func(model.Vector) bool) model.Vector {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for {
		v, _, err := api.Query(ctx, query, time.Now())
		if vec, isVec := v.(model.Vector); err == nil && isVec && ok(vec) {
			return vec
		}
		last = "no vector"
		if err != nil {
			last = err.Error()
		} else if v != nil {
			last = v.String()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Prometheus: %s never answered as expected; last: %s", query, last)
		case <-time.After(time.Second):
		}
	}
}

// checkPrometheusUp: Prometheus scrapes raygate, Traefik and the Ray pods of the sample, all up.
func checkPrometheusUp(t *testing.T, api promv1.API) {
	t.Helper()
	waitQuery(t, api, `sum by (job) (up)`, time.Minute, func(vec model.Vector) bool {
		up := map[string]float64{}
		for _, s := range vec {
			up[string(s.Metric["job"])] = float64(s.Value)
		}
		// The incremental sample's cluster has a head and a worker.
		return up["raygate"] == 1 && up["traefik"] == 1 && up["ray"] >= 2
	})
	// The Ray pods are labelled as the chart's PodMonitor labels them.
	waitQuery(t, api, `count(up{job="ray",namespace="default",pod=~"rayservice-incremental-.*",ray_io_cluster=~"rayservice-incremental-.*",ray_io_node_type=~"head|worker"})`, 30*time.Second,
		func(vec model.Vector) bool { return len(vec) == 1 && vec[0].Value >= 2 })
}

// checkServeSeries: the load the demo sent through the Gateway is in the Ray pods' Serve
// series, queried as docs/monitoring.md says to check them.
func checkServeSeries(t *testing.T, api promv1.API) {
	t.Helper()
	waitQuery(t, api, `count by (namespace) (ray_serve_num_http_requests_total)`, 30*time.Second, func(vec model.Vector) bool {
		return len(vec) == 1 && vec[0].Metric["namespace"] == "default"
	})
}

// checkGatedDemo: make demo --gate put the upgrade under its UpgradePolicy, and raygate
// evaluated its gate on Prometheus (the UpgradeGates condition said so) before the steps.
func checkGatedDemo(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{
		"--gate: each traffic step waits for an UpgradePolicy gate that raygate evaluates on Prometheus",
		"upgradepolicy.raygate.ray.io/demo-error-ratio ",
		"raygate.ray.io/upgrade-policy=demo-error-ratio",
		"UpgradeGates True GatesPassed: ",
		"every traffic step waited for the gates of UpgradePolicy demo-error-ratio to pass",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make demo --gate output lacks %q:\n%s", want, out)
		}
	}
}
