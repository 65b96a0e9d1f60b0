package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
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
// write about it) leaves exactly one submission. RayJobSpecs registers its specs.
func RayJobSpecs() bool {
	return ginkgo.Describe("RayJob: the operator killed between a submission and its status write", rayJobSpecs)
}

func rayJobSpecs() {
	ginkgo.It("HTTPMode: the restarted operator finds the submitted job, submits nothing more and follows it to SUCCEEDED", func(ctx context.Context) {
		op := startOperator(ctx, "rayjob")
		ginkgo.DeferCleanup(op.stop)
		ns := rstest.NewNamespace(ctx, k8s, "faults-job-")
		held := front.HoldJobSubmissions()
		ginkgo.DeferCleanup(front.ReleaseJobSubmissions)

		job := builders.RayJob("once", ns).Mode(rayv1.HTTPMode).Obj()
		job.Spec.Entrypoint = `python -c "print('ok')"`
		gomega.Expect(k8s.Create(ctx, job)).To(gomega.Succeed())

		ginkgo.By("the head takes the submission; its answer is held from the operator")
		var cluster types.NamespacedName
		gomega.Eventually(held).Should(gomega.Receive(&cluster))
		before := rayJob(ctx, ns, "once")
		id := before.Status.JobId
		gomega.Expect(id).NotTo(gomega.BeEmpty(), "the submission id is stored before the Jobs API is called")
		gomega.Expect(before.Status.RayClusterName).To(gomega.Equal(cluster.Name))
		gomega.Expect(before.Status.JobStatus).To(gomega.BeEmpty(), "no status write about the submission yet")
		gomega.Expect(submissions(cluster, id)).To(gomega.Equal(1))

		front.ReleaseJobSubmissions()
		k := killAt(ctx, op, "RayJob submitted, the answer not yet received")
		restarted := op.started
		gomega.Eventually(func() string {
			st := rayJob(ctx, ns, "once").Status
			return string(st.JobDeploymentStatus) + "/" + string(st.JobStatus)
		}).Should(gomega.Equal("Complete/SUCCEEDED"))
		after := rayJob(ctx, ns, "once").Status
		ginkgo.AddReportEntry(fmt.Sprintf("RayJob HTTPMode, SIGKILL with the submission's answer in flight: new operator ready in %s, SUCCEEDED %s after its start",
			k.ready.Round(10*time.Millisecond), time.Since(restarted).Round(10*time.Millisecond)))
		gomega.Expect(after.JobId).To(gomega.Equal(id), "the same submission id after the restart")
		gomega.Expect(after.RayClusterName).To(gomega.Equal(cluster.Name))
		gomega.Expect(submissions(cluster, id)).To(gomega.Equal(1), "exactly one POST for the attempt")
		gomega.Expect(dashboards.Server(cluster).JobSubmissions()).To(gomega.HaveLen(1), "no submission under another id")
		gomega.Expect(*after.Succeeded).To(gomega.BeEquivalentTo(1))
	})

	// In K8sJobMode the submitter Job submits: the operator is killed once it created the
	// Job, the submission happens while no operator runs, and the status that records it is
	// the new operator's to write.
	ginkgo.It("K8sJobMode: killed once the submitter Job exists, the job submitted while no operator runs: one submitter, one submission, SUCCEEDED", func(ctx context.Context) {
		op := startOperator(ctx, "rayjob")
		ginkgo.DeferCleanup(op.stop)
		ns := rstest.NewNamespace(ctx, k8s, "faults-job-")
		submitterPod := func(p *corev1.Pod) bool { return p.Namespace == ns && p.Labels[batchv1.JobNameLabel] != "" }
		gomega.Expect(kubelet.SetBehavior(ctx, submitterPod, framework.Ignore)).To(gomega.Succeed(), "the submitter pod waits for the kill")
		job := builders.RayJob("batch", ns).Obj()
		job.Spec.Entrypoint = `python -c "print('ok')"`
		gomega.Expect(k8s.Create(ctx, job)).To(gomega.Succeed())

		gomega.Eventually(func() error { return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "batch"}, &batchv1.Job{}) }).Should(gomega.Succeed())
		ginkgo.By("SIGKILL the operator: the submitter Job exists")
		op.kill()
		st := rayJob(ctx, ns, "batch").Status
		id, cluster := st.JobId, types.NamespacedName{Namespace: ns, Name: st.RayClusterName}
		gomega.Expect(id).NotTo(gomega.BeEmpty(), "the submission id is stored before the submitter Job is created")
		gomega.Expect(kubelet.SetBehavior(ctx, submitterPod, framework.Ready)).To(gomega.Succeed())
		gomega.Eventually(func() int { return submissions(cluster, id) }).Should(gomega.Equal(1), "the submitter submits while no operator runs")
		gomega.Expect(rayJob(ctx, ns, "batch").Status.JobStatus).To(gomega.BeEmpty(), "no status write about the submission yet")

		op.start(ctx)
		restarted := op.started
		gomega.Eventually(func() string {
			st := rayJob(ctx, ns, "batch").Status
			return string(st.JobDeploymentStatus) + "/" + string(st.JobStatus)
		}).Should(gomega.Equal("Complete/SUCCEEDED"))
		ginkgo.AddReportEntry(fmt.Sprintf("RayJob K8sJobMode, SIGKILL once the submitter Job existed, submitted while down: SUCCEEDED %s after the new operator started",
			time.Since(restarted).Round(10*time.Millisecond)))
		after := rayJob(ctx, ns, "batch").Status
		gomega.Expect(after.JobId).To(gomega.Equal(id))
		gomega.Expect(submissions(cluster, id)).To(gomega.Equal(1), "exactly one POST for the attempt")
		gomega.Expect(dashboards.Server(cluster).JobSubmissions()).To(gomega.HaveLen(1), "no submission under another id")
		var jobs batchv1.JobList
		gomega.Expect(k8s.List(ctx, &jobs, client.InNamespace(ns))).To(gomega.Succeed())
		gomega.Expect(jobs.Items).To(gomega.HaveLen(1), "one submitter Job")
		gomega.Expect(jobs.Items[0].Status.Succeeded).To(gomega.BeEquivalentTo(1))
	})
}

func rayJob(ctx context.Context, ns, name string) *rayv1.RayJob {
	ginkgo.GinkgoHelper()
	j := &rayv1.RayJob{}
	gomega.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, j)).To(gomega.Succeed())
	return j
}

// submissions counts the POSTs to a cluster's simulated Jobs API that named id.
func submissions(cluster types.NamespacedName, id string) int {
	if s := dashboards.Server(cluster); s != nil {
		return len(s.JobSubmissionsFor(id))
	}
	return 0
}
