package rayjob

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
)

var _ = Describe("Submission modes", func() {
	It("K8sJobMode: a submitter Job submits once; the job completes and its cluster goes after the TTL", func(ctx context.Context) {
		ns := newNamespace(ctx)
		job := builders.RayJob("train", ns).Shutdown(1).Obj()
		job.Spec.Entrypoint = succeeds
		create(ctx, job)

		cluster, id := started(ctx, ns, "train")
		Eventually(deployment(ctx, ns, "train")).Should(Equal("Complete/SUCCEEDED"))
		st := getJob(ctx, ns, "train").Status
		Expect(st.RayClusterName).To(HavePrefix("train-"))
		Expect(id).To(HavePrefix("train-"))
		Expect(st.DashboardURL).To(Equal(cluster + "-head-svc." + ns + ".svc.cluster.local:8265"))
		Expect(*st.Succeeded).To(BeEquivalentTo(1))
		Expect(*st.Failed).To(BeEquivalentTo(0))
		Expect(st.StartTime).NotTo(BeNil())
		Expect(st.EndTime).NotTo(BeNil())
		Expect(st.RayJobStatusInfo.StartTime).NotTo(BeNil())
		Expect(st.RayJobStatusInfo.EndTime).NotTo(BeNil())
		Expect(st.Message).To(ContainSubstring("finished"))
		Expect(st.ObservedGeneration).To(BeEquivalentTo(1))

		By("the submitter Job, controlled by the RayJob, ran the submission once")
		sub := &batchv1.Job{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "train"}, sub)).To(Succeed())
		Expect(sub.OwnerReferences).To(HaveLen(1))
		Expect(sub.OwnerReferences[0].Kind).To(Equal("RayJob"))
		Expect(posts(ns, cluster, id)()).To(Equal(1))
		Expect(serviceExists(ctx, ns, "train-head-svc")()).To(BeTrue())

		By("shutdownAfterJobFinishes deletes the cluster ttlSecondsAfterFinished after the end")
		Eventually(clusterExists(ctx, ns, cluster)).Should(BeFalse())
		end := getJob(ctx, ns, "train").Status.EndTime.Time
		Expect(time.Since(end)).To(BeNumerically(">=", time.Second))
		Eventually(events(ctx, ns, "train")).Should(And(
			ContainSubstring("Normal CreatedRayCluster: Created RayCluster "+ns+"/"+cluster),
			ContainSubstring("Normal CreatedRayJobSubmitter: Created Kubernetes Job "+ns+"/train"),
			ContainSubstring("Normal CreatedService: Created the service "+ns+"/train-head-svc"),
			ContainSubstring("Normal Completed: the Ray job "+id+" ended SUCCEEDED"),
			ContainSubstring("Normal DeletedRayCluster: Deleted cluster "+ns+"/"+cluster),
		))
		Expect(posts(ns, cluster, id)()).To(Equal(1))
		Expect(jobMetrics(ns, "train")).To(And(HaveKeyWithValue("info", 1.0), HaveKeyWithValue("Complete", 1.0), HaveKey("execution")))
	})

	It("HTTPMode: raygate submits once through the Jobs API; a failed job is retried within backoffLimit on a new cluster", func(ctx context.Context) {
		ns := newNamespace(ctx)
		job := builders.RayJob("http", ns).Mode(rayv1.HTTPMode).Obj()
		job.Spec.Entrypoint = fails
		job.Spec.BackoffLimit = ptrTo[int32](1)
		create(ctx, job)

		first, firstID := started(ctx, ns, "http")
		Eventually(func() int32 { return deref(getJob(ctx, ns, "http").Status.Failed) }).Should(BeEquivalentTo(1))
		Eventually(events(ctx, ns, "http")).Should(ContainSubstring("Warning Retrying: attempt 1 failed (AppFailed)"))
		Eventually(deployment(ctx, ns, "http"), 45*time.Second).Should(Equal("Failed/FAILED"))
		st := getJob(ctx, ns, "http").Status
		Expect(st.RayClusterName).NotTo(Equal(first))
		Expect(st.JobId).NotTo(Equal(firstID))
		Expect(deref(st.Failed)).To(BeEquivalentTo(2))
		Expect(deref(st.Succeeded)).To(BeEquivalentTo(0))
		Expect(string(st.Reason)).To(Equal(string(rayv1.AppFailed)))
		Expect(st.Message).To(ContainSubstring("Traceback: exit(1)"))

		By("each attempt submitted its own id exactly once, to its own cluster; no submitter Job")
		Expect(posts(ns, first, firstID)()).To(Equal(1))
		Expect(posts(ns, st.RayClusterName, st.JobId)()).To(Equal(1))
		Expect(simulator(ns, st.RayClusterName).JobSubmissionsFor(firstID)).To(BeEmpty())
		Expect(submitterExists(ctx, ns, "http")()).To(BeFalse())
		Expect(clusterExists(ctx, ns, first)()).To(BeFalse())
		Eventually(events(ctx, ns, "http")).Should(And(
			ContainSubstring("Normal SubmittedRayJob: Submitted Ray job "+st.JobId),
			ContainSubstring("Warning Failed: the RayJob failed (AppFailed)"),
		))
	})

	It("InteractiveMode: the job waits for the id the user submitted, then follows it", func(ctx context.Context) {
		ns := newNamespace(ctx)
		job := builders.RayJob("chat", ns).Mode(rayv1.InteractiveMode).Obj()
		create(ctx, job)

		Eventually(deployment(ctx, ns, "chat")).Should(Equal("Waiting/"))
		st := getJob(ctx, ns, "chat").Status
		Expect(st.JobId).To(BeEmpty())
		Expect(st.DashboardURL).NotTo(BeEmpty())
		Consistently(deployment(ctx, ns, "chat"), time.Second).Should(Equal("Waiting/"))

		By("the user submits through the dashboard and names the job")
		url, err := dashboards.DashboardURL(ctx, dashboard.Head{Cluster: types.NamespacedName{Namespace: ns, Name: st.RayClusterName}})
		Expect(err).NotTo(HaveOccurred())
		c := &dashboard.HTTPClient{BaseURL: url}
		_, err = c.SubmitJob(ctx, dashboard.JobSubmission{SubmissionID: "mine-1", Entrypoint: succeeds})
		Expect(err).NotTo(HaveOccurred())
		update(ctx, ns, "chat", func(j *rayv1.RayJob) { j.Spec.JobId = "mine-1" })

		Eventually(deployment(ctx, ns, "chat")).Should(Equal("Complete/SUCCEEDED"))
		Expect(getJob(ctx, ns, "chat").Status.JobId).To(Equal("mine-1"))
		Expect(posts(ns, st.RayClusterName, "mine-1")()).To(Equal(1), "raygate submitted nothing itself")
	})

	It("SidecarMode: the head's submitter container submits; its exit ends the attempt", func(ctx context.Context) {
		ns := newNamespace(ctx)
		create(ctx, sidecarJob("side", ns, succeeds))
		cluster, id := started(ctx, ns, "side")
		Eventually(deployment(ctx, ns, "side")).Should(HavePrefix("Running/"))
		res := runSidecar(ctx, ns, cluster)
		Expect(res.ExitCode).To(Equal(0))
		Eventually(deployment(ctx, ns, "side")).Should(Equal("Complete/SUCCEEDED"))
		Expect(posts(ns, cluster, id)()).To(Equal(1))
		Expect(submitterExists(ctx, ns, "side")()).To(BeFalse())

		By("a sidecar that fails before the job ran fails the attempt")
		create(ctx, sidecarJob("broken", ns, succeeds))
		cluster, _ = started(ctx, ns, "broken")
		Eventually(deployment(ctx, ns, "broken")).Should(HavePrefix("Running/"))
		Expect(kubelet.TerminateContainer(ctx, ns, headPodName(ctx, ns, cluster), rayv1.SubmitterContainerName, 2, "ray: command not found")).To(Succeed())
		Eventually(deployment(ctx, ns, "broken"), 45*time.Second).Should(HavePrefix("Failed/"))
		st := getJob(ctx, ns, "broken").Status
		Expect(string(st.Reason)).To(Equal(string(rayv1.SubmissionFailed)))
		Expect(st.Message).To(ContainSubstring("terminated with exit code 2"))
	})
})

