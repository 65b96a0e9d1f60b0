// Package features tests the RayCluster controller's optional features against a real API
// server, with the fake kubelet making pods Running and Ready: Ray token and Kubernetes
// token authentication, network isolation, mutual TLS, the dashboard's Ingress and
// OpenShift Route, the history server collector and GCS fault tolerance. Its parent package
// tests the rest; they are two packages so `go test -p` runs them side by side (both mostly
// wait on the controller). Webhooks are not installed here, so invalid objects reach the
// controller.
package features

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

var (
	harness *suite.Suite
	env     *controlplane.Env
	k8s     client.Client
	kubelet *framework.Kubelet
	mgr     *framework.Manager
	// world reads and changes RayClusters through k8s (test/integration/internal/rctest,
	// which the RayCluster suites share) and the manager a spec runs.
	world rctest.World
)

func TestRayClusterFeatures(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayCluster controller: optional features")
}

var _ = BeforeSuite(func() {
	harness = suite.Start(suite.Options{Kubelet: &framework.KubeletOptions{}})
	env, k8s, kubelet = harness.Env, harness.Client, harness.Kubelet
	mgr = harness.StartManager(rctest.ManagerOptions())
	world = rctest.World{Client: k8s, Manager: func() *framework.Manager { return mgr }}
	DeferCleanup(func() error { return mgr.Stop() }) // mgr may be replaced by a spec
})
