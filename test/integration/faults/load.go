package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/load"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

const (
	// upgradeInterval is the incremental upgrade's intervalSeconds: Traefik applies HTTPRoute
	// changes closer than 2 s together, and raygate holds the old cluster's last capacity
	// step one interval after the last traffic step (see test/integration/gateway).
	upgradeInterval = 3
	// deletionDelay is rayClusterDeletionDelaySeconds: past the in-cluster client's 100 ms
	// refresh of the serve Service's pods and Traefik's routing lag, as in the gateway suite.
	deletionDelay = 2
	// killDeletionDelay is the deletion delay of the spec that kills the operator between the
	// promotion and the old cluster's deletion: long enough for the kill and the restart.
	killDeletionDelay = 6
	// newImage is the image an upgrade moves to.
	newImage = "rayproject/ray:2.53.0"
	// rate is each load's requests per second.
	rate = 40
)

// underLoad is a RayService serving under two bounded loads, through Traefik and
// in-cluster (the ready pods of the serve Service, as kube-proxy would send them), with its
// upgrade steps recorded.
type underLoad struct {
	ns, name, blue string
	gwRun, svcRun  *load.Run
	steps          *steps
	t0             time.Time
}

// startUnderLoad creates the RayService name (incremental, 100% surge, 25% steps every
// upgradeInterval) in a new namespace, changed by mutate, waits until both clients get
// answers from its first cluster, and starts recording and the loads.
func startUnderLoad(ctx context.Context, name string, mutate func(*rayv1.RayService)) *underLoad {
	ns := rstest.NewNamespace(ctx, k8s, "faults-")
	retire(ns, name)
	svc := builders.RayService(name, ns).Incremental(100, 25, upgradeInterval, className).DeletionDelay(deletionDelay).Obj()
	if mutate != nil {
		mutate(svc)
	}
	gomega.Expect(k8s.Create(ctx, svc)).To(gomega.Succeed())
	blue := rstest.WaitServing(ctx, k8s, ns, name)

	viaGateway := load.Options{Target: load.URL(rstest.GatewayURL(ctx, k8s, ns, name)), Path: "/fruit", Rate: rate, Workers: 4,
		MaxRequests: 12000, MaxDuration: 240 * time.Second, Timeout: 2 * time.Second}
	inCluster := viaGateway
	inCluster.Target = load.ServicePods(k8s, ns, name+"-serve-svc", "serve", 100*time.Millisecond)
	for _, o := range []load.Options{viaGateway, inCluster} {
		gomega.Eventually(func(g gomega.Gomega) {
			rep, err := load.Once(ctx, load.Options{Target: o.Target, Path: o.Path, MaxRequests: 1})
			g.Expect(err).NotTo(gomega.HaveOccurred())
			s := rep.Summary()
			g.Expect(s.Failed).To(gomega.BeZero(), "%v (answered by %q)", s.Errors, rep.Results[0].Cluster)
			g.Expect(s.ByCluster).To(gomega.HaveKey(ns + "/" + blue))
		}).Should(gomega.Succeed(), func() string { return backendState(ctx, ns) })
	}
	u := &underLoad{ns: ns, name: name, blue: blue, steps: recordSteps(ctx, ns, name, blue), t0: time.Now()}
	var err error
	u.gwRun, err = load.Start(ctx, viaGateway)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	u.svcRun, err = load.Start(ctx, inCluster)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return u
}

// upgrade changes the image (a new cluster) and returns the pending cluster's name.
func (u *underLoad) upgrade(ctx context.Context) string {
	rstest.Update(ctx, k8s, u.ns, u.name, func(s *rayv1.RayService) { rstest.SetImage(s, newImage) })
	gomega.Eventually(rstest.PendingName(ctx, k8s, u.ns, u.name)).ShouldNot(gomega.BeEmpty())
	return rstest.PendingName(ctx, k8s, u.ns, u.name)()
}

// rollback sets the spec back to the first cluster's.
func (u *underLoad) rollback(ctx context.Context) {
	rstest.Update(ctx, k8s, u.ns, u.name, func(s *rayv1.RayService) { rstest.SetImage(s, builders.DefaultImage) })
}

// waitValue waits until the recorded key has the value v.
func (u *underLoad) waitValue(key string, v int32) {
	gomega.Eventually(func() int32 { got, _ := u.steps.Last(key); return got }, 2*time.Minute, 20*time.Millisecond).Should(gomega.Equal(v), key)
}

