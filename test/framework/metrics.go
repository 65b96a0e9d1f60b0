package framework

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// MetricSeries returns the label sets of a metric's series for one object (labels
// namespace and name), from controller-runtime's registry — what the manager serves on
// /metrics — and the series' values in the same order.
func MetricSeries(metric, namespace, name string) ([]map[string]string, []float64, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil, nil, fmt.Errorf("gathering metrics: %w", err)
	}
	var labels []map[string]string
	var values []float64
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["namespace"] == namespace && l["name"] == name {
				labels = append(labels, l)
				values = append(values, m.GetGauge().GetValue())
			}
		}
	}
	return labels, values, nil
}
