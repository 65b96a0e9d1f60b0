// Package gates tests the RayService controller: metric gates against a scripted Prometheus,
// hostile dashboards, size limits and refused pods, metrics, and spec hash stamps. It runs in
// the world package rsenv starts, as the other RayService packages run theirs beside it; every
// upgrade runs under the invariant checker, which fails the spec on any breach observed at any
// step.
package gates

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

var (
	world      *rsenv.World
	k8s        client.Client
	dashboards *framework.Dashboards
)

func TestRayServiceGates(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayService controller: metric gates and limits")
}

var _ = BeforeSuite(func() {
	world = rsenv.Start(func(o *app.Options) { o.PrometheusURL = prom.URL() })
	k8s, dashboards = world.Client, world.Dashboards
})
