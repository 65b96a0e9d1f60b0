package raycronjob

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycronjob"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

func newNamespace(ctx context.Context) string { return rstest.NewNamespace(ctx, k8s, "rcj-") }

// hourly creates an hourly RayCronJob (UTC) and returns it with its first scheduled time.
func hourly(ctx context.Context, ns, name string) (*rayv1.RayCronJob, time.Time) {
	GinkgoHelper()
	cj := builders.RayCronJob(name, ns).Schedule("0 * * * *").TimeZone("UTC").Obj()
	Expect(k8s.Create(ctx, cj)).To(Succeed())
	return cj, cj.CreationTimestamp.Truncate(time.Hour).Add(time.Hour)
}

// runs are the names of the RayJobs a RayCronJob created, sorted.
func runs(ctx context.Context, ns, name string) func() []string {
	return func() []string {
		var list rayv1.RayJobList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{rayv1.RayCronJobNameLabelKey: name})).To(Succeed())
		var names []string
		for _, j := range list.Items {
			names = append(names, j.Name)
		}
		slices.Sort(names)
		return names
	}
}

func runName(cj *rayv1.RayCronJob, t time.Time) string { return raycronjob.RunJob(cj, t).Name }

func lastScheduled(ctx context.Context, ns, name string) func() time.Time {
	return func() time.Time {
		cj := &rayv1.RayCronJob{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cj)).To(Succeed())
		if cj.Status.LastScheduleTime == nil {
			return time.Time{}
		}
		return cj.Status.LastScheduleTime.UTC()
	}
}

// poke changes an annotation: a pass now, instead of at the requeue the real clock would
// bring (the fake clock moved, the workqueue's timers did not).
func poke(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cj := &rayv1.RayCronJob{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cj); err != nil {
			return err
		}
		if cj.Annotations == nil {
			cj.Annotations = map[string]string{}
		}
		cj.Annotations["test/poke"] = time.Now().Format(time.RFC3339Nano)
		return k8s.Update(ctx, cj)
	})).To(Succeed())
}

var _ = Describe("RayCronJob", Serial, func() {
	BeforeEach(func() { clock.Set(time.Now()) })

	It("creates the run's RayJob at its due time on the fake clock, once", func(ctx context.Context) {
		ns := newNamespace(ctx)
		cj, due := hourly(ctx, ns, "hourly")
		poke(ctx, ns, "hourly")
		Consistently(runs(ctx, ns, "hourly"), 2*time.Second).Should(BeEmpty(), "nothing before the due time")

		clock.Set(due.Add(time.Second))
		poke(ctx, ns, "hourly")
		Eventually(runs(ctx, ns, "hourly")).Should(Equal([]string{runName(cj, due)}))
		Eventually(lastScheduled(ctx, ns, "hourly")).Should(BeTemporally("==", due))
		job := &rayv1.RayJob{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: runName(cj, due)}, job)).To(Succeed())
		Expect(job.Annotations).To(HaveKeyWithValue(rayv1.RayCronJobTimestampAnnotationKey, due.Format(time.RFC3339)))
		Expect(job.OwnerReferences).To(HaveLen(1))
		Expect(job.OwnerReferences[0].Name).To(Equal("hourly"))
		Expect(job.Spec.Entrypoint).To(Equal(builders.DefaultEntrypoint))

		poke(ctx, ns, "hourly")
		Consistently(runs(ctx, ns, "hourly"), 2*time.Second).Should(HaveLen(1), "the same run is never created twice")
	})

	It("an operator restart across a due time creates exactly one RayJob; two missed runs are both created, once", func(ctx context.Context) {
		ns := newNamespace(ctx)
		cj, due := hourly(ctx, ns, "restart")
		poke(ctx, ns, "restart")
		Consistently(runs(ctx, ns, "restart"), time.Second).Should(BeEmpty())

		restartManager(func() { clock.Set(due.Add(10 * time.Minute)) })
		Eventually(runs(ctx, ns, "restart")).Should(Equal([]string{runName(cj, due)}))
		Eventually(lastScheduled(ctx, ns, "restart")).Should(BeTemporally("==", due))

		restartManager(func() {}) // a second restart at the same time: nothing new
		Consistently(runs(ctx, ns, "restart"), 2*time.Second).Should(HaveLen(1))

		second, third := due.Add(time.Hour), due.Add(2*time.Hour)
		restartManager(func() { clock.Set(third.Add(time.Minute)) })
		Eventually(runs(ctx, ns, "restart")).Should(ConsistOf(runName(cj, due), runName(cj, second), runName(cj, third)))
		Eventually(lastScheduled(ctx, ns, "restart")).Should(BeTemporally("==", third))
		Consistently(runs(ctx, ns, "restart"), 2*time.Second).Should(HaveLen(3))
	})

	It("suspended, creates nothing; resumed, catches up", func(ctx context.Context) {
		ns := newNamespace(ctx)
		cj := builders.RayCronJob("paused", ns).Schedule("0 * * * *").TimeZone("UTC").Suspend(true).Obj()
		Expect(k8s.Create(ctx, cj)).To(Succeed())
		due := cj.CreationTimestamp.Truncate(time.Hour).Add(time.Hour)
		clock.Set(due.Add(time.Minute))
		poke(ctx, ns, "paused")
		Consistently(runs(ctx, ns, "paused"), 2*time.Second).Should(BeEmpty())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(cj), cj); err != nil {
				return err
			}
			cj.Spec.Suspend = new(false)
			return k8s.Update(ctx, cj)
		})).To(Succeed())
		Eventually(runs(ctx, ns, "paused")).Should(Equal([]string{runName(cj, due)}))
	})

	It("refuses bad schedules and time zones at kubectl apply, by field path", func(ctx context.Context) {
		ns := newNamespace(ctx)
		_, stderr, err := env.Kubectl(ctx, `apiVersion: ray.io/v1
kind: RayCronJob
metadata:
  name: bad
  namespace: `+ns+`
spec:
  schedule: "61 * * * *"
  timeZone: Moon/Tranquility
  jobTemplate:
    entrypoint: python -c "print(1)"
    submissionMode: ByPigeon
    clusterSelector:
      ray.io/cluster: shared
`, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`The RayCronJob "bad" is invalid: `))
		Expect(stderr).To(ContainSubstring(`spec.schedule: Invalid value: "61 * * * *": invalid cron schedule: end of range (61) above maximum (59): 61`))
		Expect(stderr).To(ContainSubstring(`spec.timeZone: Invalid value: "Moon/Tranquility": unknown time zone`))
		Expect(stderr).To(ContainSubstring(`spec.jobTemplate.submissionMode: Unsupported value: "ByPigeon"`))
	})

	It("with the gate off, refuses a new RayCronJob at kubectl apply, naming the gate", func(ctx context.Context) {
		ns := newNamespace(ctx)
		setGate(false)
		DeferCleanup(setGate, true)
		_, stderr, err := env.Kubectl(ctx, `apiVersion: ray.io/v1
kind: RayCronJob
metadata:
  name: gated
  namespace: `+ns+`
spec:
  schedule: "* * * * *"
  jobTemplate:
    entrypoint: python -c "print(1)"
    clusterSelector:
      ray.io/cluster: shared
`, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`The RayCronJob "gated" is invalid: spec: Forbidden: RayCronJob is behind the feature gate RayCronJob (Alpha, off by default): ` +
			"enable it with --feature-gates=RayCronJob=true on the manager, or the Helm value featureGates.RayCronJob=true\n"))
	})
})
