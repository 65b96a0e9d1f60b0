package certmanager

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/certmanager"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/podrunner"
	"github.com/raygate/raygate/internal/testenv/tools"
)

const (
	deployment     = "raygate"
	webhookService = "raygate-webhook-service"
)

// operatorSelector selects the chart's operator pods.
var operatorSelector = labels.SelectorFromSet(labels.Set{
	"app.kubernetes.io/name": "raygate", "app.kubernetes.io/instance": release, "app.kubernetes.io/component": "operator",
})

// rollout is what one helm upgrade or rollback did, as the test saw it.
type rollout struct {
	What         string
	Load         loadResult
	HelmReturned time.Duration // helm's --wait returned
	RolledOut    time.Duration // the Deployment's new pods all updated and available, no old pod counted
	LastOldGone  time.Duration // the last pod of the previous template removed from the API
}

func (r rollout) String() string {
	return fmt.Sprintf("%s: %s; helm returned after %.1fs, rollout complete after %.1fs, last old pod gone after %.1fs",
		r.What, r.Load, r.HelmReturned.Seconds(), r.RolledOut.Seconds(), r.LastOldGone.Seconds())
}

// cluster is kube-controller-manager, the pod runner and the endpoint follower: with them
// the Deployment's pods are real processes and the webhook Service's endpoints are real.
type cluster struct {
	runner   *podrunner.Runner
	follower *certmanager.EndpointFollower
	stop     []func()
}

func (c *cluster) close() {
	for i := len(c.stop) - 1; i >= 0; i-- {
		c.stop[i]()
	}
}

// startCluster runs the Deployment's pods and hands the webhook Service over from the
// test's own operator process to their endpoints.
func startCluster(ctx context.Context, op *operatorProc) *cluster {
	c := &cluster{}
	kcmLog, err := os.Create(filepath.Join(logDir, "kube-controller-manager.log"))
	Expect(err).NotTo(HaveOccurred())
	stopKCM, err := env.StartControllers(context.WithoutCancel(ctx), kcmLog, "deployment", "replicaset", "endpointslice", "disruption")
	Expect(err).NotTo(HaveOccurred())
	c.stop = append(c.stop, stopKCM)

	loop, err := kwokcluster.ClaimPodIPBlock()
	Expect(err).NotTo(HaveOccurred())
	c.runner, err = podrunner.Start(ctx, podrunner.Options{
		Client: env.Client, Config: env.Config, Namespace: releaseNS, Selector: operatorSelector,
		Binary: operator, Dir: filepath.Join(workDir, "pods"), LogDir: logDir, Node: "operator-node",
		LoopbackIPs: loop, APIIPs: netip.MustParsePrefix("10.244.0.0/16"), SecretPeriod: 5 * time.Second,
	})
	Expect(err).NotTo(HaveOccurred())
	c.stop = append(c.stop, c.runner.Stop)

	By("waiting for the Deployment's two pods to be ready and in the webhook Service's endpoints")
	Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: releaseNS, Name: deployment}, &d)).To(Succeed())
		g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(2))
		g.Expect(readyEndpoints(ctx)).To(HaveLen(2))
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.follower = &certmanager.EndpointFollower{Client: env.Client, Tunnel: tunnel, Namespace: releaseNS, Service: webhookService,
		PortName: "https", Loopback: c.runner.Loopback, Period: 100 * time.Millisecond}
	done := make(chan struct{})
	go func() { c.follower.Run(fctx); close(done) }()
	c.stop = append(c.stop, func() { cancel(); <-done })
	Eventually(func() []certmanager.BackendChange { return c.follower.Changes() }).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
	Expect(c.follower.Changes()[0].Backends).To(HaveLen(2))
	op.stop() // the Service's endpoints now carry admission alone
	return c
}

// readyEndpoints are the ready addresses of the webhook Service's EndpointSlices.
func readyEndpoints(ctx context.Context) []string {
	var slices discoveryv1.EndpointSliceList
	Expect(env.Client.List(ctx, &slices, client.InNamespace(releaseNS), client.MatchingLabels{"kubernetes.io/service-name": webhookService})).To(Succeed())
	var out []string
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				out = append(out, e.Addresses...)
			}
		}
	}
	return out
}

// operatorPods are the names of the operator pods by pod-template-hash.
func operatorPods(ctx context.Context) map[string][]string {
	var pods corev1.PodList
	Expect(env.Client.List(ctx, &pods, client.InNamespace(releaseNS), client.MatchingLabelsSelector{Selector: operatorSelector})).To(Succeed())
	out := map[string][]string{}
	for _, p := range pods.Items {
		h := p.Labels["pod-template-hash"]
		out[h] = append(out[h], p.Name)
	}
	return out
}

