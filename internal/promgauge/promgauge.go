// Package promgauge holds the two Prometheus patterns the controllers' per-object metrics
// share: registering a controller's collectors so a restarted manager in the same process
// can register them again, and condition gauges that keep exactly one series per object with a
// condition="true"|"false" label (KubeRay's convention, so its dashboards work).
package promgauge

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Register adds the collectors to reg. Registering them again (a restarted manager in the
// same process) replaces them rather than failing.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		reg.Unregister(c)
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// SetCondition sets the series of an object's condition gauge whose last label is
// "condition": the one for on is 1, the one for !on is removed. labels are the other label
// values, in the vector's order.
func SetCondition(v *prometheus.GaugeVec, on bool, labels ...string) {
	v.DeleteLabelValues(append(labels[:len(labels):len(labels)], strconv.FormatBool(!on))...)
	v.WithLabelValues(append(labels[:len(labels):len(labels)], strconv.FormatBool(on))...).Set(1)
}
