// Package faults breaks things during RayService upgrades under load and checks that no
// request fails: the operator is the real cmd/raygate binary in its own process (built once
// per suite), killed with SIGKILL at each phase of an incremental upgrade and started again;
// two replicas with leader election lose their leader; the pending cluster's dashboard goes
// down; the serving cluster's head pod is deleted. Load flows through the real Traefik
// (the Gateway API implementation) and in-cluster to the serve Service's pods, all on
// loopback (the fake kubelet gives pods 127.x IPs and the Ray simulator listens there).
// RayJobs are killed too (rayjob_test.go): between a submission and the status write that
// records it, in HTTPMode and K8sJobMode, each attempt must be submitted exactly once.
//
// The API server calls the operator's webhooks over TLS through a small TCP balancer on
// the address envtest's webhook configuration names: it stands in for the webhook Service,
// forwarding each connection to a replica that accepts it.
//
// The specs run in two test packages, each with its own control plane, so `go test -p` runs
// them side by side (they wait on upgrade intervals and leases far more than they compute):
// kill/ (the operator SIGKILLed at each phase of an upgrade and of a rollback, and between a
// RayJob's submission and its status write) and outages/ (a leader lost, the pending
// cluster's dashboard down, the serving head pod deleted). Each first runs the undisturbed
// upgrade whose steps its disturbed runs must repeat.
package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/internal/testenv/traefik"
)

const className = "traefik"

// deployDelay is how long a simulated Serve application stays DEPLOYING.
const deployDelay = 300 * time.Millisecond

var (
	env        *controlplane.Env
	k8s        client.WithWatch
	kubelet    *framework.Kubelet
	dashboards *framework.Dashboards
	// front forwards the operator process's dashboard requests (--dashboard-url-template
	// /<namespace>/<cluster>/) to the head pod's IP, and can take one cluster's dashboard down.
	front *dashboardFront
	// webhooks is the stand-in for the webhook Service, on the address the API server calls.
	webhooks *balancer
	// operatorBin is cmd/raygate, built once for the suite.
	operatorBin string
	// logDir holds the operator processes' logs.
	logDir string
	// operatorKubeconfig runs the operator processes as the chart's ServiceAccount.
	operatorKubeconfig string
)

// Run runs the fault specs registered in the calling test package.
func Run(t *testing.T, description string) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.SetDefaultEventuallyTimeout(90 * time.Second) // generous: two cores are shared with other suites
	gomega.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ginkgo.RunSpecs(t, description)
}

// Start starts the world the fault specs run in; call it from the test package's
// BeforeSuite.
func Start(ctx context.Context) {
	dir, err := os.MkdirTemp("", "raygate-faults-")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(os.RemoveAll, dir)
	logDir = filepath.Join(dir, "logs")
	gomega.Expect(os.Mkdir(logDir, 0o755)).To(gomega.Succeed())
	// cmd/raygate builds (mostly linking) while the control plane starts; the specs need it,
	// the set-up below does not.
	ginkgo.By("building cmd/raygate")
	var buildErr error
	built := make(chan struct{})
	go func() {
		defer close(built)
		operatorBin, buildErr = buildOperator(dir)
	}()
	ginkgo.DeferCleanup(func() { <-built }) // never remove dir under a running build

	harness := suite.Start(suite.Options{ControlPlane: controlplane.Options{GatewayAPI: true, Webhooks: true}, Kubelet: &framework.KubeletOptions{}})
	env, kubelet = harness.Env, harness.Kubelet
	k8s, err = client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	// The operator processes elect their leader in "default" (operator_test.go) and run as
	// the chart's ServiceAccount; what the API server refuses them is in their logs.
	operatorKubeconfig = harness.OperatorKubeconfig(framework.RBACOptions{LeaderElectionNamespace: "default"})
	harness.WatchLogs(logDir)

	host, port, _ := env.WebhookServing()
	webhooks, err = listenForWebhooks(ctx, env.Client, host, port)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(webhooks.Stop)

	tr, err := traefik.Start(ctx, env.Client, traefik.Options{Kubeconfig: env.Kubeconfig, ClassName: className, Log: ginkgo.GinkgoWriter})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(tr.Stop)
	lb, err := traefik.StartLoopbackEndpoints(env.Config)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(lb.Stop)

	// The fake kubelet runs Ray pods and RayJob submitter pods (Submitters carries the
	// latter's `ray job submit` out against the simulated Jobs API), nothing else.
	gomega.Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool {
		return p.Labels[rayv1.ClusterLabelKey] == "" && p.Labels[batchv1.JobNameLabel] == ""
	}, framework.Ignore)).To(gomega.Succeed())
	dashboards = framework.StartDashboardsWith(raysim.Options{DeployDelay: deployDelay})
	ginkgo.DeferCleanup(dashboards.Close)
	gomega.Expect(dashboards.ListenOnPods(env.Config)).To(gomega.Succeed())
	_, err = dashboards.RunSubmitters(env.Config, framework.SubmitterOptions{Poll: 50 * time.Millisecond})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	// The Job controller runs the RayJob submitter Jobs' pods (rayjob_test.go).
	stopControllers, err := env.StartControllers(context.Background(), ginkgo.GinkgoWriter, "job-controller")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(stopControllers)
	front, err = startFront()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(front.Stop)
	<-built
	gomega.Expect(buildErr).NotTo(gomega.HaveOccurred())
}
