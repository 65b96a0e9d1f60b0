package localcluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// A RayJob's K8sJobMode submitter Job on the cluster without containers: kwok runs its pod
// but leaves it Running (kwokcluster.Options.HeldJobPods), framework.Submitters carries out
// its `ray job submit` against the simulated cluster and ends it, and
// kube-controller-manager's Job controller sees the Job complete or fail.
var _ = Describe("a RayJob submitter Job on the local cluster", func() {
	var (
		dashboards *framework.Dashboards
		ns         string
		rayCluster types.NamespacedName
		address    string
	)
	BeforeEach(func(ctx context.Context) {
		ns = namespace(ctx)
		dashboards = framework.StartDashboardsWith(raysim.Options{Jobs: raysim.JobOptions{PendingDelay: 200 * time.Millisecond, RunDelay: time.Second}})
		DeferCleanup(dashboards.Close)
		_, err := dashboards.RunSubmitters(cluster.Config, framework.SubmitterOptions{Poll: 100 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred())

		// What raygate's RayCluster controller would make: a head pod (kwok runs it) and
		// the head Service the RayJob's dashboard address names.
		rc := types.NamespacedName{Namespace: ns, Name: "rj-raycluster-x7k2p"}
		labels := map[string]string{"ray.io/cluster": rc.Name, "ray.io/node-type": "head"}
		Expect(cluster.Client.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rc.Name + "-head", Labels: labels},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0"}}}})).To(Succeed())
		Expect(cluster.Client.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rc.Name + "-head-svc"},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "dashboard", Port: 8265}}}})).To(Succeed())
		address = "http://" + rc.Name + "-head-svc." + ns + ".svc.cluster.local:8265"
		rayCluster = rc
	})

	submitterJob := func(name, submissionID string, backoffLimit int32) *batchv1.Job {
		cmd, args := raysim.K8sJobModeCommand(address, submissionID, "python /home/ray/samples/sample_code.py")
		labels := map[string]string{"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": name}
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: batchv1.JobSpec{BackoffLimit: ptr.To(backoffLimit), Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{{
					Name: raysim.SubmitterContainerName, Image: "rayproject/ray:2.52.0", Command: cmd, Args: args,
					Env: []corev1.EnvVar{{Name: "RAY_DASHBOARD_ADDRESS", Value: address}, {Name: "RAY_JOB_SUBMISSION_ID", Value: submissionID}}}}}}}}
	}
	jobCondition := func(ctx context.Context, name string) func() string {
		return func() string {
			j := &batchv1.Job{}
			Expect(cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, j)).To(Succeed())
			for _, c := range j.Status.Conditions {
				if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
					return string(c.Type)
				}
			}
			return ""
		}
	}
	podPhases := func(ctx context.Context, job string) func() []corev1.PodPhase {
		return func() []corev1.PodPhase {
			var pods corev1.PodList
			Expect(cluster.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"batch.kubernetes.io/job-name": job})).To(Succeed())
			var out []corev1.PodPhase
			for _, p := range pods.Items {
				out = append(out, p.Status.Phase)
			}
			return out
		}
	}

	It("submits the job once, follows it, and the Job completes", func(ctx context.Context) {
		Expect(cluster.Client.Create(ctx, submitterJob("rj", "rj-abc12", 2))).To(Succeed())
		Eventually(jobCondition(ctx, "rj")).WithTimeout(90 * time.Second).Should(Equal("Complete"))
		Expect(podPhases(ctx, "rj")()).To(Equal([]corev1.PodPhase{corev1.PodSucceeded}))
		sim := dashboards.Server(rayCluster)
		info, ok := sim.Job("rj-abc12")
		Expect(ok).To(BeTrue())
		Expect(info.Status).To(Equal(dashboard.JobStatusSucceeded))
		Expect(sim.JobSubmissionsFor("rj-abc12")).To(HaveLen(1))
	})

	It("fails the pods and then the Job when the dashboard refuses every submission", func(ctx context.Context) {
		sim, err := dashboards.Ensure(rayCluster)
		Expect(err).NotTo(HaveOccurred())
		sim.SetJobsFault(raysim.JobsFault{RefuseSubmissions: 500})
		Expect(cluster.Client.Create(ctx, submitterJob("rj-refused", "rj-refused-1", 1))).To(Succeed())
		Eventually(jobCondition(ctx, "rj-refused")).WithTimeout(90 * time.Second).Should(Equal("Failed"))
		Expect(podPhases(ctx, "rj-refused")()).To(ConsistOf(corev1.PodFailed, corev1.PodFailed))
		posts := sim.JobSubmissionsFor("rj-refused-1")
		Expect(posts).To(HaveLen(2), "one try per pod (backoffLimit 1)")
		for _, p := range posts {
			Expect(p.Accepted).To(BeFalse())
		}
	})

	It("completes the Job when the Ray job fails, as `ray job logs --follow` exits 0", func(ctx context.Context) {
		sim, err := dashboards.Ensure(rayCluster)
		Expect(err).NotTo(HaveOccurred())
		sim.SetJobOutcome("rj-fails-1", raysim.JobOutcome{Status: dashboard.JobStatusFailed})
		Expect(cluster.Client.Create(ctx, submitterJob("rj-fails", "rj-fails-1", 2))).To(Succeed())
		Eventually(jobCondition(ctx, "rj-fails")).WithTimeout(90 * time.Second).Should(Equal("Complete"))
		info, _ := sim.Job("rj-fails-1")
		Expect(info.Status).To(Equal(dashboard.JobStatusFailed))
	})

	It("still lets kwok complete the pods of other Jobs", func(ctx context.Context) {
		Expect(cluster.Client.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}}})).To(Succeed())
		Eventually(jobCondition(ctx, "plain")).WithTimeout(90 * time.Second).Should(Equal("Complete"))
	})
})
