package migration

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
	// holds runs until the spec releases it (raysim.Server.SetJobStatus).
	holds   = `python -c "import time; time.sleep(86400)"`
	quickly = `python -c "print('done')"`
)

// jobOutcome is how the simulated Jobs API ends a job, by its entrypoint.
func jobOutcome(_ types.NamespacedName, job dashboard.JobSubmission) raysim.JobOutcome {
	if job.Entrypoint == holds {
		return raysim.JobOutcome{Status: dashboard.JobStatusRunning}
	}
	return raysim.JobOutcome{}
}

// The RayJobs: one RUNNING when KubeRay stops (HTTPMode: KubeRay itself posts it to the
// Jobs API), and one KubeRay saw SUCCEEDED whose cluster waits for its TTL.
const (
	runningJob  = "running"
	finishedJob = "finished"
	// finishedTTL keeps the finished job's cluster until raygate has taken over; raygate
	// deletes it then, from the end time KubeRay recorded.
	finishedTTL = 30
)

var _ = Describe("RayJobs taken over from KubeRay", Ordered, ContinueOnFailure, func() {
	var (
		ns                        string
		stopKubeRay, stopRaygate  func()
		running, finished         rayJobFacts
		runningUID, finishedUID   types.UID
		runningFacts, doneFacts   string
		runningStatusUnderKubeRay rayv1.RayJobStatus
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

	It("KubeRay runs one RayJob and finishes another", func(ctx context.Context) {
		stopKubeRay = startKubeRay(ctx)
		By("creating two HTTPMode RayJobs, as a KubeRay user does")
		job := builders.RayJob(runningJob, ns).Mode(rayv1.HTTPMode).Obj()
		job.Spec.Entrypoint = holds
		Expect(k8s.Create(ctx, job)).To(Succeed())
		job = builders.RayJob(finishedJob, ns).Mode(rayv1.HTTPMode).Shutdown(finishedTTL).Obj()
		job.Spec.Entrypoint = quickly
		Expect(k8s.Create(ctx, job)).To(Succeed())

		By("waiting until KubeRay reports one RUNNING and the other SUCCEEDED")
		Eventually(deploymentOf(ctx, ns, runningJob)).Should(Equal("Running/RUNNING"))
		Eventually(deploymentOf(ctx, ns, finishedJob)).Should(Equal("Complete/SUCCEEDED"))
		running, finished = jobFactsOf(ctx, ns, runningJob), jobFactsOf(ctx, ns, finishedJob)
		Expect(running.submissions()).To(Equal(1))
		Expect(finished.submissions()).To(Equal(1))
		runningUID, finishedUID = running.clusterUID(ctx), finished.clusterUID(ctx)
		runningStatusUnderKubeRay = getJob(ctx, ns, runningJob).Status
		runningFacts, doneFacts = jobStatusFacts(ctx, ns, runningJob)(), jobStatusFacts(ctx, ns, finishedJob)()
		GinkgoWriter.Printf("RayJob status under KubeRay:\n  %s\n  %s\n", indent(runningFacts), indent(doneFacts))
	})

	It("raygate adopts both: no second submission, no new cluster, the running job reaches SUCCEEDED", func(ctx context.Context) {
		stopKubeRay()
		before, err := framework.ReconcileCount("rayjob")
		Expect(err).NotTo(HaveOccurred())
		stopRaygate = startRaygate()

		By("waiting until raygate has reconciled both RayJobs")
		Eventually(func() bool {
			n, err := framework.ReconcileCount("rayjob")
			Expect(err).NotTo(HaveOccurred())
			return n >= before+2 && raygateIdle()
		}).Should(BeTrue())

		By("checking that raygate follows the running job as KubeRay left it")
		Consistently(jobStatusFacts(ctx, ns, runningJob), settle/2).Should(Equal(runningFacts))
		Consistently(jobStatusFacts(ctx, ns, finishedJob), settle/2).Should(Equal(doneFacts))
		Expect(running.submissions()).To(Equal(1), "raygate submitted the running job again")
		Expect(finished.submissions()).To(Equal(1), "raygate submitted the finished job again")
		Expect(running.clusterUID(ctx)).To(Equal(runningUID))
		Expect(finished.clusterUID(ctx)).To(Equal(finishedUID))

		By("the Ray job ends: raygate reports it SUCCEEDED as KubeRay would")
		Expect(running.simulator().SetJobStatus(running.id, dashboard.JobStatusSucceeded, "")).To(Succeed())
		Eventually(deploymentOf(ctx, ns, runningJob)).Should(Equal("Complete/SUCCEEDED"))
		st := getJob(ctx, ns, runningJob).Status
		Expect(st.JobId).To(Equal(running.id))
		Expect(st.RayClusterName).To(Equal(running.cluster))
		Expect(st.DashboardURL).To(Equal(runningStatusUnderKubeRay.DashboardURL))
		Expect(st.StartTime).To(Equal(runningStatusUnderKubeRay.StartTime), "the attempt's start is KubeRay's")
		Expect(st.RayJobStatusInfo.StartTime).To(Equal(runningStatusUnderKubeRay.RayJobStatusInfo.StartTime))
		Expect(st.RayJobStatusInfo.EndTime).NotTo(BeNil())
		Expect(st.EndTime).NotTo(BeNil())
		Expect(ptr.Deref(st.Succeeded, -1)).To(BeEquivalentTo(1))
		Expect(ptr.Deref(st.Failed, -1)).To(BeEquivalentTo(0))
		Expect(st.Reason).To(BeEmpty())
		Expect(st.Message).To(Equal("Job finished successfully."))
		Expect(st.RayClusterStatus.State).To(Equal(rayv1.Ready))
		Expect(running.submissions()).To(Equal(1))
		Expect(running.clusterUID(ctx)).To(Equal(runningUID))

		By("the finished job's cluster goes ttlSecondsAfterFinished after KubeRay's end time; nothing runs again")
		Eventually(clusterNames(ctx, ns), finishedTTL*2*time.Second).ShouldNot(ContainElement(finished.cluster))
		end := getJob(ctx, ns, finishedJob).Status.EndTime
		Expect(time.Since(end.Time)).To(BeNumerically(">=", finishedTTL*time.Second))
		Expect(jobStatusFacts(ctx, ns, finishedJob)()).To(Equal(doneFacts))
		Expect(finished.submissions()).To(Equal(1))
		Expect(clusterNames(ctx, ns)()).To(Equal([]string{running.cluster}), "no cluster created")
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
