package migration

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// Entrypoints the simulated Jobs API runs to different ends (jobOutcome).
const (
	// holds runs until the spec releases it (raysim.Server.SetJobStatus). Words without
	// quotes: KubeRay's submitter passes the entrypoint through a shell.
	holds   = "python /home/ray/samples/hold.py"
	quickly = "python /home/ray/samples/done.py"
)

// jobOutcome is how the simulated Jobs API ends a job, by its entrypoint.
func jobOutcome(_ types.NamespacedName, job dashboard.JobSubmission) raysim.JobOutcome {
	if job.Entrypoint == holds {
		return raysim.JobOutcome{Status: dashboard.JobStatusRunning}
	}
	return raysim.JobOutcome{}
}

// The RayJobs: two RUNNING when KubeRay stops (HTTPMode: KubeRay itself posts it to the
// Jobs API; K8sJobMode: KubeRay's submitter Job does, and follows the job), and one KubeRay
// saw SUCCEEDED whose cluster waits for its TTL.
const (
	runningJob   = "running"
	submitterJob = "submitter"
	finishedJob  = "finished"
	// finishedTTL keeps the finished job's cluster until raygate has taken over; raygate
	// deletes it then, from the end time KubeRay recorded.
	finishedTTL = 30
)

var _ = Describe("RayJobs taken over from KubeRay", Ordered, ContinueOnFailure, func() {
	var (
		ns                       string
		stopKubeRay, stopRaygate func()
		// by RayJob name: the attempt, its cluster's UID, its status facts and status
		// under KubeRay
		attempts   = map[string]rayJobFacts{}
		clusterUID = map[string]types.UID{}
		facts      = map[string]string{}
		underKR    = map[string]rayv1.RayJobStatus{}
		submitter  *batchv1.Job
	)

	BeforeAll(func(ctx context.Context) {
		ns = rstest.NewNamespace(ctx, k8s, "migrate-job-")
	})
	AfterAll(func() {
		for _, stop := range []func(){stopKubeRay, stopRaygate} {
			if stop != nil {
				stop()
			}
		}
	})

	It("KubeRay runs two RayJobs and finishes a third", func(ctx context.Context) {
		stopKubeRay = startKubeRay(ctx)
		By("creating three RayJobs, as a KubeRay user does")
		job := builders.RayJob(runningJob, ns).Mode(rayv1.HTTPMode).Obj()
		job.Spec.Entrypoint = holds
		Expect(k8s.Create(ctx, job)).To(Succeed())
		job = builders.RayJob(submitterJob, ns).Obj()
		job.Spec.Entrypoint = holds
		Expect(k8s.Create(ctx, job)).To(Succeed())
		job = builders.RayJob(finishedJob, ns).Mode(rayv1.HTTPMode).Shutdown(finishedTTL).Obj()
		job.Spec.Entrypoint = quickly
		Expect(k8s.Create(ctx, job)).To(Succeed())

		By("waiting until KubeRay reports two RUNNING and the third SUCCEEDED")
		Eventually(deploymentOf(ctx, ns, runningJob)).Should(Equal("Running/RUNNING"))
		Eventually(deploymentOf(ctx, ns, submitterJob)).Should(Equal("Running/RUNNING"))
		Eventually(deploymentOf(ctx, ns, finishedJob)).Should(Equal("Complete/SUCCEEDED"))
		for _, name := range []string{runningJob, submitterJob, finishedJob} {
			a := jobFactsOf(ctx, ns, name)
			Expect(a.submissions()).To(Equal(1), name)
			attempts[name], clusterUID[name] = a, a.clusterUID(ctx)
			underKR[name], facts[name] = getJob(ctx, ns, name).Status, jobStatusFacts(ctx, ns, name)()
			GinkgoWriter.Printf("RayJob %s status under KubeRay:\n  %s\n", name, indent(facts[name]))
		}
		submitter = &batchv1.Job{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: submitterJob}, submitter)).To(Succeed())
	})

	It("raygate adopts them: no second submission, no new cluster or submitter, the running jobs reach SUCCEEDED", func(ctx context.Context) {
		Expect(stopKubeRay).NotTo(BeNil(), "the first spec did not run")
		stopKubeRay()
		before, err := framework.ReconcileCount("rayjob")
		Expect(err).NotTo(HaveOccurred())
		stopRaygate = startRaygate()

		By("waiting until raygate has reconciled the RayJobs")
		Eventually(func() bool {
			n, err := framework.ReconcileCount("rayjob")
			Expect(err).NotTo(HaveOccurred())
			return n >= before+3 && raygateIdle()
		}).Should(BeTrue())

		By("checking that raygate follows the jobs as KubeRay left them")
		for name, f := range facts {
			Consistently(jobStatusFacts(ctx, ns, name), settle/3).Should(Equal(f), name)
		}
		for name, a := range attempts {
			Expect(a.submissions()).To(Equal(1), "raygate submitted %s again", name)
			Expect(a.clusterUID(ctx)).To(Equal(clusterUID[name]), "the cluster of %s was recreated", name)
		}
		sub := &batchv1.Job{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: submitterJob}, sub)).To(Succeed())
		Expect(sub.UID).To(Equal(submitter.UID), "the submitter Job was recreated")
		writes := raygate.Writes.SnapshotIn(ns)
		GinkgoWriter.Printf("raygate's writes on taking over the RayJobs: %v\n", writes)
		for w := range writes {
			Expect(w).NotTo(Or(HavePrefix("create rayclusters"), HavePrefix("create jobs"), HavePrefix("delete ")), "raygate's writes: %v", writes)
		}

		By("the Ray jobs end: raygate reports them SUCCEEDED as KubeRay would")
		for _, name := range []string{runningJob, submitterJob} {
			a := attempts[name]
			Expect(a.simulator().SetJobStatus(a.id, dashboard.JobStatusSucceeded, "")).To(Succeed())
		}
		for _, name := range []string{runningJob, submitterJob} {
			a, kr := attempts[name], underKR[name]
			Eventually(deploymentOf(ctx, ns, name)).Should(Equal("Complete/SUCCEEDED"))
			st := getJob(ctx, ns, name).Status
			Expect(st.JobId).To(Equal(a.id))
			Expect(st.RayClusterName).To(Equal(a.cluster))
			Expect(st.DashboardURL).To(Equal(kr.DashboardURL))
			Expect(st.StartTime).To(Equal(kr.StartTime), "the attempt's start is KubeRay's")
			Expect(st.RayJobStatusInfo.StartTime).To(Equal(kr.RayJobStatusInfo.StartTime))
			Expect(st.RayJobStatusInfo.EndTime).NotTo(BeNil())
			Expect(st.EndTime).NotTo(BeNil())
			Expect(ptr.Deref(st.Succeeded, -1)).To(BeEquivalentTo(1))
			Expect(ptr.Deref(st.Failed, -1)).To(BeEquivalentTo(0))
			Expect(st.Reason).To(BeEmpty())
			Expect(st.Message).To(Equal("Job finished successfully."))
			Expect(st.RayClusterStatus.State).To(Equal(rayv1.Ready))
			Expect(a.submissions()).To(Equal(1), name)
			Expect(a.clusterUID(ctx)).To(Equal(clusterUID[name]), name)
			GinkgoWriter.Printf("RayJob %s status under raygate:\n  %s\n", name, indent(jobStatusFacts(ctx, ns, name)()))
		}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: submitterJob}, sub)).To(Succeed())
		Expect(sub.UID).To(Equal(submitter.UID))
		Expect(sub.Status.Succeeded).To(BeEquivalentTo(1), "KubeRay's submitter pod followed the job to its end")

		By("the finished job's cluster goes ttlSecondsAfterFinished after KubeRay's end time; nothing runs again")
		finished := attempts[finishedJob]
		Eventually(clusterNames(ctx, ns), finishedTTL*2*time.Second).ShouldNot(ContainElement(finished.cluster))
		end := getJob(ctx, ns, finishedJob).Status.EndTime
		Expect(time.Since(end.Time)).To(BeNumerically(">=", finishedTTL*time.Second))
		Expect(jobStatusFacts(ctx, ns, finishedJob)()).To(Equal(facts[finishedJob]))
		Expect(finished.submissions()).To(Equal(1))
		Expect(clusterNames(ctx, ns)()).To(Equal(sorted(attempts[runningJob].cluster, attempts[submitterJob].cluster)), "no cluster created")
	})

	It("KubeRay takes back RayJobs raygate is running: no second submission, no new cluster or submitter", func(ctx context.Context) {
		By("raygate starts an HTTPMode and a K8sJobMode RayJob")
		back := map[string]rayv1.JobSubmissionMode{"back-http": rayv1.HTTPMode, "back-k8sjob": rayv1.K8sJobMode}
		for name, mode := range back {
			job := builders.RayJob(name, ns).Mode(mode).Obj()
			job.Spec.Entrypoint = holds
			Eventually(func() error { return k8s.Create(ctx, job.DeepCopy()) }).Should(Succeed())
		}
		for name := range back {
			Eventually(deploymentOf(ctx, ns, name)).Should(Equal("Running/RUNNING"))
			a := jobFactsOf(ctx, ns, name)
			Expect(a.submissions()).To(Equal(1), name)
			attempts[name], clusterUID[name], underKR[name] = a, a.clusterUID(ctx), getJob(ctx, ns, name).Status
		}
		sub := &batchv1.Job{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "back-k8sjob"}, sub)).To(Succeed())
		Eventually(raygateIdle).Should(BeTrue())

		stopRaygate()
		stopKubeRay = startKubeRay(ctx)
		By("the Ray jobs end: KubeRay reports them SUCCEEDED, from raygate's status")
		for name := range back {
			a := attempts[name]
			Consistently(deploymentOf(ctx, ns, name), settle/3).Should(Equal("Running/RUNNING"), name)
			Expect(a.submissions()).To(Equal(1), "KubeRay submitted %s again", name)
			Expect(a.simulator().SetJobStatus(a.id, dashboard.JobStatusSucceeded, "")).To(Succeed())
		}
		for name := range back {
			a := attempts[name]
			Eventually(deploymentOf(ctx, ns, name)).Should(Equal("Complete/SUCCEEDED"))
			st := getJob(ctx, ns, name).Status
			Expect(st.JobId).To(Equal(a.id))
			Expect(st.RayClusterName).To(Equal(a.cluster))
			Expect(st.StartTime).To(Equal(underKR[name].StartTime), "the attempt's start is raygate's")
			Expect(ptr.Deref(st.Succeeded, -1)).To(BeEquivalentTo(1))
			Expect(a.submissions()).To(Equal(1), name)
			Expect(a.clusterUID(ctx)).To(Equal(clusterUID[name]), name)
			GinkgoWriter.Printf("RayJob %s status under KubeRay, started by raygate:\n  %s\n", name, indent(jobStatusFacts(ctx, ns, name)()))
		}
		again := &batchv1.Job{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "back-k8sjob"}, again)).To(Succeed())
		Expect(again.UID).To(Equal(sub.UID), "the submitter Job was recreated")
	})
})

