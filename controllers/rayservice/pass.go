package rayservice

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// pass is what one reconcile learns and decides; phases fill it in order.
type pass struct {
	svc *rayv1.RayService // its status is edited in memory and written once by finish
	old *rayv1.RayServiceStatuses
	now time.Time

	// From the defaulted, validated spec.
	spec     rayv1.RayServiceSpec
	goal     goal
	strategy rayv1.RayServiceUpgradeType
	pacing   pacing
	serve    *serveConfig
	invalid  string // validation errors; nothing is done

	// Clusters.
	owned           []*rayv1.RayCluster
	active, pending *rayv1.RayCluster
	plan            clusterPlan
	rollingBack     bool
	blocked         string

	// Per cluster name.
	pods      map[string][]corev1.Pod
	headReady map[string]bool
	apps      map[string]map[string]rayv1.AppStatus
	appsReady map[string]bool
	serveNote map[string]string // why a cluster's applications are not ready

	// Services and Gateway API.
	servingCluster string // cluster the head and serve Services select after this pass
	gw             *gwv1.Gateway
	route          *gwv1.HTTPRoute
	routeSettled   bool
	routeNote      string

	// What the status should say.
	firstNote   string
	upgradeNote string
	unhealthy   []string

	// When to come back: soon (a decision was recorded), or at the earliest due time.
	decided    bool
	dueAt      time.Time
	pollEvery  time.Duration // applications are DEPLOYING: look again this soon
	afterWrite []func()
}

func newPass(svc *rayv1.RayService, now time.Time) *pass {
	return &pass{
		svc: svc, old: svc.Status.DeepCopy(), now: now,
		pods: map[string][]corev1.Pod{}, headReady: map[string]bool{},
		apps: map[string]map[string]rayv1.AppStatus{}, appsReady: map[string]bool{}, serveNote: map[string]string{},
	}
}

// due asks for a reconcile at t (the earliest asked wins).
func (p *pass) due(t time.Time) {
	if p.dueAt.IsZero() || t.Before(p.dueAt) {
		p.dueAt = t
	}
}

// requeueAfter turns what the phases asked for into one delay: a recorded decision is
// carried out right away; otherwise the earliest of the due time and the DEPLOYING poll;
// otherwise the application status resync (0: none).
func (p *pass) requeueAfter(resync time.Duration) time.Duration {
	if p.decided {
		return stepRequeue
	}
	d := time.Duration(0)
	consider := func(x time.Duration) {
		if x > 0 && (d == 0 || x < d) {
			d = x
		}
	}
	consider(p.pollEvery)
	if !p.dueAt.IsZero() {
		consider(max(p.dueAt.Sub(p.now), time.Millisecond))
	}
	if d == 0 {
		d = max(resync, 0)
	}
	return d
}

// isActive and isPending compare a cluster with the status.
func (p *pass) isActive(name string) bool {
	return name != "" && name == p.svc.Status.ActiveServiceStatus.RayClusterName
}

func (p *pass) isPending(name string) bool {
	return name != "" && name == p.svc.Status.PendingServiceStatus.RayClusterName
}

func (p *pass) incremental() bool { return p.strategy == rayv1.NewClusterWithIncrementalUpgrade }
