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
package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(90 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Operator, dashboard and pod faults during upgrades under load")
}

var _ = BeforeSuite(func(ctx context.Context) {
	dir, err := os.MkdirTemp("", "raygate-faults-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	logDir = filepath.Join(dir, "logs")
	Expect(os.Mkdir(logDir, 0o755)).To(Succeed())
	// cmd/raygate builds (mostly linking) while the control plane starts; the specs need it,
	// the set-up below does not.
	By("building cmd/raygate")
	var buildErr error
	built := make(chan struct{})
	go func() {
		defer close(built)
		operatorBin, buildErr = buildOperator(dir)
	}()
	DeferCleanup(func() { <-built }) // never remove dir under a running build

	harness := suite.Start(suite.Options{ControlPlane: controlplane.Options{GatewayAPI: true, Webhooks: true}, Kubelet: &framework.KubeletOptions{}})
	env, kubelet = harness.Env, harness.Kubelet
	k8s, err = client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	// The operator processes elect their leader in "default" (operator_test.go) and run as
	// the chart's ServiceAccount; what the API server refuses them is in their logs.
	operatorKubeconfig = harness.OperatorKubeconfig(framework.RBACOptions{LeaderElectionNamespace: "default"})
	harness.WatchLogs(logDir)

	host, port, _ := env.WebhookServing()
	webhooks, err = startBalancer(host, port)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(webhooks.Stop)

	tr, err := traefik.Start(ctx, env.Client, traefik.Options{Kubeconfig: env.Kubeconfig, ClassName: className, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(tr.Stop)
	lb, err := traefik.StartLoopbackEndpoints(env.Config)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(lb.Stop)

	// The fake kubelet runs Ray pods and RayJob submitter pods (Submitters carries the
	// latter's `ray job submit` out against the simulated Jobs API), nothing else.
	Expect(kubelet.SetBehavior(ctx, func(p *corev1.Pod) bool {
		return p.Labels[rayv1.ClusterLabelKey] == "" && p.Labels[batchv1.JobNameLabel] == ""
	}, framework.Ignore)).To(Succeed())
	dashboards = framework.StartDashboardsWith(raysim.Options{DeployDelay: deployDelay})
	DeferCleanup(dashboards.Close)
	Expect(dashboards.ListenOnPods(env.Config)).To(Succeed())
	_, err = dashboards.RunSubmitters(env.Config, framework.SubmitterOptions{Poll: 50 * time.Millisecond})
	Expect(err).NotTo(HaveOccurred())
	// The Job controller runs the RayJob submitter Jobs' pods (rayjob_test.go).
	stopControllers, err := env.StartControllers(context.Background(), GinkgoWriter, "job-controller")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stopControllers)
	front, err = startFront()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(front.Stop)
	<-built
	Expect(buildErr).NotTo(HaveOccurred())
})
