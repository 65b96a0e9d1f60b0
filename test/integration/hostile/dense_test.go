package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
)

// A head pod answers the Serve status raygate decodes, keeps per head and copies into the
// RayService's status: the densest answer the dashboard client accepts must leave every
// status far from etcd's object limit and the operator's heap bounded, one over the caps is
// refused with a condition that says why, and another tenant upgrades meanwhile.
var _ = Describe("A tenant whose head pods answer the densest Serve status", func() {
	const (
		// denseServices is how many of the attacker's RayServices read the densest answer.
		denseServices = 4
		// statusBound: both clusters' applications (dashboard.MaxStatusBytes each) and the
		// rest of a status (conditions, the clusters' status copies).
		statusBound = 2*dashboard.MaxStatusBytes + 64<<10
	)

	It("keeps every status under the bound and the heap bounded, refuses an answer over the caps, and another tenant's upgrade completes", func(ctx context.Context) {
		dense, over := newNamespace(ctx, "attacker-dense-"), newNamespace(ctx, "attacker-overdense-")
		dashboards.SetNamespaceFault(dense, raysim.Fault{Mode: raysim.FaultDense, Deployments: dashboard.MaxDeployments})
		dashboards.SetNamespaceFault(over, raysim.Fault{Mode: raysim.FaultDense, Deployments: dashboard.MaxDeployments + 1})
		DeferCleanup(func(ctx context.Context) {
			// Gone before the next spec, which counts the operator's writes by namespace (the
			// suite runs no garbage collector: the clusters are deleted here too).
			for _, ns := range []string{dense, over} {
				Expect(k8s.DeleteAllOf(ctx, &rayv1.RayService{}, client.InNamespace(ns))).To(Succeed())
				Expect(k8s.DeleteAllOf(ctx, &rayv1.RayCluster{}, client.InNamespace(ns))).To(Succeed())
				Eventually(func() []string { return clusterNames(ctx, ns) }, time.Minute).Should(BeEmpty())
				Eventually(func() int {
					var list rayv1.RayServiceList
					Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
					return len(list.Items)
				}, time.Minute).Should(BeZero())
				dashboards.SetNamespaceFault(ns, raysim.Fault{})
			}
		})
		heap := watchHeap()

		By("creating RayServices whose heads answer the densest Serve status raygate accepts, and one more")
		for i := range denseServices {
			Expect(k8s.Create(ctx, builders.RayService(fmt.Sprintf("dense-%d", i), dense).ServeConfig(stealConfig).Obj())).To(Succeed())
		}
		Expect(k8s.Create(ctx, builders.RayService("hostile", over).ServeConfig(stealConfig).Obj())).To(Succeed())

		By("another tenant's RayService comes up and upgrades meanwhile")
		victim := newNamespace(ctx, "victim-dense-")
		Expect(k8s.Create(ctx, builders.RayService("v", victim).DeletionDelay(1).Obj())).To(Succeed())
		blue := waitServing(ctx, victim, "v")
		start := time.Now()
		setImage(ctx, victim, "v", "rayproject/ray:2.53.0")
		Eventually(activeName(ctx, victim, "v"), 3*time.Minute).ShouldNot(Equal(blue))
		upgrade := time.Since(start)
		// The old cluster is deleted within this spec (a 1 s delay, not the 60 s default), so
		// none of this upgrade's writes lands in a later spec that checks where the operator
		// writes (one did: "delete rayclusters" in this namespace during the attack spec).
		Eventually(func() int { return mgr.Writes.SnapshotIn(victim)["delete rayclusters"] }, time.Minute).Should(BeNumerically(">=", 1), "the old cluster %s is retired", blue)

		By("the dense answers are in the statuses, each status under the bound")
		largest := 0
		Eventually(func(g Gomega) {
			largest = 0
			for i := range denseServices {
				svc := &rayv1.RayService{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: dense, Name: fmt.Sprintf("dense-%d", i)}, svc)).To(Succeed())
				apps := max(len(svc.Status.ActiveServiceStatus.Applications), len(svc.Status.PendingServiceStatus.Applications))
				g.Expect(apps).To(Equal(dashboard.MaxApplications), "the applications of %s", svc.Name)
				size := statusSize(svc)
				Expect(size).To(BeNumerically("<=", statusBound), "the status of %s", svc.Name)
				largest = max(largest, size)
			}
		}, 2*time.Minute).Should(Succeed())

		By("the answer over the caps is refused, and the condition says why")
		Eventually(readyCondition(ctx, over, "hostile")).Should(ContainSubstring("more than 2048 Serve deployments"))
		hostile := &rayv1.RayService{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: over, Name: "hostile"}, hostile)).To(Succeed())
		Expect(statusSize(hostile)).To(BeNumerically("<=", statusBound))

		peak := heap.Stop()
		report := fmt.Sprintf("largest status %d bytes (bound %d); peak heap %.1f MB (bound %d MB); the other tenant's upgrade took %v",
			largest, statusBound, float64(peak)/(1<<20), heapBound>>20, upgrade.Round(time.Millisecond))
		fmt.Fprintln(GinkgoWriter, report)
		AddReportEntry("dense Serve answers", report)
		Expect(peak).To(BeNumerically("<", heapBound))
	}, SpecTimeout(6*time.Minute))
})

// statusSize is the size of a RayService's status as the API server stores it (JSON).
func statusSize(svc *rayv1.RayService) int {
	b, err := json.Marshal(svc.Status)
	Expect(err).NotTo(HaveOccurred())
	return len(b)
}