// rayJobFacts are what a spec remembers of a RayJob's attempt.
type rayJobFacts struct {
	ns, cluster, id string
}

func jobFactsOf(ctx context.Context, ns, name string) rayJobFacts {
	GinkgoHelper()
	st := getJob(ctx, ns, name).Status
	Expect(st.JobId).NotTo(BeEmpty())
	Expect(st.RayClusterName).NotTo(BeEmpty())
	return rayJobFacts{ns: ns, cluster: st.RayClusterName, id: st.JobId}
}

func (f rayJobFacts) simulator() *raysim.Server {
	return dashboards.Server(types.NamespacedName{Namespace: f.ns, Name: f.cluster})
}

// submissions counts the POSTs to the cluster's Jobs API that named the job's id.
func (f rayJobFacts) submissions() int {
	if s := f.simulator(); s != nil {
		return len(s.JobSubmissionsFor(f.id))
	}
	return 0
}

func (f rayJobFacts) clusterUID(ctx context.Context) types.UID {
	return getCluster(ctx, f.ns, f.cluster).UID
}

func getJob(ctx context.Context, ns, name string) *rayv1.RayJob {
	GinkgoHelper()
	j := &rayv1.RayJob{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, j)).To(Succeed())
	return j
}

// deploymentOf polls "jobDeploymentStatus/jobStatus".
func deploymentOf(ctx context.Context, ns, name string) func() string {
	return func() string {
		st := getJob(ctx, ns, name).Status
		return string(st.JobDeploymentStatus) + "/" + string(st.JobStatus)
	}
}

// jobStatusFacts are the RayJob status fields users and tools read, one per line: both
// operators must write the same values for the same job.
func jobStatusFacts(ctx context.Context, ns, name string) func() string {
	return func() string {
		st := getJob(ctx, ns, name).Status
		t := func(m *metav1.Time) string {
			if m == nil {
				return "<none>"
			}
			return m.UTC().Format("15:04:05")
		}
		return strings.Join([]string{
			"jobStatus=" + string(st.JobStatus) + " jobDeploymentStatus=" + string(st.JobDeploymentStatus) + " reason=" + string(st.Reason),
			"message=" + st.Message,
			"jobId=" + st.JobId + " rayClusterName=" + st.RayClusterName + " dashboardURL=" + st.DashboardURL,
			fmt.Sprintf("succeeded=%d failed=%d", ptr.Deref(st.Succeeded, -1), ptr.Deref(st.Failed, -1)),
			"startTime=" + t(st.StartTime) + " endTime=" + t(st.EndTime) + " rayJobInfo=" + t(st.RayJobStatusInfo.StartTime) + ".." + t(st.RayJobStatusInfo.EndTime),
			"rayClusterStatus.state=" + string(st.RayClusterStatus.State),
		}, "\n")
	}
}
