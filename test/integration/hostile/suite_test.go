// Package hostile plays a hostile tenant against the whole operator: the real manager with
// its webhooks served over TLS to a real API server, both controllers, the fake kubelet,
// simulated Ray dashboards and a stand-in gateway controller. The attacker does everything
// it can at once while another tenant upgrades a RayService; the specs assert what the
// other tenant and the platform team would see.
package hostile

import (
	"context"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

const (
	gatewayClass = "fake-gw"
	// maxPodsPerCluster is the manager's --max-pods-per-cluster here: low enough that a
	// cluster at the bound is quick to run, so the attacker can ask for exactly that.
	maxPodsPerCluster = 150
	// heapBound is what the test process's heap (operator, webhooks, fake kubelet, simulated
	// dashboards and gateway, and the test's own clients) must stay under during the attack.
	heapBound = 160 << 20
)

var (
	env        *controlplane.Env
	k8s        client.Client
	kubelet    *framework.Kubelet
	gw         *framework.Gateway
	dashboards *framework.Dashboards
	mgr        *framework.Manager
)

func TestHostileTenant(t *testing.T) {
	// make test runs each test binary, and what it starts, with GOMAXPROCS=1. Here the
	// attacker's clients share the process with the operator they attack, so on one P their
	// flood would take the operator's CPU as no attacker in another process can (a loaded
	// run measured the victim's upgrade at 2.4x its unattacked time, its traffic steps on
	// pace). The operator, and the API server it talks to, get the cores a deployment gives.
	if err := os.Unsetenv("GOMAXPROCS"); err != nil {
		t.Fatal(err)
	}
	runtime.SetDefaultGOMAXPROCS()
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Hostile tenant")
}

var _ = BeforeSuite(func() {
	Expect(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.RayServiceIncrementalUpgrade): true})).To(Succeed())
	harness := suite.Start(suite.Options{ControlPlane: controlplane.Options{GatewayAPI: true, Webhooks: true}, Kubelet: &framework.KubeletOptions{}})
	env, k8s, kubelet = harness.Env, harness.Client, harness.Kubelet
	var err error
	gw, err = framework.StartGateway(env.Config, framework.GatewayOptions{ClassName: gatewayClass, Delay: 50 * time.Millisecond})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gw.Stop)
	// A Ray job stays RUNNING long enough to be seen there (jobs_test.go).
	dashboards = framework.StartDashboardsWith(raysim.Options{DeployDelay: 300 * time.Millisecond, Jobs: raysim.JobOptions{
		PendingDelay: 100 * time.Millisecond, RunDelay: 5 * time.Second,
	}})
	DeferCleanup(dashboards.Close)

	opts := dashboards.Wire(framework.ManagerOptions())
	opts.EnableWebhooks = true
	opts.MaxPodsPerCluster = maxPodsPerCluster
	opts.MaxPodsPerGroup = maxPodsPerCluster
	opts.RayJob = plan.Settings{JobStatusPoll: 200 * time.Millisecond, Recheck: time.Second}
	opts.AllowedIngressClasses, opts.AllowedIngressHosts = []string{"*/" + ingressClass}, []string{"*/{namespace}.apps.example.com"}
	opts.AllowedIngressAnnotations = []string{"nginx.ingress.kubernetes.io/rewrite-target"}
	opts.PrometheusURL = stalling.URL() // the Prometheus of gates_test.go, which answers no query
	DeferCleanup(stalling.Close)
	mgr = harness.StartManager(opts)
	DeferCleanup(func() { Expect(mgr.Stop()).To(Succeed()) })

	// Ready once the API server gets an answer from the webhooks over TLS.
	probe := builders.RayService("probe", "default").Obj()
	defaulting.RayService(probe)
	Eventually(func() error { return k8s.Create(context.Background(), probe.DeepCopy(), client.DryRunAll) }, 30*time.Second, 200*time.Millisecond).Should(Succeed())
})

func newNamespace(ctx context.Context, prefix string) string {
	return rstest.NewNamespace(ctx, k8s, prefix)
}

// readyCondition is "Status/Reason: message" of a RayService's Ready condition.
func readyCondition(ctx context.Context, ns, name string) func() string {
	return func() string {
		return rstest.Condition(ctx, k8s, ns, name, rayv1.RayServiceReady)() + ": " + rstest.ConditionMessage(ctx, k8s, ns, name, rayv1.RayServiceReady)
	}
}

func activeName(ctx context.Context, ns, name string) func() string {
	return rstest.ActiveName(ctx, k8s, ns, name)
}

// waitServing waits until the RayService serves with no upgrade under way and returns its
// active cluster.
func waitServing(ctx context.Context, ns, name string) string {
	return rstest.WaitServing(ctx, k8s, ns, name)
}

// setImage changes the image of every Ray container of a RayService.
func setImage(ctx context.Context, ns, name, image string) {
	rstest.Update(ctx, k8s, ns, name, func(svc *rayv1.RayService) { rstest.SetImage(svc, image) })
}

func events(ctx context.Context, ns, name string) func() string {
	return rstest.Events(ctx, k8s, ns, name)
}

// heapWatch samples the process's heap until stopped and keeps the largest value seen.
type heapWatch struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func watchHeap() *heapWatch {
	h := &heapWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > h.peak.Load() {
				h.peak.Store(m.HeapInuse)
			}
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// Stop ends the sampling and returns the peak heap in use, in bytes.
func (h *heapWatch) Stop() uint64 {
	close(h.stop)
	<-h.done
	return h.peak.Load()
}
