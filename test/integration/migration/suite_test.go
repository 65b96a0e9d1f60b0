// Package migration checks the switch between KubeRay and raygate on live objects: KubeRay's
// operator (v1.5.1, the real binary) creates a RayCluster and a RayService; KubeRay stops and
// raygate (manager and webhooks) takes over without recreating a pod or dropping the
// RayService's readiness, then upgrades the RayService; raygate stops and KubeRay takes the
// objects back, again without recreating a pod. A last spec records what KubeRay does with
// a raygate-stamped RayService whose spec changed while no operator ran. RayJobs (their own
// ordered container): KubeRay runs two (HTTPMode, K8sJobMode) and finishes a third; raygate
// takes them over without a second submission, a new cluster or a new submitter Job. A
// second container does the same, both ways, for InteractiveMode (submitted, and waiting for
// the user), SidecarMode, and a job still Initializing (its cluster held not ready).
//
// Pods are run by the fake kubelet, Serve by the dashboard simulators. raygate reaches the
// simulators in-process; KubeRay reaches the same simulators through a loopback HTTP proxy
// (its HTTP_PROXY) that answers the in-cluster addresses it calls; the simulators serve the
// Ray Jobs API too, and the Job controller and framework.Submitters run K8sJobMode
// submitter pods against them. A stand-in for
// kube-controller-manager's Endpoints controller writes the Endpoints from which KubeRay
// counts serve endpoints.
package migration

import (
	"context"
	"net/netip"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/kuberay"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

var (
	harness    *suite.Suite
	env        *controlplane.Env
	k8s        client.Client
	kubelet    *framework.Kubelet
	dashboards *framework.Dashboards
	proxy      *kuberay.Proxy
	// raygate is the running raygate manager (nil while it is stopped).
	raygate *framework.Manager
	// webhooks are raygate's webhook configurations, installed only while raygate runs: with
	// raygate stopped they would point at nothing and block KubeRay's writes.
	mutating   *admissionregistrationv1.MutatingWebhookConfigurationList
	validating *admissionregistrationv1.ValidatingWebhookConfigurationList
)

func TestMigration(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	SetDefaultConsistentlyDuration(5 * time.Second)
	SetDefaultConsistentlyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "Migration between KubeRay and raygate")
}

var _ = BeforeSuite(func(ctx context.Context) {
	// KubeRay counts serve endpoints from v1 Endpoints, which the API server refuses to hold
	// loopback addresses: pods get private-range IPs, which nothing dials (KubeRay goes
	// through the proxy below, raygate reaches the simulators in process).
	harness = suite.Start(suite.Options{
		ControlPlane: controlplane.Options{Webhooks: true},
		Kubelet:      &framework.KubeletOptions{PodIPs: netip.MustParsePrefix("10.244.0.0/16")},
	})
	env, k8s, kubelet = harness.Env, harness.Client, harness.Kubelet
	// raygate's CRDs, installed by suite.Start, include RayJob (a superset of KubeRay v1.5.1's
	// schema): a user switching installs raygate's chart, and KubeRay's narrower RayJob CRD
	// would prune the status fields it does not know from raygate's writes.
	endpoints, err := kuberay.StartEndpoints(env.Config)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(endpoints.Stop)
	dashboards = framework.StartDashboardsWith(raysim.Options{DeployDelay: 300 * time.Millisecond, Jobs: raysim.JobOptions{
		PendingDelay: 200 * time.Millisecond, RunDelay: 500 * time.Millisecond, Outcome: jobOutcome,
	}})
	DeferCleanup(dashboards.Close)
	// K8sJobMode RayJobs: the Job controller runs the submitter Jobs' pods (the fake kubelet
	// makes them Running) and Submitters carries out their `ray job submit` scripts.
	stopJobs, err := env.StartControllers(context.Background(), GinkgoWriter, "job-controller")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stopJobs)
	_, err = dashboards.RunSubmitters(env.Config, framework.SubmitterOptions{Poll: 100 * time.Millisecond, Sidecars: true})
	Expect(err).NotTo(HaveOccurred())
	proxy, err = kuberay.StartProxy(kuberay.SimulatorRoutes(k8s, dashboards.Registry))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(proxy.Close)
	mutating, validating = &admissionregistrationv1.MutatingWebhookConfigurationList{}, &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	Expect(k8s.List(ctx, mutating)).To(Succeed())
	Expect(k8s.List(ctx, validating)).To(Succeed())
	Expect(mutating.Items).NotTo(BeEmpty())
	removeWebhooks(ctx)
})

// startKubeRay runs KubeRay's operator until the returned function stops it (the caller
// stops it, also when a spec fails: a cleanup registered here would run at the end of the
// spec that started it).
func startKubeRay(ctx context.Context) (stop func()) {
	By("starting KubeRay v1.5.1")
	k, err := kuberay.Start(ctx, env, kuberay.Options{ProxyURL: proxy.URL(), Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		By("stopping KubeRay")
		Expect(k.Stop()).To(Succeed())
	}
	return stop
}

// startRaygate installs raygate's webhooks and runs its manager with them until the returned
// function stops both (the caller stops them, as with startKubeRay).
func startRaygate() (stop func()) {
	By("starting raygate (manager and webhooks)")
	restoreWebhooks(context.Background())
	opts := dashboards.Wire(framework.ManagerOptions())
	opts.EnableWebhooks = true
	opts.RayJob = plan.Settings{JobStatusPoll: 300 * time.Millisecond, Recheck: time.Second}
	mgr := harness.StartManager(opts)
	raygate = mgr
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		By("stopping raygate and removing its webhooks")
		Expect(mgr.Stop()).To(Succeed())
		raygate = nil
		removeWebhooks(context.Background())
	}
	return stop
}

// raygateIdle: raygate's controllers have handled every event they have seen.
func raygateIdle() bool {
	ok, err := raygate.Idle("rayservice", "raycluster", "rayjob")
	Expect(err).NotTo(HaveOccurred())
	return ok
}

func removeWebhooks(ctx context.Context) {
	for i := range mutating.Items {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, mutating.Items[i].DeepCopy()))).To(Succeed())
	}
	for i := range validating.Items {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, validating.Items[i].DeepCopy()))).To(Succeed())
	}
}

func restoreWebhooks(ctx context.Context) {
	fresh := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Labels: m.Labels, Annotations: m.Annotations}
	}
	for _, w := range mutating.Items {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: fresh(w.ObjectMeta), Webhooks: w.Webhooks}
		Expect(k8s.Create(ctx, c)).To(Succeed())
	}
	for _, w := range validating.Items {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: fresh(w.ObjectMeta), Webhooks: w.Webhooks}
		Expect(k8s.Create(ctx, c)).To(Succeed())
	}
}
