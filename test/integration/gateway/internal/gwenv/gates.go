package gwenv

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/localmode"
	"github.com/raygate/raygate/internal/testenv/docqueries"
	"github.com/raygate/raygate/internal/testenv/prometheus"
)

// The metric-gate specs are split into test/integration/gateway/gates (the documented
// gates passing and failing) and test/integration/gateway/gatefaults (Prometheus killed
// and stalled mid-upgrade), each starting a Gates world, so `go test -p` runs them side by
// side. The spec names live here because gates' doc check names them all.
const (
	SpecGatesHealthy = "a healthy new version passes every documented gate at every step and is promoted"
	SpecGatesFail    = "a new version failing 30% of requests fails the documented error gates at the first step(s) and rolls back"
	SpecGatesSlow    = "a new version answering in 400 ms fails the documented p99 latency gate and rolls back"
	SpecGatesFaulted = "hold the upgrade at its step without rolling back, say why, and let it go on once Prometheus answers"
)

// The documented gates: docs/rayservice.md's UpgradePolicy example (the pending cluster's
// error ratio and p99 latency from Ray Serve's metrics, which the simulated Ray pods serve
// and Prometheus scrapes with the PodMonitor's namespace and pod labels) and its gate on
// the Gateway's own metrics (the pending cluster's share of 5xx answers through Traefik).
const (
	ErrorGate   = "error-ratio"
	LatencyGate = "p99-latency-ms"
	TraefikGate = "pending-5xx-ratio"
)

// Gates is the world of the metric-gate suites: the gateway world whose Traefik serves its
// metrics, and the real Prometheus (internal/testenv/prometheus, built by `make tools`)
// scraping Traefik and the simulated Ray pods' Serve metrics every second; the operator's
// --prometheus-url is its address, so every gate query is evaluated by Prometheus's own
// engine. Prometheus logs every query it evaluates (with its evaluation time), so a spec
// can ask it again what a gate saw.
type Gates struct {
	*World
	Prom *prometheus.Prometheus
}

