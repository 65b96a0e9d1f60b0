package rayjob

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
)

// httpJob is an HTTPMode RayJob running entrypoint: the operator submits it itself, so a
// spec about a rule needs no submitter pod.
func httpJob(name, ns, entrypoint string) *builders.RayJobWrapper {
	w := builders.RayJob(name, ns).Mode(rayv1.HTTPMode)
	w.Spec.Entrypoint = entrypoint
	return w
}

var _ = Describe("Lifecycle", func() {
	It("activeDeadlineSeconds fails a running job, stops it, and does not retry", func(ctx context.Context) {
		ns := newNamespace(ctx)
		job := httpJob("slow", ns, hangs).Obj()
		job.Spec.ActiveDeadlineSeconds = ptr.To[int32](3)
		job.Spec.BackoffLimit = ptr.To[int32](2)
		create(ctx, job)
		cluster, id := started(ctx, ns, "slow")
		Eventually(rayJobStatus(ns, cluster, id)).Should(Equal(dashboard.JobStatusRunning))
		Eventually(deployment(ctx, ns, "slow")).Should(HavePrefix("Failed/"))
		st := getJob(ctx, ns, "slow").Status
		Expect(string(st.Reason)).To(Equal(string(rayv1.DeadlineExceeded)))
		Expect(st.Message).To(ContainSubstring("activeDeadlineSeconds"))
		Expect(st.EndTime.Sub(st.StartTime.Time)).To(BeNumerically(">=", 3*time.Second))
		Expect(deref(st.Failed)).To(BeEquivalentTo(1))
		Eventually(rayJobStatus(ns, cluster, id)).Should(Equal(dashboard.JobStatusStopped))
		Eventually(events(ctx, ns, "slow")).Should(ContainSubstring("Normal StoppedRayJob: Asked RayCluster " + ns + "/" + cluster + " to stop Ray job " + id + ": DeadlineExceeded"))
		Consistently(func() string { return getJob(ctx, ns, "slow").Status.RayClusterName }, time.Second).Should(Equal(cluster))
		Expect(posts(ns, cluster, id)()).To(Equal(1))
	})

	It("preRunningDeadlineSeconds fails a job whose cluster never gets ready", func(ctx context.Context) {
		ns := newNamespace(ctx)
		Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool { return p.Namespace == ns }, framework.NotReady)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(kubelet.ResetBehaviors(ctx)).To(Succeed()) })
		job := builders.RayJob("late", ns).Obj()
		job.Spec.PreRunningDeadlineSeconds = ptr.To[int32](2)
		create(ctx, job)
		Eventually(deployment(ctx, ns, "late")).Should(HavePrefix("Failed/"))
		st := getJob(ctx, ns, "late").Status
		Expect(string(st.Reason)).To(Equal(string(rayv1.PreRunningDeadlineExceeded)))
		Expect(st.DashboardURL).To(BeEmpty())
		Expect(submitterExists(ctx, ns, "late")()).To(BeFalse(), "no submitter for a cluster that never got ready")
		Expect(events(ctx, ns, "late")()).To(ContainSubstring("Warning Failed: the RayJob failed (PreRunningDeadlineExceeded)"))
	})

	It("deletionRules (gate on): workers first, then the cluster, each at its TTL; DeleteSelf removes the RayJob", func(ctx context.Context) {
		ns := newNamespace(ctx)
		create(ctx, httpJob("rules", ns, succeeds).
			DeletionRule(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 0).
			DeletionRule(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 3).Obj())
		cluster, _ := started(ctx, ns, "rules")
		Eventually(deployment(ctx, ns, "rules")).Should(Equal("Complete/SUCCEEDED"))
		Eventually(func() bool {
			rc := &rayv1.RayCluster{}
			if !exists(ctx, ns, cluster, rc)() {
				return false
			}
			return ptr.Deref(rc.Spec.WorkerGroupSpecs[0].Suspend, false)
		}).Should(BeTrue())
		Expect(clusterExists(ctx, ns, cluster)()).To(BeTrue(), "the cluster waits for its own rule")
		Eventually(clusterExists(ctx, ns, cluster)).Should(BeFalse())
		Expect(time.Since(getJob(ctx, ns, "rules").Status.EndTime.Time)).To(BeNumerically(">=", 3*time.Second))
		Eventually(events(ctx, ns, "rules")).Should(And(
			ContainSubstring("Normal UpdatedRayCluster: Set the `suspend` field to true for all worker groups in cluster "+ns+"/"+cluster),
			ContainSubstring("Normal DeletedRayCluster: Deleted cluster "+ns+"/"+cluster+" (deletion rule DeleteCluster on jobStatus SUCCEEDED)"),
		))

		By("a DeleteSelf rule on failure")
		create(ctx, httpJob("selfish", ns, fails).DeletionRule(rayv1.DeleteSelf, rayv1.JobStatusFailed, 1).Obj())
		selfish, _ := started(ctx, ns, "selfish")
		Eventually(gone(ctx, ns, "selfish", &rayv1.RayJob{})).Should(BeTrue())
		Expect(events(ctx, ns, "selfish")()).To(And(
			ContainSubstring("Warning Failed: the RayJob failed (AppFailed)"),
			ContainSubstring("Normal DeletedRayJob: Deleted RayJob "+ns+"/selfish (deletion rule DeleteSelf on jobStatus FAILED)"),
		))
		Eventually(gone(ctx, ns, selfish, &rayv1.RayCluster{})).Should(BeTrue(), "the garbage collector deletes what the RayJob owned")
	})

	It("deletionRules with the gate off: ignored, with an event; shutdownAfterJobFinishes is false, so nothing is deleted", func(ctx context.Context) {
		ns := newNamespace(ctx)
		create(ctx, httpJob("nogate", ns, succeeds).DeletionRule(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 0).Obj())
		cluster, _ := started(ctx, ns, "nogate")
		setGate(features.RayJobDeletionPolicy, false)
		Eventually(deployment(ctx, ns, "nogate")).Should(Equal("Complete/SUCCEEDED"))
		Eventually(events(ctx, ns, "nogate")).Should(ContainSubstring(
			"Warning DeletionPolicyFallback: spec.deletionStrategy is ignored: the RayJobDeletionPolicy feature gate is disabled; nothing is deleted (shutdownAfterJobFinishes is false)"))
		Consistently(clusterExists(ctx, ns, cluster), 2*time.Second).Should(BeTrue())
	})

	It("deletionStrategy onSuccess and onFailure: each applies to its own end", func(ctx context.Context) {
		ns := newNamespace(ctx)
		legacy := func(name, entrypoint string) *rayv1.RayJob {
			j := httpJob(name, ns, entrypoint).Obj()
			j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{
				OnSuccess: &rayv1.DeletionPolicy{Policy: ptr.To(rayv1.DeleteCluster)},
				OnFailure: &rayv1.DeletionPolicy{Policy: ptr.To(rayv1.DeleteNone)},
			}
			return j
		}
		create(ctx, legacy("good", succeeds))
		create(ctx, legacy("bad", fails))
		good, _ := started(ctx, ns, "good")
		bad, _ := started(ctx, ns, "bad")
		Eventually(deployment(ctx, ns, "good")).Should(Equal("Complete/SUCCEEDED"))
		Eventually(deployment(ctx, ns, "bad")).Should(Equal("Failed/FAILED"))
		Eventually(clusterExists(ctx, ns, good)).Should(BeFalse())
		Consistently(clusterExists(ctx, ns, bad), 2*time.Second).Should(BeTrue())
	})

	It("suspend: a suspended job creates nothing; resumed, it runs; suspended mid-run, its cluster goes", func(ctx context.Context) {
		ns := newNamespace(ctx)
		job := httpJob("pause", ns, hangs).Shutdown(0).Obj()
		job.Spec.Suspend = true
		create(ctx, job)
		Eventually(deployment(ctx, ns, "pause")).Should(Equal("Suspended/"))
		Consistently(func() []string { return clusterNames(ctx, ns) }, time.Second).Should(BeEmpty())

		update(ctx, ns, "pause", func(j *rayv1.RayJob) { j.Spec.Suspend = false })
		first, id := started(ctx, ns, "pause")
		Eventually(rayJobStatus(ns, first, id)).Should(Equal(dashboard.JobStatusRunning))
		Eventually(deployment(ctx, ns, "pause")).Should(Equal("Running/RUNNING"))

		update(ctx, ns, "pause", func(j *rayv1.RayJob) { j.Spec.Suspend = true })
		Eventually(deployment(ctx, ns, "pause")).Should(Equal("Suspended/"))
		Eventually(clusterExists(ctx, ns, first)).Should(BeFalse())
		st := getJob(ctx, ns, "pause").Status
		Expect(st.RayClusterName).To(BeEmpty())
		Expect(st.JobId).To(BeEmpty())
		Eventually(events(ctx, ns, "pause")).Should(And(
			ContainSubstring("Normal Resumed: RayJob "+ns+"/pause is resumed"),
			ContainSubstring("Normal Suspended: RayJob "+ns+"/pause is suspended: its RayCluster and submitter were deleted"),
		))

		By("resumed again: a new attempt on a new cluster, under a new id")
		update(ctx, ns, "pause", func(j *rayv1.RayJob) { j.Spec.Suspend = false })
		Eventually(deployment(ctx, ns, "pause")).Should(Equal("Running/RUNNING"))
		st = getJob(ctx, ns, "pause").Status
		Expect(st.RayClusterName).NotTo(Equal(first))
		Expect(st.JobId).NotTo(Equal(id))
		Expect(posts(ns, st.RayClusterName, st.JobId)()).To(Equal(1))
	})

	It("managedBy another controller: raygate creates and writes nothing", func(ctx context.Context) {
		ns := newNamespace(ctx)
		job := httpJob("elsewhere", ns, succeeds).Obj()
		job.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
		create(ctx, job)
		Consistently(func() rayv1.RayJobStatus { return getJob(ctx, ns, "elsewhere").Status }, 2*time.Second).Should(BeZero())
		Expect(getJob(ctx, ns, "elsewhere").Finalizers).To(BeEmpty())
		Expect(clusterNames(ctx, ns)).To(BeEmpty())
	})

	It("clusterSelector: the job runs on an existing cluster, which it never deletes", func(ctx context.Context) {
		ns := newNamespace(ctx)
		create2(ctx, builders.RayCluster("shared", ns).Obj())
		create(ctx, httpJob("guest", ns, succeeds).OnCluster("shared").Obj())
		Eventually(deployment(ctx, ns, "guest")).Should(Equal("Complete/SUCCEEDED"))
		st := getJob(ctx, ns, "guest").Status
		Expect(st.RayClusterName).To(Equal("shared"))
		Expect(posts(ns, "shared", st.JobId)()).To(Equal(1))
		Consistently(clusterExists(ctx, ns, "shared"), time.Second).Should(BeTrue())
		Expect(serviceExists(ctx, ns, "guest-head-svc")()).To(BeFalse())

		By("a job naming a cluster that does not exist waits, saying so")
		create(ctx, httpJob("lost", ns, succeeds).OnCluster("nowhere").Obj())
		Eventually(func() string { return getJob(ctx, ns, "lost").Status.Message }).Should(ContainSubstring("RayCluster nowhere named by clusterSelector is not found"))
		Eventually(events(ctx, ns, "lost")).Should(ContainSubstring("Warning RayClusterNotFound"))
	})

	It("deleting a RayJob stops its Ray job before the RayJob goes", func(ctx context.Context) {
		ns := newNamespace(ctx)
		create(ctx, httpJob("bye", ns, hangs).Obj())
		cluster, id := started(ctx, ns, "bye")
		Eventually(rayJobStatus(ns, cluster, id)).Should(Equal(dashboard.JobStatusRunning))
		Expect(getJob(ctx, ns, "bye").Finalizers).To(ContainElement("ray.io/rayjob-finalizer"))
		Expect(k8s.Delete(ctx, getJob(ctx, ns, "bye"))).To(Succeed())
		Eventually(gone(ctx, ns, "bye", &rayv1.RayJob{})).Should(BeTrue())
		Expect(rayJobStatus(ns, cluster, id)()).To(Equal(dashboard.JobStatusStopped))
		Eventually(gone(ctx, ns, cluster, &rayv1.RayCluster{})).Should(BeTrue(), "the garbage collector deletes what the RayJob owned")
	})
})

func clusterNames(ctx context.Context, ns string) []string {
	GinkgoHelper()
	var list rayv1.RayClusterList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, rc := range list.Items {
		out = append(out, rc.Name)
	}
	return out
}

func create2(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, obj)).To(Succeed())
}

// setGate sets a feature gate for the rest of the spec (the webhooks and the controllers
// read the process's gates on every call).
func setGate(gate featuregate.Feature, on bool) {
	GinkgoHelper()
	was := features.Enabled(gate)
	Expect(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(gate): on})).To(Succeed())
	DeferCleanup(func() {
		Expect(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(gate): was})).To(Succeed())
	})
}
