package rayservice

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/promgate"
)

// Prometheus is never queried in a reconcile: a pass at a gated step asks the gate pool for
// an answer, and without one it holds the step (the plan's "evaluating the gates"); the
// pool evaluates the policy in the background and its word puts the RayService back in the
// queue, whose next pass decides on the answer. Four tenants whose queries take the whole
// budget therefore hold gate pool workers (at most PerNamespace each), never the reconcile
// workers every tenant's traffic steps and rollbacks need.

// gatePoolMetrics is the one set the process's gate pools observe into (several managers
// in a test process share the registered collectors, as processMetrics does).
var gatePoolMetrics = promgate.NewPoolMetrics()

// RegisterGatePoolMetrics adds the gate pool's metrics to reg.
func RegisterGatePoolMetrics(reg prometheus.Registerer) error {
	return gatePoolMetrics.Register(reg)
}

// newGatePool builds the gate pool (nil without a Prometheus: gated upgrades wait, saying
// so); its word goes to the controller's queue once the controller started.
func (r *Reconciler) newGatePool(o promgate.PoolOptions) *promgate.Pool {
	if r.Prometheus == nil {
		return nil
	}
	o.OnDone = func(owner types.NamespacedName) { r.queue.Add(owner) }
	if o.Now == nil {
		// The pass compares an answer's time with the last traffic step: one clock for both.
		o.Now = r.Now
	}
	if o.Metrics == nil {
		o.Metrics = gatePoolMetrics
	}
	return promgate.NewPool(r.Prometheus, o)
}

// addGatePool runs the gate pool in the manager (on the leader, whose reconciles ask it).
func (r *Reconciler) addGatePool(mgr ctrl.Manager) error {
	if r.gatePool == nil {
		return nil
	}
	return mgr.Add(r.gatePool)
}

// gatesNotBefore is the earliest an answer may have been evaluated to decide this pass:
// after the pending cluster's last traffic step, so a step is never decided on what
// Prometheus said before the previous one. The stored time has whole seconds: the step
// came within the second after it.
func gatesNotBefore(svc *rayv1.RayService, ask plan.GateAsk) time.Time {
	p := svc.Status.PendingServiceStatus
	if p.RayClusterName != ask.Pending || p.LastTrafficMigratedTime == nil {
		return time.Time{}
	}
	return p.LastTrafficMigratedTime.Add(time.Second)
}
