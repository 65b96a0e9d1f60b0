// Package operator tests the RayService controller: operator restarts at each phase of an
// upgrade, operator upgrades that re-stamp clusters, the None strategy, specs the webhook
// would reject, and KubeRay parity. It runs in the world package rsenv starts, as the other
// RayService packages run theirs beside it; every upgrade runs under the invariant checker,
// which fails the spec on any breach observed at any step.
package operator

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

var (
	world   *rsenv.World
	k8s     client.Client
	kubelet *framework.Kubelet
)

func TestRayServiceOperator(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayService controller: operator restarts and KubeRay parity")
}

var _ = BeforeSuite(func() {
	world = rsenv.Start()
	k8s, kubelet = world.Client, world.Kubelet
})