// waitPromoted waits until green is active and, later, the only cluster left.
func (u *underLoad) waitDone(ctx context.Context, active string) {
	gomega.Eventually(rstest.ActiveName(ctx, k8s, u.ns, u.name), 2*time.Minute).Should(gomega.Equal(active))
	gomega.Eventually(rstest.PendingName(ctx, k8s, u.ns, u.name), 2*time.Minute).Should(gomega.BeEmpty())
	gomega.Eventually(rstest.ClusterNames(ctx, k8s, u.ns), 2*time.Minute).Should(gomega.ConsistOf(active), "the other cluster is deleted after the deletion delay")
}

// result is what one scenario measured.
type result struct {
	gateway, inCluster *load.Report
	changes            []change
}

// stop lets the loads run 2 s more (the last change has reached Traefik and a deleted
// cluster's listeners are closed), then stops them and the recording.
func (u *underLoad) stop() result {
	before := len(u.gwRun.Report().Results)
	gomega.Eventually(func() int { return len(u.gwRun.Report().Results) }).Should(gomega.BeNumerically(">", before+2*rate))
	r := result{gateway: u.gwRun.Stop(), inCluster: u.svcRun.Stop(), changes: u.steps.stop()}
	ginkgo.GinkgoWriter.Printf("upgrade steps (from the start of the load):\n%s", timelineOf(r.changes, u.t0))
	return r
}

// verdict reports a load's figures (AddReportEntry, with extra) and, when zeroFailed,
// requires no failed request.
func verdict(label string, rep *load.Report, zeroFailed bool, extra string) {
	s := rep.Summary()
	entry := fmt.Sprintf("%s: sent=%d failed=%d p50=%s p99=%s%s", label, s.Sent, s.Failed,
		s.P50.Round(10*time.Microsecond), s.P99.Round(10*time.Microsecond), extra)
	ginkgo.AddReportEntry(entry)
	ginkgo.GinkgoWriter.Printf("%s\n%s%s", entry, rep.Table(time.Second), failures(rep))
	gomega.Expect(s.Sent).To(gomega.BeNumerically(">=", 100), label)
	if zeroFailed {
		gomega.Expect(s.Failed).To(gomega.BeZero(), "%s: failed requests:\n%s", label, failures(rep))
	}
}

// verdicts judges both loads of a run.
func verdicts(label string, r result, extra string) {
	verdict(label+", through Traefik", r.gateway, true, extra)
	verdict(label+", in-cluster via the serve Service", r.inCluster, true, "")
}

// failures lists the failed requests: when, which cluster answered, why.
func failures(rep *load.Report) string {
	var b strings.Builder
	for _, r := range rep.Results {
		if r.Failed {
			fmt.Fprintf(&b, "failed at %6.3fs status=%d cluster=%q: %s\n", r.At.Seconds(), r.Status, r.Cluster, r.Err)
		}
	}
	return b.String()
}

// retire deletes the RayService and its Gateway and HTTPRoute when the spec ends (every
// Gateway of the suite listens on the same Traefik entry point and routes "/", so one left
// behind would compete for the next spec's requests), and waits until the RayService is gone.
// Register it after starting the spec's operator: cleanups run last first.
func retire(ns, name string) {
	ginkgo.DeferCleanup(func(ctx context.Context) {
		svc := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, svc))).To(gomega.Succeed())
		gomega.Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(svc), svc))
		}).Should(gomega.BeTrue())
		for _, o := range []client.Object{
			&gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rayspec.HTTPRouteName(name)}},
			&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rayspec.GatewayName(name)}},
		} {
			gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(gomega.Succeed())
		}
	})
}

// backendState describes the namespace's pods (readiness, serve label, IP) and the
// EndpointSlices the gateway reads, for a failure message.
func backendState(ctx context.Context, ns string) string {
	var b strings.Builder
	var pods corev1.PodList
	_ = k8s.List(ctx, &pods, client.InNamespace(ns))
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s ip=%s phase=%s serving=%t %s=%s\n", p.Name, p.Status.PodIP, p.Status.Phase,
			rayspec.Serving(&p), rayv1.ServeLabelKey, p.Labels[rayv1.ServeLabelKey])
	}
	var slices discoveryv1.EndpointSliceList
	_ = k8s.List(ctx, &slices, client.InNamespace(ns))
	for _, sl := range slices.Items {
		fmt.Fprintf(&b, "slice %s:", sl.Name)
		for _, e := range sl.Endpoints {
			fmt.Fprintf(&b, " %v ready=%v", e.Addresses, e.Conditions.Ready != nil && *e.Conditions.Ready)
		}
		for _, pt := range sl.Ports {
			if pt.Port != nil {
				fmt.Fprintf(&b, " port %d", *pt.Port)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
