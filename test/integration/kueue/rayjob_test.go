package kueue

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// Entrypoints the simulated Jobs API runs to different ends: `succeeds` ends SUCCEEDED after
// the suite's RunDelay, `hangs` stays RUNNING until the test ends it.
const (
	succeeds = `python -c "print('ok')"`
	hangs    = `python -c "import time; time.sleep(86400)"`
)

// outcomeOf is how the simulated Jobs API ends a job, by its entrypoint.
func outcomeOf(_ types.NamespacedName, job dashboard.JobSubmission) raysim.JobOutcome {
	if job.Entrypoint == hangs {
		return raysim.JobOutcome{Status: dashboard.JobStatusRunning}
	}
	return raysim.JobOutcome{}
}

// rayJob is a RayJob manifest created suspended, as Kueue wants it (it would suspend it
// anyway), submitting entrypoint over HTTP to a cluster like rayCluster's (a head and
// `workers` workers, 1 CPU each) deleted when the job ends (Kueue requires it).
func rayJob(name, namespace string, workers int, labels map[string]string, entrypoint string) string {
	cluster := rayCluster(name, namespace, workers, labels, "")
	_, clusterSpec, _ := strings.Cut(cluster, "\nspec:\n")
	head, _, _ := strings.Cut(cluster, "\nspec:\n")
	head = strings.Replace(head, "kind: RayCluster", "kind: RayJob", 1)
	return fmt.Sprintf(`%s
spec:
  suspend: true
  submissionMode: HTTPMode
  entrypoint: %q
  shutdownAfterJobFinishes: true
  rayClusterSpec:
%s`, head, entrypoint, indent(clusterSpec, "    "))
}

func indent(text, prefix string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func getRayJob(ctx context.Context, ns, name string) *rayv1.RayJob {
	GinkgoHelper()
	j := &rayv1.RayJob{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, j)).To(Succeed())
	return j
}

// jobState polls "spec.suspend jobDeploymentStatus/jobStatus" of a RayJob, e.g.
// "false Running/RUNNING".
func jobState(ctx context.Context, ns, name string) func() string {
	return func() string {
		j := getRayJob(ctx, ns, name)
		return fmt.Sprintf("%t %s/%s", j.Spec.Suspend, j.Status.JobDeploymentStatus, j.Status.JobStatus)
	}
}

// rayClusters polls the names of the RayClusters in a namespace that are not being deleted.
func rayClusters(ctx context.Context, ns string) func() []string {
	return func() []string {
		var list rayv1.RayClusterList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, rc := range list.Items {
			if rc.DeletionTimestamp.IsZero() {
				out = append(out, rc.Name)
			}
		}
		return out
	}
}

func jobWorkloadCondition(ctx context.Context, ns, job, condition string) func() string {
	return kindWorkloadCondition(ctx, ns, rayv1.RayJobKind, job, condition)
}

// finishRayJob ends a hanging job in its cluster's simulated Jobs API.
func finishRayJob(ctx context.Context, ns, name string) {
	GinkgoHelper()
	st := getRayJob(ctx, ns, name).Status
	s := dashboards.Server(types.NamespacedName{Namespace: ns, Name: st.RayClusterName})
	Expect(s).NotTo(BeNil())
	Expect(s.SetJobStatus(st.JobId, dashboard.JobStatusSucceeded, "")).To(Succeed())
}