func sidecarJob(name, ns, entrypoint string) *rayv1.RayJob {
	job := builders.RayJob(name, ns).Mode(rayv1.SidecarMode).Obj()
	job.Spec.Entrypoint = entrypoint
	return job
}

// headPodName is the name of a cluster's head pod, once there is one.
func headPodName(ctx context.Context, ns, cluster string) string {
	GinkgoHelper()
	var name string
	Eventually(func() string {
		var pods corev1.PodList
		Expect(k8s.List(ctx, &pods, clientInNamespace(ns), clientLabels(map[string]string{rayv1.ClusterLabelKey: cluster, rayv1.NodeTypeLabelKey: "head"}))).To(Succeed())
		if len(pods.Items) != 1 {
			return ""
		}
		name = pods.Items[0].Name
		return name
	}).ShouldNot(BeEmpty())
	return name
}

// runSidecar does what the head pod's submitter container does: it runs its script (the
// command raygate gave it) against the cluster's simulated dashboard, then ends the
// container with the script's exit code.
func runSidecar(ctx context.Context, ns, cluster string) raysim.SubmitterResult {
	GinkgoHelper()
	name := headPodName(ctx, ns, cluster)
	pod := &corev1.Pod{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod)).To(Succeed())
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == rayv1.SubmitterContainerName {
			c = &pod.Spec.Containers[i]
		}
	}
	Expect(c).NotTo(BeNil(), "the head pod has no submitter container")
	vars := map[string]string{}
	for _, e := range c.Env {
		vars[e.Name] = e.Value
	}
	script, err := raysim.ParseSubmitter(c.Command, c.Args, vars)
	Expect(err).NotTo(HaveOccurred())
	url, err := dashboards.DashboardURL(ctx, dashboard.Head{Cluster: types.NamespacedName{Namespace: ns, Name: cluster}})
	Expect(err).NotTo(HaveOccurred())
	res := raysim.RunSubmitter(ctx, script, raysim.SubmitterEnv{
		Resolve: func(context.Context, string) (string, error) { return url, nil }, Poll: 50 * time.Millisecond,
	})
	Expect(kubelet.TerminateContainer(ctx, ns, name, rayv1.SubmitterContainerName, int32(res.ExitCode), res.Output)).To(Succeed())
	return res
}
