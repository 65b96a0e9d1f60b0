// Package gatefaults has raygate's metric gates meet a real Prometheus that fails
// mid-upgrade (killed, then stalled). It runs in the Gates world (../internal/gwenv),
// started once here, beside the gates package's own: its one spec waits on upgrade steps
// and Prometheus far more than it computes.
package gatefaults

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/test/integration/gateway/internal/gwenv"
)

var gw *gwenv.Gates

func TestGateFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Metric gates while the real Prometheus is killed or stalled")
}

var _ = BeforeSuite(func(ctx context.Context) {
	gw = gwenv.StartGates(ctx)
})
