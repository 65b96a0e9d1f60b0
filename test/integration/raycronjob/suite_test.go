// Package raycronjob is the RayCronJob suite: the manager as the chart's ServiceAccount, its
// webhooks over TLS, and a fake clock the specs move past due times (app.Options'
// RayCronJobClock) instead of waiting for them.
package raycronjob

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/test/builders"
)

var (
	harness *suite.Suite
	env     *controlplane.Env
	k8s     client.Client
	mgr     *framework.Manager
	clock   = &fakeClock{}
)

// fakeClock is the controller's clock: it stands still until a spec moves it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func TestRayCronJob(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayCronJob controller")
}

var _ = BeforeSuite(func() {
	setGate(true)
	clock.Set(time.Now())
	harness = suite.Start(suite.Options{ControlPlane: controlplane.Options{Webhooks: true}})
	env, k8s = harness.Env, harness.Client
	startManager()
	DeferCleanup(func() { Expect(mgr.Stop()).To(Succeed()) })

	probe := builders.RayCronJob("probe", "default").Obj()
	defaulting.RayCronJob(probe)
	Eventually(func() error { return k8s.Create(context.Background(), probe.DeepCopy(), client.DryRunAll) }, 30*time.Second, 200*time.Millisecond).Should(Succeed())
})

// setGate sets the RayCronJob gate, read by the webhooks on every request and by the
// manager when it starts.
func setGate(on bool) {
	Expect(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.RayCronJob): on})).To(Succeed())
}

func startManager() {
	opts := framework.ManagerOptions()
	opts.EnableWebhooks = true
	opts.RayCronJobClock = clock.Now
	mgr = harness.StartManager(opts)
}

func restartManager(whileDown func()) {
	By("restarting the operator")
	Expect(mgr.Stop()).To(Succeed())
	whileDown()
	startManager()
}
