package upgradematrix

import (
	"context"
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// The phases of controllers/rayservice/phases_test.go, reached in envtest. Where a phase can
// be held without timing, it is: the fake kubelet keeps pods unready, or the stand-in
// gateway controller leaves the last route step unaccepted (the controller takes no step
// before the last one took effect). Where it cannot, each RayService is paused the moment
// its status shows the phase (pausedFirst): its abort and promote then replace that pause.

const (
	endPromoted   = "promoted"
	endRolledBack = "rolled back"
	newImage      = "rayproject/ray:2.53.0"
)

// phase is where an upgrade is when the actions come.
type phase struct {
	name       string
	newCluster bool
	// surge and step are the incremental pacing (intervalSeconds is always 1).
	surge, step int32
	excludeHead bool
	// reach starts the upgrades of runs and brings each to the phase, held there; it sets
	// each run's pending cluster.
	reach func(ctx context.Context, runs []*run)
	// release lets held upgrades move again (nil: nothing holds them).
	release func(ctx context.Context, runs []*run)
	// pausedFirst: reach paused every run at the phase.
	pausedFirst bool
	// resumed and promoted are how resume (after a pause) and promote end.
	resumed, promoted string
}

var phases = []phase{
	{name: "incremental/pending starting", surge: 50, step: 25, resumed: endPromoted, promoted: endPromoted,
		reach: holdPods(false), release: releasePods(false)},
	// The first traffic step follows the capacity step at once, so nothing but a hold keeps
	// an upgrade there: the head is kept out of the serve Service and the pending workers
	// unready, so the applications run on the head and capacity is raised, but traffic
	// waits for a ready pod behind the pending cluster's serve Service.
	{name: "incremental/capacity raised before traffic", surge: 50, step: 25, excludeHead: true, resumed: endPromoted, promoted: endPromoted,
		reach: holdPods(true), release: releasePods(true)},
	// 10% steps every second from 10% leave several seconds mid-shift: the gateway controller
	// is paused once every run moved traffic, so each stops at its next traffic step.
	{name: "incremental/mid-shift", surge: 50, step: 10, resumed: endPromoted, promoted: endPromoted,
		reach: holdMidShift, release: func(context.Context, []*run) { gw.Pause(false) }},
	// Between the last traffic step and promotion the controller only waits (at least 3 s,
	// the last-shrink hold) and nothing can hold it there, so each run is paused there first.
	{name: "incremental/all traffic moved, not promoted", surge: 50, step: 25, resumed: endPromoted, promoted: endPromoted,
		pausedFirst: true, reach: pauseAtFullTraffic},
	// The spec goes back to the active cluster's mid-shift; each run is paused after its
	// first rollback step (a walk of 10% steps every second). Resume and promote apply to
	// the pending cluster, but the goal is the active cluster's spec: it rolls back.
	{name: "incremental/rolling back", surge: 50, step: 10, resumed: endRolledBack, promoted: endRolledBack,
		pausedFirst: true, reach: pauseRollingBack},
	{name: "NewCluster/pending starting", newCluster: true, resumed: endPromoted, promoted: endPromoted,
		reach: holdPods(false), release: releasePods(false)},
}

// service is a run's RayService as the phase wants it.
func (ph phase) service(ns string) *rayv1.RayService {
	b := builders.RayService(name, ns).DeletionDelay(1)
	if !ph.newCluster {
		b = b.Incremental(ph.surge, ph.step, 1, gatewayClass)
	}
	svc := b.Obj()
	svc.Spec.ExcludeHeadPodFromServeSvc = ph.excludeHead
	if ph.excludeHead {
		// A cluster made for an upgrade starts at minReplicas: with the head excluded, a
		// worker must start with it, or traffic waits for an autoscaler envtest lacks.
		for i := range svc.Spec.RayClusterSpec.WorkerGroupSpecs {
			svc.Spec.RayClusterSpec.WorkerGroupSpecs[i].MinReplicas = ptr.To[int32](1)
		}
	}
	return svc
}

// startUpgrades changes every run's image and waits for the pending clusters.
func startUpgrades(ctx context.Context, runs []*run) {
	for _, r := range runs {
		rstest.Update(ctx, k8s, r.ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, newImage) })
	}
	for _, r := range runs {
		gomega.Eventually(rstest.PendingName(ctx, k8s, r.ns, name)).ShouldNot(gomega.BeEmpty())
		r.green = rstest.PendingName(ctx, k8s, r.ns, name)()
	}
}

// newPods matches the runs' pods of the new image (workers only: the head runs).
func newPods(runs []*run, workersOnly bool) func(*corev1.Pod) bool {
	var nss []string
	for _, r := range runs {
		nss = append(nss, r.ns)
	}
	return func(p *corev1.Pod) bool {
		return slices.Contains(nss, p.Namespace) && p.Spec.Containers[0].Image == newImage &&
			(!workersOnly || p.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.WorkerNode))
	}
}

