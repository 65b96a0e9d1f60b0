// Package gates has the real Prometheus judge raygate's metric gates on what Traefik and the
// simulated Ray pods' Serve counted: the documented gates pass a healthy version and fail a
// faulty one. It runs in the Gates world (../internal/gwenv), started once here, beside the
// gateway package's and gatefaults' own.
package gates

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/prometheus"
	"github.com/raygate/raygate/test/integration/gateway/internal/gwenv"
)

var (
	gw  *gwenv.Gates
	k8s client.Client
	// prom is the real Prometheus, scraping Traefik and the Ray pods; the operator's
	// --prometheus-url.
	prom *prometheus.Prometheus
)

func TestGates(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Metric gates on the real Prometheus, through Traefik")
}

var _ = BeforeSuite(func(ctx context.Context) {
	gw = gwenv.StartGates(ctx)
	k8s, prom = gw.Client, gw.Prom
})

// The world's helpers, under shorter names.

type (
	gateCondition = gwenv.GateCondition
	gatedRun      = gwenv.GatedRun
	gatedOptions  = gwenv.GatedOptions
	evaluation    = gwenv.Evaluation
)

const gatePolicy = gwenv.GatePolicy

var (
	gateDoc      = gwenv.GateDoc
	rangeOf      = gwenv.RangeOf
	passedValues = gwenv.PassedValues
	gateValueRE  = gwenv.GateValueRE
)

func startGated(ctx context.Context, prefix string, o gatedOptions) *gatedRun {
	GinkgoHelper()
	return gw.StartGated(ctx, prefix, o)
}

func instant(ctx context.Context, expr string, at time.Time) (float64, bool) {
	GinkgoHelper()
	return gw.Instant(ctx, expr, at)
}
