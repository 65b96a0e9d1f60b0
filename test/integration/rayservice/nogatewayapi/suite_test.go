// Package nogatewayapi runs raygate on a control plane without the Gateway API CRDs: it
// starts, serves the other strategies, and explains why an incremental upgrade cannot start.
// The suite's one control plane is that one (the other RayService packages install the CRDs).
package nogatewayapi

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

var k8s client.Client

func TestRayServiceWithoutGatewayAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayService controller: without the Gateway API CRDs")
}

var _ = BeforeSuite(func() {
	harness := suite.Start(suite.Options{Kubelet: &framework.KubeletOptions{}})
	k8s = harness.Client
	dashboards := framework.StartDashboardsWith(raysim.Options{DeployDelay: 300 * time.Millisecond})
	DeferCleanup(dashboards.Close)
	// The simulators listen on pod IPs and raygate reaches them with its production resolver.
	Expect(dashboards.ListenOnPods(harness.Env.Config)).To(Succeed())
	m := harness.StartManager(dashboards.Wire(framework.ManagerOptions())) // it starts without the Gateway API
	DeferCleanup(func() { Expect(m.Stop()).To(Succeed()) })
})
