// Package rayservice tests the RayService controller: blue/green upgrades, suspension,
// initializing timeouts, ownership of named objects, GCS fault tolerance and Serve proxy
// health. It runs in the world package rsenv starts, as the other RayService packages run
// theirs beside it; every upgrade runs under the invariant checker, which fails the spec on
// any breach observed at any step.
package rayservice

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
	world      *rsenv.World
	env        *controlplane.Env
	k8s        client.Client
	kubelet    *framework.Kubelet
	dashboards *framework.Dashboards
)

func TestRayService(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayService controller: blue/green and lifecycle")
}

var _ = BeforeSuite(func() {
	world = rsenv.Start()
	env, k8s, kubelet = world.Env, world.Client, world.Kubelet
	dashboards = world.Dashboards
})
