package framework

import (
	"fmt"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// series gathers controller-runtime's registry — what the manager serves on /metrics — and
// returns one metric's series with their labels as a map.
func series(metric string) ([]*dto.Metric, []map[string]string, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil, nil, fmt.Errorf("gathering metrics: %w", err)
	}
	var out []*dto.Metric
	var labels []map[string]string
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out, labels = append(out, m), append(labels, l)
		}
	}
	return out, labels, nil
}

// MetricSeries returns the label sets of a gauge's series for one object (labels namespace
// and name), and the series' values in the same order.
func MetricSeries(metric, namespace, name string) ([]map[string]string, []float64, error) {
	ms, labels, err := series(metric)
	if err != nil {
		return nil, nil, err
	}
	var outLabels []map[string]string
	var values []float64
	for i, l := range labels {
		if l["namespace"] == namespace && l["name"] == name {
			outLabels, values = append(outLabels, l), append(values, ms[i].GetGauge().GetValue())
		}
	}
	return outLabels, values, nil
}

// HistogramCount returns how many observations a histogram holds in the series whose labels
// include all of the given ones (0 when there is no such series yet).
func HistogramCount(metric string, want map[string]string) (uint64, error) {
	ms, labels, err := series(metric)
	if err != nil {
		return 0, err
	}
	var n uint64
	for i, l := range labels {
		match := true
		for k, v := range want {
			match = match && l[k] == v
		}
		if match {
			n += ms[i].GetHistogram().GetSampleCount()
		}
	}
	return n, nil
}

// Sum adds up a counter's or gauge's series whose labels include all of the given ones.
func Sum(metric string, want map[string]string) (float64, error) {
	ms, labels, err := series(metric)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for i, l := range labels {
		match := true
		for k, v := range want {
			match = match && l[k] == v
		}
		if !match {
			continue
		}
		switch {
		case ms[i].GetCounter() != nil:
			total += ms[i].GetCounter().GetValue()
		case ms[i].GetGauge() != nil:
			total += ms[i].GetGauge().GetValue()
		}
	}
	return total, nil
}

// ReconcileCount is how many reconciles a controller ("raycluster", "rayservice") finished.
func ReconcileCount(controller string) (float64, error) {
	return Sum("controller_runtime_reconcile_total", map[string]string{"controller": controller})
}

// idle reports whether every named controller has nothing queued and no reconcile running.
// Items waiting for a RequeueAfter are not queued yet: idle says the manager has handled
// every event it has seen so far, which is what a test waits for before it counts writes.
// stale is, per controller, the queue depth earlier managers of this process left behind.
func idle(stale map[string]float64, controllers ...string) (bool, error) {
	for _, c := range controllers {
		depth, err := Sum("workqueue_depth", map[string]string{"controller": c})
		if err != nil {
			return false, err
		}
		active, err := Sum("controller_runtime_active_workers", map[string]string{"controller": c})
		if err != nil {
			return false, err
		}
		if depth-stale[c] > 0 || active > 0 {
			return false, nil
		}
	}
	return true, nil
}