// holdPods keeps the pending clusters' pods (workersOnly: their workers) unready and
// waits for the phase.
func holdPods(workersOnly bool) func(context.Context, []*run) {
	return func(ctx context.Context, runs []*run) {
		gomega.Expect(kubelet.SetBehavior(ctx, newPods(runs, workersOnly), framework.NotReady)).To(gomega.Succeed())
		startUpgrades(ctx, runs)
		for _, r := range runs {
			if !workersOnly {
				gomega.Expect(split(ctx, r)()).To(gomega.Equal(splitOf{PendingCapacity: 0, PendingTraffic: 0, ActiveCapacity: 100}), "pending starting in %s", r.ns)
				continue
			}
			gomega.Eventually(func() string { return rstest.ConditionMessage(ctx, k8s, r.ns, name, rayv1.UpgradeInProgress) }).
				Should(gomega.ContainSubstring("waiting for a ready pod in the serve Service of "+r.green), "traffic held in %s", r.ns)
			s := split(ctx, r)()
			gomega.Expect(s.PendingCapacity).To(gomega.BeNumerically(">", 0), "capacity raised in %s", r.ns)
			gomega.Expect(s.PendingTraffic).To(gomega.BeZero(), "no traffic yet in %s", r.ns)
		}
	}
}

func releasePods(workersOnly bool) func(context.Context, []*run) {
	return func(ctx context.Context, runs []*run) {
		gomega.Expect(kubelet.SetBehavior(ctx, newPods(runs, workersOnly), framework.Ready)).To(gomega.Succeed())
	}
}

func holdMidShift(ctx context.Context, runs []*run) {
	startUpgrades(ctx, runs)
	for _, r := range runs {
		gomega.Eventually(rstest.PendingTraffic(ctx, k8s, r.ns, name)).Should(gomega.BeNumerically(">=", 10))
	}
	gw.Pause(true)
	ginkgo.DeferCleanup(func() { gw.Pause(false) }) // the gateway controller is the suite's: never leave it paused
	for _, r := range runs {
		gomega.Eventually(func() string { return rstest.ConditionMessage(ctx, k8s, r.ns, name, rayv1.UpgradeInProgress) }).
			Should(gomega.ContainSubstring("waiting for the last step to take effect"), "held in %s", r.ns)
		gomega.Expect(rstest.PendingTraffic(ctx, k8s, r.ns, name)()).To(gomega.BeNumerically("<", 100), "mid-shift in %s", r.ns)
	}
}

// pauseWhen polls every run's status and pauses each as soon as at says it is at the phase
// (step, when set, runs first on each poll, e.g. to change the spec).
func pauseWhen(ctx context.Context, runs []*run, step func(*run, *rayv1.RayService), at func(*run, *rayv1.RayService) bool) {
	paused := map[*run]bool{}
	gomega.Eventually(func() int {
		for _, r := range runs {
			if paused[r] {
				continue
			}
			svc := getService(ctx, r.ns, name)
			gomega.Expect(svc.Status.PendingServiceStatus.RayClusterName).To(gomega.Equal(r.green), "the upgrade of %s ended before its phase", r.ns)
			if step != nil {
				step(r, svc)
			}
			if at(r, svc) {
				rstest.SetAction(ctx, k8s, r.ns, name, rayv1.UpgradeActionPause, r.green)
				paused[r] = true
			}
		}
		return len(paused)
	}).WithPolling(20 * time.Millisecond).Should(gomega.Equal(len(runs)))
	for _, r := range runs {
		waitRecorded(ctx, r, rayv1.UpgradeActionPause)
	}
}

func pauseAtFullTraffic(ctx context.Context, runs []*run) {
	startUpgrades(ctx, runs)
	pauseWhen(ctx, runs, nil, func(_ *run, svc *rayv1.RayService) bool {
		return ptr.Deref(svc.Status.PendingServiceStatus.TrafficRoutedPercent, 0) == 100
	})
	for _, r := range runs {
		gomega.Expect(split(ctx, r)().PendingTraffic).To(gomega.Equal(int32(100)), "paused with all traffic moved in %s", r.ns)
	}
}

func pauseRollingBack(ctx context.Context, runs []*run) {
	startUpgrades(ctx, runs)
	from := map[*run]int32{} // pending traffic when the rollback was first seen
	pauseWhen(ctx, runs, func(r *run, svc *rayv1.RayService) {
		if !r.reverted && ptr.Deref(svc.Status.PendingServiceStatus.TrafficRoutedPercent, 0) >= 30 {
			rstest.Update(ctx, k8s, r.ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, builders.DefaultImage) })
			r.reverted = true
		}
	}, func(r *run, svc *rayv1.RayService) bool {
		if !meta.IsStatusConditionTrue(svc.Status.Conditions, string(rayv1.RollbackInProgress)) {
			return false
		}
		t := ptr.Deref(svc.Status.PendingServiceStatus.TrafficRoutedPercent, 0)
		if f, ok := from[r]; !ok {
			from[r] = t
		} else if t < f {
			return true // one rollback step taken
		}
		return false
	})
	for _, r := range runs {
		gomega.Expect(condition(ctx, r, rayv1.RollbackInProgress)).To(gomega.HavePrefix("True/"), "paused rolling back in %s", r.ns)
	}
}
