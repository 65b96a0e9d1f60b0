package migration

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// The RayJobs of the other submission modes and of an attempt whose cluster is not ready:
// an InteractiveMode job the user submitted, one still Waiting for the user, a SidecarMode
// job (the head's submitter container submitted it) and a K8sJobMode job still Initializing.
const (
	interactiveJob  = "interactive"
	waitingJob      = "waiting"
	sidecarModeJob  = "sidecar"
	initializingJob = "initializing"
)

var _ = Describe("RayJobs of every mode taken over from KubeRay, and back", Ordered, ContinueOnFailure, func() {
	var (
		ns                       string
		stopKubeRay, stopRaygate func()
		// by RayJob name: the attempt and its cluster's UID under the operator that started it
		attempts   = map[string]rayJobFacts{}
		clusterUID = map[string]types.UID{}
		facts      = map[string]string{}
	)

	BeforeAll(func(ctx context.Context) {
		ns = rstest.NewNamespace(ctx, k8s, "migrate-modes-")
	})
	AfterAll(func(ctx context.Context) {
		for _, stop := range []func(){stopKubeRay, stopRaygate} {
			if stop != nil {
				stop()
			}
		}
		Expect(kubelet.SetBehavior(ctx, inNamespace(ns), framework.Ready)).To(Succeed())
	})

	It("KubeRay runs an InteractiveMode job the user submitted, one waiting for the user, a SidecarMode job and one whose cluster is not ready", func(ctx context.Context) {
		stopKubeRay = startKubeRay(ctx)
		createModeJobs(ctx, ns, "")
		Eventually(deploymentOf(ctx, ns, interactiveJob)).Should(Equal("Waiting/"))
		userSubmits(ctx, ns, interactiveJob, "mine-1")
		Eventually(deploymentOf(ctx, ns, interactiveJob)).Should(Equal("Running/RUNNING"))
		Eventually(deploymentOf(ctx, ns, sidecarModeJob)).Should(Equal("Running/RUNNING"))
		Eventually(deploymentOf(ctx, ns, waitingJob)).Should(Equal("Waiting/"))
		Eventually(func() string { return getJob(ctx, ns, initializingJob).Status.RayClusterName }).ShouldNot(BeEmpty())
		Consistently(deploymentOf(ctx, ns, initializingJob), 3*time.Second).Should(Equal("Initializing/"))

		for _, name := range []string{interactiveJob, sidecarModeJob, initializingJob} {
			a := jobFactsOf(ctx, ns, name)
			attempts[name], clusterUID[name] = a, a.clusterUID(ctx)
		}
		Expect(attempts[interactiveJob].id).To(Equal("mine-1"))
		Expect(attempts[interactiveJob].submissions()).To(Equal(1))
		Expect(attempts[sidecarModeJob].submissions()).To(Equal(1), "KubeRay's sidecar submitted the job")
		Expect(attempts[initializingJob].submissions()).To(Equal(0))
		clusterUID[waitingJob] = getCluster(ctx, ns, getJob(ctx, ns, waitingJob).Status.RayClusterName).UID
		for _, name := range []string{interactiveJob, waitingJob, sidecarModeJob, initializingJob} {
			facts[name] = jobStatusFacts(ctx, ns, name)()
			GinkgoWriter.Printf("RayJob %s status under KubeRay:\n  %s\n", name, indent(facts[name]))
		}
	})

	It("raygate adopts them: no submission of its own, no new cluster; each reaches SUCCEEDED with KubeRay's jobId", func(ctx context.Context) {
		Expect(stopKubeRay).NotTo(BeNil(), "the first spec did not run")
		stopKubeRay()
		stopRaygate = startRaygate()
		Eventually(raygateIdle).Should(BeTrue())

		By("checking that raygate follows the jobs as KubeRay left them")
		for name, f := range facts {
			current := jobStatusFacts(ctx, ns, name)
			if name == initializingJob {
				// raygate says which cluster the job waits for (KubeRay leaves the message
				// empty); every other field stays as KubeRay wrote it.
				f, current = withoutMessage(f), func() string { return withoutMessage(jobStatusFacts(ctx, ns, name)()) }
				Eventually(func() string { return getJob(ctx, ns, name).Status.Message }).Should(ContainSubstring("is not ready yet"))
			}
			Consistently(current, settle/3).Should(Equal(f), name)
		}
		for name, a := range attempts {
			Expect(a.clusterUID(ctx)).To(Equal(clusterUID[name]), "the cluster of %s was recreated", name)
		}
		Expect(attempts[initializingJob].submissions()).To(Equal(0), "submitted before the cluster was ready")
		writes := raygate.Writes.SnapshotIn(ns)
		for w := range writes {
			Expect(w).NotTo(Or(HavePrefix("create rayclusters"), HavePrefix("create jobs"), HavePrefix("delete ")), "raygate's writes: %v", writes)
		}

		By("the cluster becomes ready: raygate submits the Initializing job once, under KubeRay's jobId")
		Expect(kubelet.SetBehavior(ctx, inNamespace(ns), framework.Ready)).To(Succeed())
		initializing := attempts[initializingJob]
		Eventually(deploymentOf(ctx, ns, initializingJob)).Should(Equal("Complete/SUCCEEDED"))
		Expect(initializing.submissions()).To(Equal(1))
		Expect(getJob(ctx, ns, initializingJob).Status.JobId).To(Equal(initializing.id))

		By("the user submits the waiting job: raygate follows the id they named")
		userSubmits(ctx, ns, waitingJob, "mine-2")
		Eventually(deploymentOf(ctx, ns, waitingJob)).Should(Equal("Running/RUNNING"))
		attempts[waitingJob] = jobFactsOf(ctx, ns, waitingJob)
		Expect(attempts[waitingJob].clusterUID(ctx)).To(Equal(clusterUID[waitingJob]))

		By("the Ray jobs end: raygate reports them SUCCEEDED, none submitted again")
		for _, name := range []string{interactiveJob, waitingJob, sidecarModeJob} {
			Expect(attempts[name].simulator().SetJobStatus(attempts[name].id, dashboard.JobStatusSucceeded, "")).To(Succeed())
		}
		for name, a := range attempts {
			Eventually(deploymentOf(ctx, ns, name)).Should(Equal("Complete/SUCCEEDED"), name)
			Expect(getJob(ctx, ns, name).Status.JobId).To(Equal(a.id), name)
			Expect(a.submissions()).To(Equal(1), name)
			Expect(a.clusterUID(ctx)).To(Equal(clusterUID[name]), name)
		}
		Expect(attempts[waitingJob].id).To(Equal("mine-2"))
	})

	It("KubeRay takes back the same kinds of RayJobs from raygate: no second submission, same jobId", func(ctx context.Context) {
		Expect(stopRaygate).NotTo(BeNil(), "the first specs did not run")
		back := map[string]rayJobFacts{}
		createModeJobs(ctx, ns, "back-")
		Eventually(deploymentOf(ctx, ns, "back-"+interactiveJob)).Should(Equal("Waiting/"))
		userSubmits(ctx, ns, "back-"+interactiveJob, "mine-3")
		for _, name := range []string{interactiveJob, sidecarModeJob} {
			Eventually(deploymentOf(ctx, ns, "back-"+name)).Should(Equal("Running/RUNNING"), name)
		}
		Eventually(deploymentOf(ctx, ns, "back-"+waitingJob)).Should(Equal("Waiting/"))
		Eventually(func() string { return getJob(ctx, ns, "back-"+initializingJob).Status.JobId }).ShouldNot(BeEmpty())
		Consistently(deploymentOf(ctx, ns, "back-"+initializingJob), 3*time.Second).Should(Equal("Initializing/"))
		for _, name := range []string{interactiveJob, sidecarModeJob, initializingJob} {
			a := jobFactsOf(ctx, ns, "back-"+name)
			back[name], clusterUID["back-"+name] = a, a.clusterUID(ctx)
		}
		clusterUID["back-"+waitingJob] = getCluster(ctx, ns, getJob(ctx, ns, "back-"+waitingJob).Status.RayClusterName).UID
		Expect(back[sidecarModeJob].submissions()).To(Equal(1), "raygate's sidecar submitted the job")
		Expect(back[initializingJob].submissions()).To(Equal(0))
		Eventually(raygateIdle).Should(BeTrue())

		stopRaygate()
		stopKubeRay = startKubeRay(ctx)
		for name, a := range back {
			Consistently(func() int { return a.submissions() }, settle/3).Should(BeNumerically("<=", 1), name)
		}
		Expect(back[interactiveJob].submissions()).To(Equal(1), "KubeRay submitted the interactive job")
		Expect(back[sidecarModeJob].submissions()).To(Equal(1), "KubeRay submitted the sidecar job again")
		Expect(back[initializingJob].submissions()).To(Equal(0), "KubeRay submitted before the cluster was ready")

		By("the cluster becomes ready, the user submits the waiting job, the jobs end")
		Expect(kubelet.SetBehavior(ctx, inNamespace(ns), framework.Ready)).To(Succeed())
		userSubmits(ctx, ns, "back-"+waitingJob, "mine-4")
		Eventually(deploymentOf(ctx, ns, "back-"+waitingJob)).Should(Equal("Running/RUNNING"))
		back[waitingJob] = jobFactsOf(ctx, ns, "back-"+waitingJob)
		for _, name := range []string{interactiveJob, waitingJob, sidecarModeJob} {
			Expect(back[name].simulator().SetJobStatus(back[name].id, dashboard.JobStatusSucceeded, "")).To(Succeed())
		}
		for name, a := range back {
			Eventually(deploymentOf(ctx, ns, "back-"+name)).Should(Equal("Complete/SUCCEEDED"), name)
			Expect(getJob(ctx, ns, "back-"+name).Status.JobId).To(Equal(a.id), name)
			Expect(a.submissions()).To(Equal(1), name)
			Expect(a.clusterUID(ctx)).To(Equal(clusterUID["back-"+name]), name)
			GinkgoWriter.Printf("RayJob back-%s status under KubeRay, started by raygate:\n  %s\n", name, indent(jobStatusFacts(ctx, ns, "back-"+name)()))
		}
	})
})

