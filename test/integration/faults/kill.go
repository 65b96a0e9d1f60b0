package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// The undisturbed runs' steps, which the disturbed ones must repeat exactly.
var baseline struct {
	upgrade, rollback []change
}

// killed is one SIGKILL of the operator and its restart.
type killed struct {
	phase string
	// ready is from starting the new process to its /readyz; resume from starting it to
	// the next change of the upgrade's state (which waits for the interval when a traffic
	// step is due).
	ready, resume time.Duration
	at            time.Time
}

func (k killed) String() string {
	return fmt.Sprintf("%s: ready %s, next step %s after the restart", k.phase, k.ready.Round(10*time.Millisecond), k.resume.Round(10*time.Millisecond))
}

// killAt kills the operator and starts it again, now.
func killAt(ctx context.Context, op *operator, phase string) killed {
	ginkgo.By("SIGKILL the operator: " + phase)
	k := killed{phase: phase, at: time.Now()}
	k.ready = op.restart(ctx)
	return k
}

// resumeTimes fills in, for each kill, the time from the restart to the next change.
func resumeTimes(kills []killed, op []time.Time, changes []change) []string {
	var out []string
	for i := range kills {
		if c, ok := firstAfter(changes, op[i]); ok {
			kills[i].resume = c.At.Sub(op[i])
		}
		out = append(out, kills[i].String())
	}
	return out
}

// sameSteps requires the run's steps to be the baseline's: per value, the same values in
// the same order, and no traffic step closer to the previous one than the interval allows.
//
// The floor is the baseline's closest gap, but never above intervalSeconds: the status keeps
// whole seconds and a step is stamped with its second rounded up (or down within 200 ms), so
// an undisturbed run whose steps all happened to round up shows gaps near interval + 0.8 s,
// while a run whose step landed just after a whole second legitimately shows interval − 0.2 s.
// 500 ms below the floor covers that rounding and the watch's delivery; a restarted operator
// that forgot the last step would step at once (a gap near 0) and still fail.
func sameSteps(label string, got, want []change) {
	gomega.Expect(want).NotTo(gomega.BeEmpty(), "the undisturbed run ran first")
	gomega.Expect(renderSequences(sequences(got))).To(gomega.Equal(renderSequences(sequences(want))),
		"%s: the steps differ from an undisturbed run's", label)
	for _, key := range []string{"green weight", "blue weight"} {
		if w := minGap(want, key); w > 0 {
			floor := min(w, upgradeInterval*time.Second) - 500*time.Millisecond
			gomega.Expect(minGap(got, key)).To(gomega.BeNumerically(">=", floor),
				"%s: %s changed sooner after the previous step than the interval allows (undisturbed run's closest gap %s)", label, key, w)
		}
	}
}

// KillSpecs registers the specs that SIGKILL the one operator during upgrades and
// rollbacks. They run in one ordered container: the undisturbed runs come first and the
// disturbed ones compare their steps with them.
func KillSpecs() bool {
	return ginkgo.Describe("faults during RayService upgrades under load", ginkgo.Ordered, killSpecs)
}

// OutageSpecs registers the specs that lose a leader, a dashboard or a head pod. They run in
// one ordered container: the undisturbed upgrade comes first and the disturbed runs compare
// their steps with it.
func OutageSpecs() bool {
	return ginkgo.Describe("faults during RayService upgrades under load", ginkgo.Ordered, func() {
		ginkgo.Describe("an undisturbed operator", func() {
			var op *operator
			ginkgo.BeforeEach(func(ctx context.Context) {
				op = startOperator(ctx, "single")
				ginkgo.DeferCleanup(op.stop)
			})
			ginkgo.It(specUndisturbed, func(ctx context.Context) { upgradeUndisturbed(ctx) })
		})
		leaderSpecs()
		podSpecs()
	})
}

const specUndisturbed = "upgrades undisturbed: the steps every disturbed run must repeat"