// rollOut runs helm (upgrade or rollback) under continuous admission load and measures it.
func rollOut(ctx context.Context, what string, helmArgs ...string) rollout {
	before := operatorPods(ctx)
	Expect(before).To(HaveLen(1), "one template running before %s: %v", what, before)
	var oldHash string
	for h := range before {
		oldHash = h
	}

	l := newLoad(env.Client, "default")
	l.storedName = "load-" + strings.ReplaceAll(what, " ", "-")
	stop := make(chan struct{})
	done := make(chan loadResult, 1)
	go func() { done <- l.run(ctx, stop, 100000) }()
	Eventually(func() int { return l.result().Requests }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 10))

	var d appsv1.Deployment
	Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: releaseNS, Name: deployment}, &d)).To(Succeed())
	genBefore := d.Generation

	r := rollout{What: what}
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer wg.Done()
		out, err := runHelm(helmArgs...)
		r.HelmReturned = time.Since(start)
		Expect(err).NotTo(HaveOccurred(), out)
	}()
	Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: releaseNS, Name: deployment}, &d)).To(Succeed())
		g.Expect(d.Generation).To(BeNumerically(">", genBefore), "helm changed the pod template")
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.UpdatedReplicas).To(BeEquivalentTo(2))
		g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(2))
		g.Expect(d.Status.Replicas).To(BeEquivalentTo(2)) // terminating pods are not counted
	}).WithContext(ctx).WithTimeout(5*time.Minute).WithPolling(100*time.Millisecond).Should(Succeed(), "rollout of %s", what)
	r.RolledOut = time.Since(start)
	Eventually(func() []string { return operatorPods(ctx)[oldHash] }).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(100 * time.Millisecond).Should(BeEmpty())
	r.LastOldGone = time.Since(start)
	wg.Wait()
	// Requests keep flowing a little longer, to the new pods only.
	time.Sleep(3 * time.Second)
	close(stop)
	r.Load = <-done
	GinkgoWriter.Println(r.String())
	return r
}

// upgradeAndRollback upgrades the release to a new image tag and rolls it back, each under
// continuous admission load through the webhook Service's endpoints, and expects every
// request answered.
func upgradeAndRollback(ctx context.Context, op *operatorProc) {
	c := startCluster(ctx, op)
	defer c.close()
	chart := filepath.Join(tools.RepoRoot(), "charts", "raygate")

	up := rollOut(ctx, "upgrade", "upgrade", release, chart, "--namespace", releaseNS, "--reuse-values",
		"--set", "image.tag=0.1.1-next", "--wait", "--timeout", "5m")
	var d appsv1.Deployment
	Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: releaseNS, Name: deployment}, &d)).To(Succeed())
	Expect(d.Spec.Template.Spec.Containers[0].Image).To(HaveSuffix(":0.1.1-next"))
	back := rollOut(ctx, "rollback", "rollback", release, "--namespace", releaseNS, "--wait", "--timeout", "5m")
	Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: releaseNS, Name: deployment}, &d)).To(Succeed())
	Expect(d.Spec.Template.Spec.Containers[0].Image).NotTo(HaveSuffix(":0.1.1-next"))

	var timeline []string
	for _, e := range c.runner.Events() {
		timeline = append(timeline, e.At.UTC().Format("15:04:05.000")+" "+e.Pod+": "+e.What)
	}
	for _, ch := range c.follower.Changes() {
		timeline = append(timeline, ch.At.UTC().Format("15:04:05.000")+" webhook backends: "+strings.Join(ch.Backends, ", "))
	}
	AddReportEntry("upgrade and rollback", []string{up.String(), back.String()})
	AddReportEntry("operator pods and webhook endpoints", timeline)
	for _, r := range []rollout{up, back} {
		Expect(r.Load.Requests).To(BeNumerically(">", 30), r.What)
		Expect(r.Load.X509).To(BeZero(), "%s: %v", r.What, r.Load.Samples)
		Expect(r.Load.Refused).To(BeZero(), "%s: %v", r.What, r.Load.Samples)
		Expect(r.Load.Wrong).To(BeZero(), "%s: %v", r.What, r.Load.Samples)
	}
	// Each rollout replaced both pods: two endpoints left and two joined.
	Expect(len(c.follower.Changes())).To(BeNumerically(">=", 5))
}

// expectNoForbidden fails on any request the operator processes were refused by RBAC: they
// run with the chart's ServiceAccount, so a missing rule shows up here.
func expectNoForbidden() {
	entries, err := os.ReadDir(logDir)
	Expect(err).NotTo(HaveOccurred())
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "operator") && !strings.HasPrefix(e.Name(), deployment+"-") {
			continue
		}
		n++
		b, err := os.ReadFile(filepath.Join(logDir, e.Name()))
		Expect(err).NotTo(HaveOccurred())
		for _, line := range strings.Split(string(b), "\n") {
			Expect(line).NotTo(ContainSubstring("is forbidden"), e.Name())
		}
	}
	Expect(n).To(BeNumerically(">=", 2), "operator logs found")
}