// createModeJobs creates the four RayJobs (names with prefix), holding the pods of the
// Initializing job's cluster not ready.
func createModeJobs(ctx context.Context, ns, prefix string) {
	GinkgoHelper()
	held := prefix + initializingJob + "-"
	Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool {
		return p.Namespace == ns && strings.HasPrefix(p.Labels[rayv1.ClusterLabelKey], held)
	}, framework.NotReady)).To(Succeed())
	jobs := []*rayv1.RayJob{
		builders.RayJob(prefix+interactiveJob, ns).Mode(rayv1.InteractiveMode).Obj(),
		builders.RayJob(prefix+waitingJob, ns).Mode(rayv1.InteractiveMode).Obj(),
		builders.RayJob(prefix+sidecarModeJob, ns).Mode(rayv1.SidecarMode).Obj(),
		builders.RayJob(prefix+initializingJob, ns).Obj(),
	}
	for _, job := range jobs {
		job.Spec.Entrypoint = holds
		if job.Name == prefix+initializingJob {
			job.Spec.Entrypoint = quickly
		}
		if job.Spec.SubmissionMode == rayv1.InteractiveMode {
			job.Spec.Entrypoint = "" // the user submits it
		}
		Eventually(func() error { return k8s.Create(ctx, job.DeepCopy()) }).Should(Succeed())
	}
}

// userSubmits submits a job to the RayJob's cluster as its user would, under id, and names
// it in spec.jobId.
func userSubmits(ctx context.Context, ns, name, id string) {
	GinkgoHelper()
	cluster := getJob(ctx, ns, name).Status.RayClusterName
	Expect(cluster).NotTo(BeEmpty())
	url, err := dashboards.DashboardURL(ctx, dashboard.Head{Cluster: types.NamespacedName{Namespace: ns, Name: cluster}})
	Expect(err).NotTo(HaveOccurred())
	_, err = (&dashboard.HTTPClient{BaseURL: url}).SubmitJob(ctx, dashboard.JobSubmission{SubmissionID: id, Entrypoint: holds})
	Expect(err).NotTo(HaveOccurred())
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		j := getJob(ctx, ns, name)
		j.Spec.JobId = id
		return k8s.Update(ctx, j)
	})).To(Succeed())
}

// withoutMessage is jobStatusFacts without the message line.
func withoutMessage(facts string) string {
	var keep []string
	for _, line := range strings.Split(facts, "\n") {
		if !strings.HasPrefix(line, "message=") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// inNamespace matches the pods of one namespace.
func inNamespace(ns string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Namespace == ns }
}
