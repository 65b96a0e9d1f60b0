// Package localcluster checks the cluster without containers as its users meet it:
// Deployments get Running, Ready pods with IPs, garbage collection works, Services get
// EndpointSlices, and Stop leaves no process behind.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
)

var cluster *kwokcluster.Cluster

func TestLocalCluster(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "local cluster (kube-controller-manager, kube-scheduler, kwok)")
}

var failed bool

var _ = AfterEach(func() {
	if CurrentSpecReport().Failed() {
		failed = true
	}
})

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	// RayJob submitter pods are left Running for framework.Submitters (submitter_test.go).
	cluster, err = kwokcluster.Start(ctx, kwokcluster.Options{Nodes: 2, HeldJobPods: framework.SubmitterPods()})
	Expect(err).NotTo(HaveOccurred())
	pids := cluster.PIDs()
	DeferCleanup(func() {
		if failed {
			cluster.KeepLogs = true
			fmt.Fprintf(GinkgoWriter, "component logs kept in %s\n", cluster.LogDir)
		}
		Expect(cluster.Stop()).To(Succeed())
		for name, pid := range pids {
			// Each component leads its own process group; nothing in it may survive.
			Expect(errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH)).To(BeTrue(), "%s (process group %d) still running after Stop", name, pid)
		}
	})
}, NodeTimeout(3*time.Minute))
