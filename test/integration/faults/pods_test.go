package faults

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// dashboardDown is how long the pending cluster's dashboard is unreachable: two intervals
// and more, so an operator that ignored the outage would take a step meanwhile.
const dashboardDown = 7 * time.Second

// headPod is the name of a RayCluster's head pod.
func headPod(ctx context.Context, ns, cluster string) string {
	var pods corev1.PodList
	Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: cluster, rayv1.NodeTypeLabelKey: string(rayv1.HeadNode)})).To(Succeed())
	Expect(pods.Items).To(HaveLen(1))
	return pods.Items[0].Name
}

func podSpecs() {
	Describe("Ray faults during an incremental upgrade", func() {
		const name = "fruit"

		BeforeEach(func(ctx context.Context) {
			op := startOperator(ctx, "single")
			DeferCleanup(op.stop)
		})

		// The dashboard goes down as soon as the pending cluster exists: its serve config and
		// every capacity step need it. (Measured: once the pending cluster has its capacity,
		// traffic steps do not call the dashboard, so an outage at 25% with 100% surge does
		// not hold them; see docs/rayservice.md.)
		It("takes no step while the pending cluster's dashboard is down, with 0 failed requests", func(ctx context.Context) {
			u := startUnderLoad(ctx, name, nil)
			green := u.upgrade(ctx)
			By(fmt.Sprintf("taking %s's dashboard down for %s", green, dashboardDown))
			cluster := types.NamespacedName{Namespace: u.ns, Name: green}
			dropped := front.Dropped.Load()
			downAt := time.Now()
			front.SetDown(cluster, true)
			time.Sleep(dashboardDown)
			front.SetDown(cluster, false)
			upAt := time.Now()
			dropped = front.Dropped.Load() - dropped
			u.waitDone(ctx, green)
			r := u.stop()

			var during []change
			for _, c := range r.changes {
				// A step the operator had decided before the outage may land just after it began.
				if c.At.After(downAt.Add(500*time.Millisecond)) && c.At.Before(upAt) {
					during = append(during, c)
				}
			}
			next, _ := firstAfter(r.changes, upAt)
			extra := fmt.Sprintf(" dashboard down %s, %d requests to it dropped, next step %s after it came back",
				dashboardDown, dropped, next.At.Sub(upAt).Round(10*time.Millisecond))
			verdicts("pending dashboard down mid-upgrade", r, extra)
			Expect(during).To(BeEmpty(), "steps while the dashboard was down:\n%s", timelineOf(during, downAt))
			sameSteps("pending dashboard down mid-upgrade", r.changes, baseline.upgrade)
		})

		// Pending: in the one run so far, with excludeHeadPodFromServeSvc=true Traefik answered
		// HTTP 503 (no cluster) to most requests from the first traffic step on, before the head
		// pod was deleted: the per-cluster serve Services probably have no endpoint when the
		// head is excluded (the builders' clusters may have no serving worker). Not yet understood.
		PIt("loses no request when the serving cluster's head pod is deleted mid-upgrade with excludeHeadPodFromServeSvc", func(ctx context.Context) {
			u := startUnderLoad(ctx, name, func(s *rayv1.RayService) { s.Spec.ExcludeHeadPodFromServeSvc = true })
			green := u.upgrade(ctx)
			u.waitValue("green weight", 25)
			head := headPod(ctx, u.ns, u.blue)
			By("deleting " + head)
			Expect(kubelet.DeletePod(ctx, u.ns, head)).To(Succeed())
			u.waitDone(ctx, green)
			r := u.stop()
			verdicts("serving cluster's head pod deleted at 25% (excludeHeadPodFromServeSvc=true)", r, "")
		})

		PIt("measures the requests lost when the serving cluster's head pod, in the serve Service, is deleted mid-upgrade", func(ctx context.Context) {
			u := startUnderLoad(ctx, name, nil)
			green := u.upgrade(ctx)
			u.waitValue("green weight", 25)
			head := headPod(ctx, u.ns, u.blue)
			By("deleting " + head)
			Expect(kubelet.DeletePod(ctx, u.ns, head)).To(Succeed())
			u.waitDone(ctx, green)
			r := u.stop()
			// Measured, not required: requests already routed to the dead pod's address fail
			// until its endpoint leaves the EndpointSlice and the clients notice.
			label := "serving cluster's head pod deleted at 25% (head in the serve Service)"
			verdict(label+", through Traefik", r.gateway, false, fmt.Sprintf(" statuses=%v", r.gateway.Summary().ByStatus))
			verdict(label+", in-cluster via the serve Service", r.inCluster, false, fmt.Sprintf(" statuses=%v", r.inCluster.Summary().ByStatus))
		})
	})
}
