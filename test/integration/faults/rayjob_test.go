package faults

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// The RayJob promise under SIGKILL: the submission id is stored before the Jobs API is
// called, and a new operator asks the Jobs API before it submits, so an operator killed
// after the head took the job but before the answer reached it (and so before any status
// write about it) leaves exactly one submission.
var _ = Describe("RayJob: the operator killed between a submission and its status write", func() {
	It("HTTPMode: the restarted operator finds the submitted job, submits nothing more and follows it to SUCCEEDED", func(ctx context.Context) {
		op := startOperator(ctx, "rayjob")
		DeferCleanup(op.stop)
		ns := rstest.NewNamespace(ctx, k8s, "faults-job-")
		held := front.HoldJobSubmissions()
		DeferCleanup(front.ReleaseJobSubmissions)

		job := builders.RayJob("once", ns).Mode(rayv1.HTTPMode).Obj()
		job.Spec.Entrypoint = `python -c "print('ok')"`
		Expect(k8s.Create(ctx, job)).To(Succeed())

		By("the head takes the submission; its answer is held from the operator")
		var cluster types.NamespacedName
		Eventually(held).Should(Receive(&cluster))
		before := rayJob(ctx, ns, "once")
		id := before.Status.JobId
		Expect(id).NotTo(BeEmpty(), "the submission id is stored before the Jobs API is called")
		Expect(before.Status.RayClusterName).To(Equal(cluster.Name))
		Expect(before.Status.JobStatus).To(BeEmpty(), "no status write about the submission yet")
		Expect(submissions(cluster, id)).To(Equal(1))

		front.ReleaseJobSubmissions()
		k := killAt(ctx, op, "RayJob submitted, the answer not yet received")
		restarted := op.started
		Eventually(func() string {
			st := rayJob(ctx, ns, "once").Status
			return string(st.JobDeploymentStatus) + "/" + string(st.JobStatus)
		}).Should(Equal("Complete/SUCCEEDED"))
		after := rayJob(ctx, ns, "once").Status
		AddReportEntry(fmt.Sprintf("RayJob HTTPMode, SIGKILL with the submission's answer in flight: new operator ready in %s, SUCCEEDED %s after its start",
			k.ready.Round(10*time.Millisecond), time.Since(restarted).Round(10*time.Millisecond)))
		Expect(after.JobId).To(Equal(id), "the same submission id after the restart")
		Expect(after.RayClusterName).To(Equal(cluster.Name))
		Expect(submissions(cluster, id)).To(Equal(1), "exactly one POST for the attempt")
		Expect(dashboards.Server(cluster).JobSubmissions()).To(HaveLen(1), "no submission under another id")
		Expect(*after.Succeeded).To(BeEquivalentTo(1))
	})

	// In K8sJobMode the submitter Job submits: the operator is killed once it created the
	// Job, the submission happens while no operator runs, and the status that records it is
	// the new operator's to write.
	It("K8sJobMode: killed once the submitter Job exists, the job submitted while no operator runs: one submitter, one submission, SUCCEEDED", func(ctx context.Context) {
		op := startOperator(ctx, "rayjob")
		DeferCleanup(op.stop)
		ns := rstest.NewNamespace(ctx, k8s, "faults-job-")
		submitterPod := func(p *corev1.Pod) bool { return p.Namespace == ns && p.Labels[batchv1.JobNameLabel] != "" }
		Expect(kubelet.SetBehavior(ctx, submitterPod, framework.Ignore)).To(Succeed(), "the submitter pod waits for the kill")
		job := builders.RayJob("batch", ns).Obj()
		job.Spec.Entrypoint = `python -c "print('ok')"`
		Expect(k8s.Create(ctx, job)).To(Succeed())

		Eventually(func() error { return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "batch"}, &batchv1.Job{}) }).Should(Succeed())
		By("SIGKILL the operator: the submitter Job exists")
		op.kill()
		st := rayJob(ctx, ns, "batch").Status
		id, cluster := st.JobId, types.NamespacedName{Namespace: ns, Name: st.RayClusterName}
		Expect(id).NotTo(BeEmpty(), "the submission id is stored before the submitter Job is created")
		Expect(kubelet.SetBehavior(ctx, submitterPod, framework.Ready)).To(Succeed())
		Eventually(func() int { return submissions(cluster, id) }).Should(Equal(1), "the submitter submits while no operator runs")
		Expect(rayJob(ctx, ns, "batch").Status.JobStatus).To(BeEmpty(), "no status write about the submission yet")

		op.start(ctx)
		restarted := op.started
		Eventually(func() string {
			st := rayJob(ctx, ns, "batch").Status
			return string(st.JobDeploymentStatus) + "/" + string(st.JobStatus)
		}).Should(Equal("Complete/SUCCEEDED"))
		AddReportEntry(fmt.Sprintf("RayJob K8sJobMode, SIGKILL once the submitter Job existed, submitted while down: SUCCEEDED %s after the new operator started",
			time.Since(restarted).Round(10*time.Millisecond)))
		after := rayJob(ctx, ns, "batch").Status
		Expect(after.JobId).To(Equal(id))
		Expect(submissions(cluster, id)).To(Equal(1), "exactly one POST for the attempt")
		Expect(dashboards.Server(cluster).JobSubmissions()).To(HaveLen(1), "no submission under another id")
		var jobs batchv1.JobList
		Expect(k8s.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
		Expect(jobs.Items).To(HaveLen(1), "one submitter Job")
		Expect(jobs.Items[0].Status.Succeeded).To(BeEquivalentTo(1))
	})
})

func rayJob(ctx context.Context, ns, name string) *rayv1.RayJob {
	GinkgoHelper()
	j := &rayv1.RayJob{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, j)).To(Succeed())
	return j
}

// submissions counts the POSTs to a cluster's simulated Jobs API that named id.
func submissions(cluster types.NamespacedName, id string) int {
	if s := dashboards.Server(cluster); s != nil {
		return len(s.JobSubmissionsFor(id))
	}
	return 0
}
