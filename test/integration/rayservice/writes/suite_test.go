// Package writes counts the API writes of one incremental RayService upgrade, by verb and
// resource, and holds them to a budget: the figure behind the fleet benchmark's writes per
// upgrade (docs/benchmarks.md, "Upgrade fleet"), measured small and deterministic. It runs
// in the world package rsenv starts, under the invariant checker, alone in its process so
// the manager's write counts are this spec's.
package writes

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

var world *rsenv.World

func TestRayServiceUpgradeWrites(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayService controller: writes per incremental upgrade")
}

var _ = BeforeSuite(func() {
	world = rsenv.Start()
})