// StartGates starts the Gates world and its manager from a BeforeSuite, and its shutdown
// with DeferCleanup.
func StartGates(ctx context.Context) *Gates {
	ginkgo.GinkgoHelper()
	gw := &Gates{World: Start(ctx, Options{TraefikMetrics: true})}
	traefikTarget := prometheus.Target{Job: localmode.JobTraefik, URL: gw.Traefik.MetricsURL()}
	var err error
	gw.Prom, err = prometheus.Start(ctx, prometheus.Options{
		Targets:  []prometheus.Target{traefikTarget},
		QueryLog: true, // what the gates asked, and when (Evaluations)
		Log:      ginkgo.GinkgoWriter,
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(func() { gomega.Expect(gw.Prom.Stop()).To(gomega.Succeed()) })
	ginkgo.DeferCleanup(gw.followRayPods(traefikTarget))
	gw.StartManager(func(opts *app.Options) { opts.PrometheusURL = gw.Prom.URL() })
	return gw
}

// followRayPods keeps Prometheus scraping every Ray pod's metrics port with the labels the
// chart's PodMonitor gives (namespace, pod, ...), as the local mode does, besides fixed;
// the returned function stops it.
func (gw *Gates) followRayPods(fixed prometheus.Target) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var applied string
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			var pods corev1.PodList
			if err := gw.Client.List(ctx, &pods, client.MatchingLabels{rayv1.IsRayNodeLabelKey: "yes"}); err == nil {
				targets := append([]prometheus.Target{fixed}, localmode.RayTargets(pods.Items)...)
				// A failed reload (Prometheus killed by a fault spec) is tried again; its
				// configuration file is written anyway, so a restart reads it.
				if key := fmt.Sprint(targets); key != applied && gw.Prom.SetTargets(ctx, targets) == nil {
					applied = key
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// GateDoc finds a documented UpgradePolicy gate by name; the specs use its query and
// bounds verbatim, so a doc edit that breaks one fails them.
func GateDoc(name string) docqueries.Example {
	ginkgo.GinkgoHelper()
	ex, err := docqueries.Read(docqueries.GateDocs...)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	for _, e := range ex {
		if e.Kind == docqueries.Gate && e.Gate == name {
			return e
		}
	}
	ginkgo.Fail(fmt.Sprintf("no gate %q in %v: a doc edit renamed or removed the example this spec runs", name, docqueries.GateDocs))
	return docqueries.Example{}
}

// RangeOf is the range of the first range selector of a query ([20s] in the Traefik gate).
func RangeOf(query string) time.Duration {
	ginkgo.GinkgoHelper()
	m := regexp.MustCompile(`\[([0-9]+[smh])\]`).FindStringSubmatch(query)
	gomega.Expect(m).NotTo(gomega.BeNil(), "a range selector in %s", query)
	d, err := model.ParseDuration(m[1])
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return time.Duration(d)
}

// Instant evaluates expr at at with Prometheus's engine: the one value of its answer (ok
// false for no data or NaN).
func (gw *Gates) Instant(ctx context.Context, expr string, at time.Time) (float64, bool) {
	ginkgo.GinkgoHelper()
	v, _, err := gw.Prom.API().Query(ctx, expr, at)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), expr)
	vec, isVec := v.(model.Vector)
	gomega.Expect(isVec).To(gomega.BeTrue(), "%s returned a %s", expr, v.Type())
	gomega.Expect(len(vec)).To(gomega.BeNumerically("<=", 1), "%s: %v", expr, vec)
	if len(vec) == 0 || math.IsNaN(float64(vec[0].Value)) {
		return 0, false
	}
	return float64(vec[0].Value), true
}

// GateValueRE finds the value a GateFailed message reports.
var GateValueRE = regexp.MustCompile(`returned ([^ ,]+), above max`)

// PassedValues are the values a gate had in the GatesPassed conditions recorded.
func PassedValues(conds []GateCondition, gate string) []float64 {
	ginkgo.GinkgoHelper()
	re := regexp.MustCompile(regexp.QuoteMeta(gate) + `=([^ ]+) \(`)
	var out []float64
	for _, c := range conds {
		if m := re.FindStringSubmatch(c.Message); c.State == "True/"+raygatev1alpha1.GatesPassed && m != nil {
			v, err := strconv.ParseFloat(m[1], 64)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			out = append(out, v)
		}
	}
	return out
}

// GateCondition is one state of the RayService's UpgradeGates condition.
type GateCondition struct {
	At      time.Time
	State   string // Status/Reason
	Message string
}

// ConditionWatch records every distinct UpgradeGates condition every 100 ms: the condition
// is removed once no gated upgrade runs, so a spec must catch it while it is there.
type ConditionWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	states []GateCondition
}

// WatchGateCondition starts recording the RayService's UpgradeGates condition until Stop.
func (w *World) WatchGateCondition(ctx context.Context, ns, name string) *ConditionWatch {
	ctx, cancel := context.WithCancel(ctx)
	cw := &ConditionWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer ginkgo.GinkgoRecover()
		defer close(cw.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			var svc rayv1.RayService
			if err := w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &svc); err == nil {
				if c := meta.FindStatusCondition(svc.Status.Conditions, raygatev1alpha1.UpgradeGatesCondition); c != nil {
					st := GateCondition{At: time.Now(), State: string(c.Status) + "/" + c.Reason, Message: c.Message}
					cw.mu.Lock()
					if n := len(cw.states); n == 0 || cw.states[n-1].State != st.State || cw.states[n-1].Message != st.Message {
						cw.states = append(cw.states, st)
					}
					cw.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return cw
}

// Last is the latest state recorded ("" before any).
func (cw *ConditionWatch) Last() GateCondition {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	if len(cw.states) == 0 {
		return GateCondition{}
	}
	return cw.states[len(cw.states)-1]
}

// Seen says whether the condition was ever in state (Status/Reason).
func (cw *ConditionWatch) Seen(state string) bool {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	for _, s := range cw.states {
		if s.State == state {
			return true
		}
	}
	return false
}

// Stop stops the recording and returns every state recorded.
func (cw *ConditionWatch) Stop() []GateCondition {
	cw.cancel()
	<-cw.done
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return append([]GateCondition(nil), cw.states...)
}
