package rayjob

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
)

var _ = Describe("Operator restarts", Serial, func() {
	It("HTTPMode: a submission whose answer is lost, then a restart: the new operator asks before it submits, and the job runs once", func(ctx context.Context) {
		ns := newNamespace(ctx)
		create(ctx, httpJob("lost", ns, succeeds).Obj())
		var cluster string
		Eventually(func() string { cluster = getJob(ctx, ns, "lost").Status.RayClusterName; return cluster }).ShouldNot(BeEmpty())
		// The cluster's Jobs API takes the job and loses its answer.
		_, err := dashboards.DashboardURL(ctx, dashboard.Head{Cluster: types.NamespacedName{Namespace: ns, Name: cluster}})
		Expect(err).NotTo(HaveOccurred())
		simulator(ns, cluster).SetJobsFault(raysim.JobsFault{LoseSubmitAnswers: true})
		id := getJob(ctx, ns, "lost").Status.JobId
		Eventually(posts(ns, cluster, id)).Should(Equal(1))

		restartManager()
		simulator(ns, cluster).SetJobsFault(raysim.JobsFault{})
		Eventually(deployment(ctx, ns, "lost")).Should(Equal("Complete/SUCCEEDED"))
		Expect(getJob(ctx, ns, "lost").Status.JobId).To(Equal(id))
		Expect(posts(ns, cluster, id)()).To(Equal(1), "one POST: the new operator read the job before submitting")
	})

	It("K8sJobMode: a restart once the submitter exists: one submitter, one submission", func(ctx context.Context) {
		ns := newNamespace(ctx)
		job := builders.RayJob("again", ns).Obj()
		job.Spec.Entrypoint = succeeds
		create(ctx, job)
		Eventually(submitterExists(ctx, ns, "again")).Should(BeTrue())
		restartManager()
		Eventually(deployment(ctx, ns, "again")).Should(Equal("Complete/SUCCEEDED"))
		st := getJob(ctx, ns, "again").Status
		Expect(posts(ns, st.RayClusterName, st.JobId)()).To(Equal(1))
		sub := &batchv1.Job{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "again"}, sub)).To(Succeed())
		Expect(sub.Status.Succeeded).To(BeEquivalentTo(1))
		Expect(sub.Status.Failed).To(BeEquivalentTo(0))
	})
})
