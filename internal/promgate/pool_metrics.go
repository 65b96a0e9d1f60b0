package promgate

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raygate/raygate/internal/promgauge"
)

// PoolMetrics are the gate pool's: how many evaluations wait, how long they waited for a
// worker, how long they took. No per-object labels: the per-RayService story is in the
// UpgradeGates condition. A nil *PoolMetrics records nothing.
type PoolMetrics struct {
	queue    prometheus.Gauge
	inFlight prometheus.Gauge
	wait     prometheus.Histogram
	duration *prometheus.HistogramVec
}

// NewPoolMetrics creates the metrics; Register adds them to a registry. Pools of several
// managers in one process (tests) may share one set: the gauges count up and down.
func NewPoolMetrics() *PoolMetrics {
	// From a quick answer to the 10 s budget, and past it for the queue.
	buckets := []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 60}
	return &PoolMetrics{
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "raygate_gate_evaluations_queued",
			Help: "Metric gate evaluations (one UpgradePolicy's queries for one RayService) waiting for a worker of the gate pool.",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "raygate_gate_evaluations_in_flight",
			Help: "Metric gate evaluations running against Prometheus.",
		}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "raygate_gate_evaluation_queue_seconds",
			Help:    "Seconds a metric gate evaluation waited in the gate pool's queue before it started.",
			Buckets: buckets,
		}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "raygate_gate_evaluation_duration_seconds",
			Help:    "Seconds one metric gate evaluation took (all queries of the policy, one after the other), by result: answered, or error when a query got no answer.",
			Buckets: buckets,
		}, []string{"result"}),
	}
}

// Register adds the metrics to reg, replacing those of an earlier manager in the process.
func (m *PoolMetrics) Register(reg prometheus.Registerer) error {
	return promgauge.Register(reg, m.queue, m.inFlight, m.wait, m.duration)
}

func (m *PoolMetrics) queued(delta float64) {
	if m != nil {
		m.queue.Add(delta)
	}
}

func (m *PoolMetrics) started(waited time.Duration) {
	if m != nil {
		m.inFlight.Inc()
		m.wait.Observe(waited.Seconds())
	}
}

func (m *PoolMetrics) finished(took time.Duration, failed bool) {
	if m == nil {
		return
	}
	m.inFlight.Dec()
	result := "answered"
	if failed {
		result = "error"
	}
	m.duration.WithLabelValues(result).Observe(took.Seconds())
}
