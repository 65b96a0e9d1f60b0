// Package actions tests the RayService controller: upgrade actions (pause, resume, promote,
// abort) and kubectl raygate. It runs in the world package rsenv starts, as the other
// RayService packages run theirs beside it; every upgrade runs under the invariant checker,
// which fails the spec on any breach observed at any step.
package actions

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

var (
	world *rsenv.World
	env   *controlplane.Env
	k8s   client.Client
	gw    *framework.Gateway
)

func TestRayServiceActions(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayService controller: upgrade actions")
}

var _ = BeforeSuite(func() {
	world = rsenv.Start()
	env, k8s, gw = world.Env, world.Client, world.Gateway
})
