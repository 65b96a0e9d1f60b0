// Package rayjob tests the RayJob controller end to end: a real API server calling raygate's
// webhooks over TLS, the whole manager (RayCluster, RayService and RayJob controllers), the
// fake kubelet, kube-controller-manager's Job and garbage collector controllers, simulated
// Ray dashboards (the Jobs API) and simulated submitter pods. Every submission mode and every
// lifecycle rule is run as a user would, asserting what the user sees: the status, the
// events, the objects created and deleted, and that each attempt submitted the job exactly
// once.
//
// The manager runs as the chart's ServiceAccount under the chart's ClusterRole
// (suite.Start): a request the chart does not allow fails the spec that caused it.
package rayjob

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// Entrypoints the simulated Jobs API runs to different ends.
const (
	succeeds = `python -c "print('ok')"`
	fails    = `python -c "exit(1)"`
	hangs    = `python -c "import time; time.sleep(86400)"`
)

var (
	harness    *suite.Suite
	env        *controlplane.Env
	k8s        client.Client
	kubelet    *framework.Kubelet
	dashboards *framework.Dashboards
	submitters *framework.Submitters
	mgr        *framework.Manager
)

func TestRayJob(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayJob controller")
}

var _ = BeforeSuite(func() {
	harness = suite.Start(suite.Options{ControlPlane: controlplane.Options{Webhooks: true}, Kubelet: &framework.KubeletOptions{}})
	env, k8s, kubelet = harness.Env, harness.Client, harness.Kubelet
	// The Job controller runs the submitter Jobs' pods and completes the Jobs; the garbage
	// collector deletes what a deleted RayJob (or RayCluster, or Job) owned.
	stop, err := env.StartControllers(context.Background(), GinkgoWriter, "job-controller", "garbage-collector-controller")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stop)
	dashboards = framework.StartDashboardsWith(raysim.Options{Jobs: raysim.JobOptions{
		PendingDelay: 100 * time.Millisecond, RunDelay: 400 * time.Millisecond, Outcome: outcomeOf,
	}})
	DeferCleanup(dashboards.Close)
	submitters, err = dashboards.RunSubmitters(env.Config, framework.SubmitterOptions{Poll: 50 * time.Millisecond, RestartBackoff: 100 * time.Millisecond})
	Expect(err).NotTo(HaveOccurred())
	startManager()
	DeferCleanup(func() { Expect(mgr.Stop()).To(Succeed()) })

	// Ready once the API server gets an answer from the webhooks over TLS.
	probe := builders.RayJob("probe", "default").Obj()
	defaulting.RayJob(probe)
	Eventually(func() error { return k8s.Create(context.Background(), probe.DeepCopy(), client.DryRunAll) }, 30*time.Second, 200*time.Millisecond).Should(Succeed())
})

// outcomeOf is how the simulated Jobs API ends a job, by its entrypoint.
func outcomeOf(_ types.NamespacedName, job dashboard.JobSubmission) raysim.JobOutcome {
	switch job.Entrypoint {
	case fails:
		return raysim.JobOutcome{Status: dashboard.JobStatusFailed, Logs: "Traceback: exit(1)"}
	case hangs:
		return raysim.JobOutcome{Status: dashboard.JobStatusRunning}
	}
	return raysim.JobOutcome{}
}

// settings are the RayJob controller's timings here: short polls, so a suite of many jobs
// runs in minutes.
var settings = plan.Settings{JobStatusPoll: 200 * time.Millisecond, Recheck: time.Second}

func startManager(edits ...func(*app.Options)) {
	opts := dashboards.Wire(framework.ManagerOptions())
	opts.EnableWebhooks = true
	opts.RayJob = settings
	for _, edit := range edits {
		edit(&opts)
	}
	mgr = harness.StartManager(opts)
}

// restartManager stops the operator and starts a new one with empty memory.
func restartManager() {
	By("restarting the operator")
	Expect(mgr.Stop()).To(Succeed())
	startManager()
}

func newNamespace(ctx context.Context) string { return rstest.NewNamespace(ctx, k8s, "rj-") }

func create(ctx context.Context, job *rayv1.RayJob) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, job)).To(Succeed())
}

func getJob(ctx context.Context, ns, name string) *rayv1.RayJob {
	GinkgoHelper()
	j := &rayv1.RayJob{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, j)).To(Succeed())
	return j
}

// deployment polls "jobDeploymentStatus/jobStatus".
func deployment(ctx context.Context, ns, name string) func() string {
	return func() string {
		st := getJob(ctx, ns, name).Status
		return string(st.JobDeploymentStatus) + "/" + string(st.JobStatus)
	}
}

// update changes a RayJob's spec, retrying on conflicts.
func update(ctx context.Context, ns, name string, change func(*rayv1.RayJob)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		j := getJob(ctx, ns, name)
		change(j)
		return k8s.Update(ctx, j)
	})).To(Succeed())
}

func events(ctx context.Context, ns, name string) func() string {
	return rstest.Events(ctx, k8s, ns, name)
}

// exists reports whether an object is there and not being deleted.
func exists(ctx context.Context, ns, name string, obj client.Object) func() bool {
	return func() bool {
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return false
		}
		Expect(err).NotTo(HaveOccurred())
		return obj.GetDeletionTimestamp() == nil
	}
}

// gone reports whether an object is gone from the API server.
func gone(ctx context.Context, ns, name string, obj client.Object) func() bool {
	return func() bool {
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return true
		}
		Expect(err).NotTo(HaveOccurred())
		return false
	}
}

func clusterExists(ctx context.Context, ns, name string) func() bool {
	return exists(ctx, ns, name, &rayv1.RayCluster{})
}

func submitterExists(ctx context.Context, ns, name string) func() bool {
	return exists(ctx, ns, name, &batchv1.Job{})
}

func serviceExists(ctx context.Context, ns, name string) func() bool {
	return exists(ctx, ns, name, &corev1.Service{})
}

// simulator is the simulated dashboard of a cluster (nil until raygate or a submitter
// asked for it).
func simulator(ns, cluster string) *raysim.Server {
	return dashboards.Server(types.NamespacedName{Namespace: ns, Name: cluster})
}

// posts counts the POSTs to a cluster's Jobs API that named id (accepted or not).
func posts(ns, cluster, id string) func() int {
	return func() int {
		if s := simulator(ns, cluster); s != nil {
			return len(s.JobSubmissionsFor(id))
		}
		return 0
	}
}

// rayJobStatus is the status of a job in a cluster's simulated Jobs API ("" when unknown).
func rayJobStatus(ns, cluster, id string) func() dashboard.JobStatus {
	return func() dashboard.JobStatus {
		if s := simulator(ns, cluster); s != nil {
			if info, ok := s.Job(id); ok {
				return info.Status
			}
		}
		return ""
	}
}

// started waits until the job runs its attempt and returns its cluster and submission id.
func started(ctx context.Context, ns, name string) (cluster, id string) {
	GinkgoHelper()
	Eventually(func() string { return getJob(ctx, ns, name).Status.JobId }).ShouldNot(BeEmpty())
	st := getJob(ctx, ns, name).Status
	return st.RayClusterName, st.JobId
}
