// Package incremental tests the RayService controller: incremental upgrades step by step,
// rollback, shared Gateways and GRPCRoutes, in-cluster clients under load, target_capacity,
// and the invariant checker itself. It runs in the world package rsenv starts, as the other
// RayService packages run theirs beside it; every upgrade runs under the invariant checker,
// which fails the spec on any breach observed at any step.
package incremental

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

var (
	world      *rsenv.World
	env        *controlplane.Env
	k8s        client.Client
	gw         *framework.Gateway
	dashboards *framework.Dashboards
)

func TestRayServiceIncremental(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayService controller: incremental upgrades")
}

var _ = BeforeSuite(func() {
	world = rsenv.Start(func(o *app.Options) { o.AllowedSharedGateways = []string{sharedGatewayNamespace + "/*"} })
	env, k8s, gw, dashboards = world.Env, world.Client, world.Gateway, world.Dashboards
})