var _ = Describe("RayJobs queued by Kueue", func() {
	It("admits a suspended, queued RayJob: it runs on the flavor's nodes to SUCCEEDED, its cluster goes and the Workload finishes", func(ctx context.Context) {
		ns := newQueue(ctx, "ray", "4")
		Expect(kubectlOK(ctx, rayJob("train", ns, 1, queued("ray", ""), succeeds), "apply", "-f", "-")).To(Equal("rayjob.ray.io/train created\n"))
		Eventually(jobWorkloadCondition(ctx, ns, "train", "Admitted")).Should(HavePrefix("True Admitted:"))
		Eventually(jobState(ctx, ns, "train")).Should(Equal("false Running/RUNNING"))
		cluster := getRayJob(ctx, ns, "train").Status.RayClusterName
		Expect(cluster).To(HavePrefix("train-"))
		Expect(flavorsOf(clusterPods(ctx, ns, cluster)())).To(Equal([]string{flavor, flavor}), "Kueue's node selector reaches the job's cluster's pods")

		Eventually(jobState(ctx, ns, "train")).Should(Equal("false Complete/SUCCEEDED"))
		Eventually(rayClusters(ctx, ns)).Should(BeEmpty(), "shutdownAfterJobFinishes deletes the cluster")
		Eventually(jobWorkloadCondition(ctx, ns, "train", "Finished")).Should(HavePrefix("True Succeeded:"))
		Expect(workload(ctx, ns, cluster)).To(BeNil(), "the job's own cluster is not queued again")
	})

	It("keeps a RayJob over quota suspended with no cluster, and runs it once the job before it frees the quota", func(ctx context.Context) {
		ns := newQueue(ctx, "ray", "4")
		kubectlOK(ctx, rayJob("first", ns, 1, queued("ray", ""), hangs), "apply", "-f", "-")
		Eventually(jobState(ctx, ns, "first")).Should(Equal("false Running/RUNNING"))

		By("a job that does not fit next to it (3 more CPUs) waits, suspended, and raygate creates no cluster for it")
		kubectlOK(ctx, rayJob("second", ns, 2, queued("ray", ""), succeeds), "apply", "-f", "-")
		Eventually(jobWorkloadCondition(ctx, ns, "second", "QuotaReserved")).Should(Equal(
			"False Pending: couldn't assign flavors to pod set workers: insufficient unused quota for cpu in flavor on-demand, 1 more needed"))
		Eventually(func() (bool, error) { return mgr.Idle("rayjob", "raycluster") }).Should(BeTrue())
		Consistently(func() string {
			j := getRayJob(ctx, ns, "second")
			return fmt.Sprintf("%t %q %v", j.Spec.Suspend, j.Status.RayClusterName, rayClusters(ctx, ns)())
		}, 2*time.Second).Should(Equal(fmt.Sprintf("true \"\" [%s]", getRayJob(ctx, ns, "first").Status.RayClusterName)))
		Expect(string(getRayJob(ctx, ns, "second").Status.JobDeploymentStatus)).To(BeElementOf("", string(rayv1.JobDeploymentStatusNew), string(rayv1.JobDeploymentStatusSuspended)))

		By("the first job ends; its quota goes to the second, which runs to SUCCEEDED")
		finishRayJob(ctx, ns, "first")
		Eventually(jobState(ctx, ns, "first")).Should(Equal("false Complete/SUCCEEDED"))
		Eventually(jobWorkloadCondition(ctx, ns, "second", "Admitted")).Should(HavePrefix("True Admitted:"))
		Eventually(jobState(ctx, ns, "second")).Should(Equal("false Complete/SUCCEEDED"))
		Eventually(rayClusters(ctx, ns)).Should(BeEmpty())
	})

	It("suspends a preempted running RayJob, whose cluster goes, and runs the preemptor", func(ctx context.Context) {
		ns := newQueue(ctx, "ray", "3")
		kubectlOK(ctx, rayJob("low", ns, 1, queued("ray", "low"), hangs), "apply", "-f", "-")
		Eventually(jobState(ctx, ns, "low")).Should(Equal("false Running/RUNNING"))
		lowCluster := getRayJob(ctx, ns, "low").Status.RayClusterName

		kubectlOK(ctx, rayJob("high", ns, 1, queued("ray", "high"), succeeds), "apply", "-f", "-")
		Eventually(jobWorkloadCondition(ctx, ns, "low", "Evicted")).Should(HavePrefix("True Preempted: Preempted to accommodate a workload"))
		Eventually(func() bool { return getRayJob(ctx, ns, "low").Spec.Suspend }).Should(BeTrue())
		Eventually(func() []string { return rayClusters(ctx, ns)() }).ShouldNot(ContainElement(lowCluster), "the preempted job's cluster is deleted")
		Eventually(clusterPods(ctx, ns, lowCluster)).Should(BeEmpty())
		Eventually(func() rayv1.JobDeploymentStatus { return getRayJob(ctx, ns, "low").Status.JobDeploymentStatus }).Should(Equal(rayv1.JobDeploymentStatusSuspended))
		Expect(getRayJob(ctx, ns, "low").Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.NodeSelector).To(BeEmpty(), "Kueue restores the templates it changed at admission")

		Eventually(jobState(ctx, ns, "high")).Should(Equal("false Complete/SUCCEEDED"))
		Expect(getRayJob(ctx, ns, "high").Status.RayClusterName).NotTo(Equal(lowCluster))
	})
})