// upgradeUndisturbed runs the incremental upgrade whose steps are the baseline.
func upgradeUndisturbed(ctx context.Context) {
	u := startUnderLoad(ctx, "fruit", nil)
	green := u.upgrade(ctx)
	u.waitDone(ctx, green)
	r := u.stop()
	baseline.upgrade = r.changes
	ginkgo.AddReportEntry("undisturbed incremental upgrade, steps:\n" + renderSequences(sequences(r.changes)))
	verdicts("undisturbed upgrade", r, "")
	gomega.Expect(sequences(r.changes)["green weight"]).To(gomega.Equal([]int32{0, 25, 50, 75, 100}))
}

func killSpecs() {
	ginkgo.Describe("the operator killed at each phase of an incremental upgrade", func() {
		const name = "fruit"
		var op *operator

		ginkgo.BeforeEach(func(ctx context.Context) {
			op = startOperator(ctx, "single")
			ginkgo.DeferCleanup(op.stop)
		})

		ginkgo.It(specUndisturbed, func(ctx context.Context) { upgradeUndisturbed(ctx) })

		ginkgo.It("sees 0 failed requests and the same steps when killed after the pending cluster is created, after its capacity rose, at 50/50 and after the promotion", func(ctx context.Context) {
			u := startUnderLoad(ctx, name, func(s *rayv1.RayService) {
				s.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](killDeletionDelay)
			})
			var kills []killed
			var restarts []time.Time
			kill := func(phase string) {
				k := killAt(ctx, op, phase)
				kills = append(kills, k)
				restarts = append(restarts, op.started)
			}
			green := u.upgrade(ctx)
			kill("pending cluster created")
			u.waitValue("green capacity", 100)
			kill("pending capacity raised to 100%")
			u.waitValue("green weight", 50)
			kill("traffic at 50/50")
			gomega.Eventually(rstest.ActiveName(ctx, k8s, u.ns, name), 2*time.Minute, 20*time.Millisecond).Should(gomega.Equal(green))
			gomega.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: u.ns, Name: u.blue}, &rayv1.RayCluster{})).To(gomega.Succeed(), "the old cluster still exists")
			kill("promoted, old cluster not yet deleted")
			u.waitDone(ctx, green)
			r := u.stop()
			lines := resumeTimes(kills, restarts, r.changes)
			ginkgo.AddReportEntry("operator restarts during an upgrade:\n" + strings.Join(lines, "\n"))
			verdicts("4 SIGKILLs during an incremental upgrade", r, "")
			sameSteps("4 SIGKILLs during an incremental upgrade", r.changes, baseline.upgrade)
		})

		ginkgo.It("rolls back undisturbed at 50%: the steps a disturbed rollback must repeat", func(ctx context.Context) {
			u := startUnderLoad(ctx, name, nil)
			u.upgrade(ctx)
			u.waitValue("green weight", 50)
			u.rollback(ctx)
			u.waitDone(ctx, u.blue)
			r := u.stop()
			baseline.rollback = r.changes
			ginkgo.AddReportEntry("undisturbed rollback at 50%, steps:\n" + renderSequences(sequences(r.changes)))
			verdicts("undisturbed rollback", r, "")
		})

		ginkgo.It("sees 0 failed requests and the same steps when killed while a rollback is in progress", func(ctx context.Context) {
			u := startUnderLoad(ctx, name, nil)
			u.upgrade(ctx)
			u.waitValue("green weight", 50)
			u.rollback(ctx)
			gomega.Eventually(rstest.Condition(ctx, k8s, u.ns, name, rayv1.RollbackInProgress), time.Minute, 20*time.Millisecond).Should(gomega.HavePrefix("True/"))
			k := killAt(ctx, op, "rollback in progress")
			restart := op.started
			u.waitDone(ctx, u.blue)
			r := u.stop()
			lines := resumeTimes([]killed{k}, []time.Time{restart}, r.changes)
			ginkgo.AddReportEntry("operator restart during a rollback:\n" + strings.Join(lines, "\n"))
			verdicts("SIGKILL during a rollback", r, "")
			sameSteps("SIGKILL during a rollback", r.changes, baseline.rollback)
		})
	})
}
