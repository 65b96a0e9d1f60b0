// Package gateway tests the Traefik harness (internal/testenv/traefik): the real Traefik,
// built from its module by `make tools`, runs against the envtest API server with the
// Gateway API CRDs, programs a Gateway and an HTTPRoute, writes their status itself and
// routes requests by the route's weights to the addresses of EndpointSlices — HTTP servers
// this suite starts on loopback, and the simulated Serve proxies on the pod IPs of the
// RayClusters a raygate manager runs here (the fake kubelet gives pods loopback IPs), so
// load flows through Traefik during raygate's upgrades. The metric gates, judged by the
// real Prometheus on what Traefik and Ray Serve count, are in the package gates below, in
// the same world (internal/gwenv).
package gateway

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/traefik"
	"github.com/raygate/raygate/test/integration/gateway/internal/gwenv"
)

const className = gwenv.ClassName

var (
	world      *gwenv.World
	env        *controlplane.Env
	k8s        client.Client
	tr         *traefik.Traefik
	dashboards *framework.Dashboards
)

func TestGateway(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Traefik as the Gateway API implementation")
}

var _ = BeforeSuite(func(ctx context.Context) {
	world = gwenv.Start(ctx, gwenv.Options{})
	env, k8s, tr, dashboards = world.Env, world.Client, world.Traefik, world.Dashboards
	world.StartManager(func(opts *app.Options) {
		opts.AllowedSharedGateways = []string{sharedGatewayNamespace + "/*"} // sharedgateway_test.go
	})
})
