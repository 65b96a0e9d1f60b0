package migration

import (
	"context"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

const (
	standalone = "standalone" // a RayCluster KubeRay creates
	autoscaled = "autoscaled" // one with the autoscaler sidecar, its ServiceAccount, Role and RoleBinding
	adopted    = "made-by-raygate"
	service    = "fruit"
	newImage   = "rayproject/ray:2.52.1"
	// settle is how long nothing may change once an operator has started on live objects.
	settle = 10 * time.Second
)

var _ = Describe("Switching between KubeRay and raygate", Ordered, ContinueOnFailure, func() {
	var (
		ns                  string
		stopKubeRay         func()
		stopRaygate         func()
		podsUnderKubeRay    map[string]types.UID
		clustersUnderKR     []string
		standaloneFacts     string
		autoscaledFacts     string
		serviceFactsUnderKR string
		activeUnderKR       string
		submissionsUnderKR  int
		deploysUnderKR      map[string]float64
		hashUnderKR         string
	)

	simulator := func(cluster string) *raysim.Server {
		return dashboards.Server(types.NamespacedName{Namespace: ns, Name: cluster})
	}
	submissions := func(cluster string) int {
		if s := simulator(cluster); s != nil {
			return len(s.Submissions())
		}
		return 0
	}
	logFacts := func(title, facts string) { GinkgoWriter.Printf("%s:\n  %s\n", title, indent(facts)) }

	BeforeAll(func(ctx context.Context) {
		ns = rstest.NewNamespace(ctx, k8s, "migrate-")
	})
	AfterAll(func() {
		for _, stop := range []func(){stopKubeRay, stopRaygate} {
			if stop != nil {
				stop()
			}
		}
	})

	It("KubeRay creates a RayCluster and a RayService that become Ready and serve", func(ctx context.Context) {
		stopKubeRay = startKubeRay(ctx)
		By("creating a RayCluster and a RayService, as a KubeRay user does")
		Expect(k8s.Create(ctx, builders.RayCluster(standalone, ns).Obj())).To(Succeed())
		Expect(k8s.Create(ctx, builders.RayCluster(autoscaled, ns).Autoscaling().Obj())).To(Succeed())
		Expect(k8s.Create(ctx, builders.RayService(service, ns).DeletionDelay(1).Obj())).To(Succeed())

		By("waiting until KubeRay reports the RayCluster ready and the RayService serving")
		Eventually(func() rayv1.ClusterState { return getCluster(ctx, ns, standalone).Status.State }).Should(Equal(rayv1.Ready))
		Eventually(func() rayv1.ClusterState { return getCluster(ctx, ns, autoscaled).Status.State }).Should(Equal(rayv1.Ready))
		activeUnderKR = rstest.WaitServing(ctx, k8s, ns, service)
		Eventually(func() bool { s := simulator(activeUnderKR); return s != nil && s.AllRunning() }).Should(BeTrue())
		Eventually(serviceFacts(ctx, ns, service)).Should(ContainSubstring("active applications=fruit:RUNNING"))

		By("letting KubeRay settle: no pod changes any more")
		Eventually(func() int { return len(podUIDs(ctx, ns)()) }).Should(Equal(6)) // three heads, three workers
		podsUnderKubeRay = podUIDs(ctx, ns)()
		Consistently(podUIDs(ctx, ns)).Should(Equal(podsUnderKubeRay))
		clustersUnderKR = clusterNames(ctx, ns)()
		Expect(clustersUnderKR).To(ConsistOf(standalone, autoscaled, activeUnderKR))
		standaloneFacts = clusterFacts(ctx, ns, standalone)()
		autoscaledFacts = clusterFacts(ctx, ns, autoscaled)()
		serviceFactsUnderKR = serviceFacts(ctx, ns, service)()
		submissionsUnderKR = submissions(activeUnderKR)
		Expect(submissionsUnderKR).To(BeNumerically(">", 0))
		deploysUnderKR = lastDeploys(simulator(activeUnderKR))
		hashUnderKR = getCluster(ctx, ns, activeUnderKR).Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]
		Expect(hashUnderKR).NotTo(BeEmpty())
		logFacts("RayCluster status under KubeRay", standaloneFacts)
		logFacts("RayService status under KubeRay", serviceFactsUnderKR)
	})

	It("raygate takes over without recreating a pod, the RayService Ready throughout", func(ctx context.Context) {
		ready := watchReadiness(ns, service)
		stopKubeRay()
		stopRaygate = startRaygate()

		By("waiting until raygate has reconciled every object")
		Eventually(func() bool {
			n, err := framework.ReconcileCount("raycluster")
			Expect(err).NotTo(HaveOccurred())
			m, err := framework.ReconcileCount("rayservice")
			Expect(err).NotTo(HaveOccurred())
			return int(n) >= len(clustersUnderKR) && m >= 1 && raygateIdle()
		}).Should(BeTrue())

		By("checking that no pod was recreated and no cluster created")
		Consistently(podUIDs(ctx, ns), settle).Should(Equal(podsUnderKubeRay))
		Expect(clusterNames(ctx, ns)()).To(Equal(clustersUnderKR))
		GinkgoWriter.Printf("raygate's writes on taking over: %v\n", raygate.Writes.SnapshotIn(ns))
		Expect(podWrites(raygate.Writes.SnapshotIn(ns))).To(BeEmpty(), "raygate wrote to pods KubeRay made")

		By("checking that the RayService stayed Ready")
		ready.expectReadyThroughout()

		By("checking that the status fields keep their meaning")
		Expect(clusterFacts(ctx, ns, standalone)()).To(Equal(standaloneFacts))
		Expect(clusterFacts(ctx, ns, autoscaled)()).To(Equal(autoscaledFacts))
		Expect(serviceFacts(ctx, ns, service)()).To(Equal(serviceFactsUnderKR))
		logFacts("RayService status under raygate", serviceFacts(ctx, ns, service)())

		By("checking that Serve kept running what KubeRay deployed")
		// raygate records what it submitted on its own and cannot read back what KubeRay
		// submitted, so it submits the config once more; Ray redeploys no application whose
		// config is unchanged, which is what users see.
		subs := simulator(activeUnderKR).Submissions()
		GinkgoWriter.Printf("Serve submissions to %s: %d by KubeRay, %d by raygate\n", activeUnderKR, submissionsUnderKR, len(subs)-submissionsUnderKR)
		for _, sub := range subs[submissionsUnderKR:] {
			Expect(sub.ConfigWithoutTargetCapacity()).To(Equal(subs[submissionsUnderKR-1].ConfigWithoutTargetCapacity()))
		}
		Expect(lastDeploys(simulator(activeUnderKR))).To(Equal(deploysUnderKR))

		By("checking that raygate reads KubeRay's spec hash on the cluster as its own")
		// The annotation is KubeRay's hash of the RayService's cluster spec; both operators
		// decide from it whether the spec changed, so each must compute the other's value.
		Expect(getCluster(ctx, ns, activeUnderKR).Annotations).To(HaveKeyWithValue(rayv1.HashWithoutReplicasAndWorkersToDeleteKey, hashUnderKR))
	})

	It("raygate upgrades the RayService KubeRay created, Ready throughout", func(ctx context.Context) {
		ready := watchReadiness(ns, service)
		By("changing the image of the RayService's cluster")
		// The webhook server may still be coming up right after the manager started.
		Eventually(func() error {
			svc := rstest.Get(ctx, k8s, ns, service)
			rstest.SetImage(svc, newImage)
			return k8s.Update(ctx, svc)
		}).Should(Succeed())
		Eventually(func() string {
			svc := rstest.Get(ctx, k8s, ns, service)
			if svc.Status.PendingServiceStatus.RayClusterName != "" || svc.Status.ActiveServiceStatus.RayClusterName == activeUnderKR {
				return ""
			}
			return svc.Status.ActiveServiceStatus.RayClusterName
		}).ShouldNot(BeEmpty())
		active := rstest.WaitServing(ctx, k8s, ns, service)
		Expect(imagesOf(ctx, ns, active)()).To(Equal([]string{newImage}))
		By("waiting until the old cluster is deleted")
		Eventually(clusterNames(ctx, ns)).Should(Equal(sorted(standalone, autoscaled, active)))
		ready.expectReadyThroughout()
	})

	It("KubeRay takes back raygate's objects without recreating a pod or creating a cluster", func(ctx context.Context) {
		By("creating a RayCluster through raygate")
		Eventually(func() error { return k8s.Create(ctx, builders.RayCluster(adopted, ns).Obj()) }).Should(Succeed())
		Eventually(func() rayv1.ClusterState { return getCluster(ctx, ns, adopted).Status.State }).Should(Equal(rayv1.Ready))
		Eventually(raygateIdle).Should(BeTrue())
		active := rstest.WaitServing(ctx, k8s, ns, service)
		Eventually(func() int { return len(podUIDs(ctx, ns)()) }).Should(Equal(8))
		pods := podUIDs(ctx, ns)()
		clusters := clusterNames(ctx, ns)()
		facts := serviceFacts(ctx, ns, service)()
		adoptedFacts := clusterFacts(ctx, ns, adopted)()
		logFacts("RayCluster status under raygate", adoptedFacts)
		requests := simulator(active).Requests()
		hash := getCluster(ctx, ns, active).Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]

		ready := watchReadiness(ns, service)
		stopRaygate()
		stopKubeRay = startKubeRay(ctx)
		By("waiting until KubeRay polls the active cluster's Serve applications")
		Eventually(func() int64 { return simulator(active).Requests() }).Should(BeNumerically(">", requests))

		By("checking that no pod was recreated and no cluster created")
		Consistently(podUIDs(ctx, ns), settle).Should(Equal(pods))
		Expect(clusterNames(ctx, ns)()).To(Equal(clusters))
		Expect(serviceFacts(ctx, ns, service)()).To(Equal(facts))
		Expect(clusterFacts(ctx, ns, adopted)()).To(Equal(adoptedFacts))
		logFacts("RayService status back under KubeRay", serviceFacts(ctx, ns, service)())
		ready.expectReadyThroughout()
		Expect(withHost(proxy.Refused())).To(BeEmpty(), "KubeRay called addresses the test proxy does not serve")

		By("checking that KubeRay computes the spec hash raygate stamped")
		// KubeRay re-stamps the active cluster when its version annotation is another
		// operator's; the hash it writes then is its own.
		Eventually(func() map[string]string { return getCluster(ctx, ns, active).Annotations }).Should(HaveKeyWithValue(rayv1.KubeRayVersionKey, "v1.5.1"))
		Expect(getCluster(ctx, ns, active).Annotations).To(HaveKeyWithValue(rayv1.HashWithoutReplicasAndWorkersToDeleteKey, hash))
	})

	// Not a promise but a record of KubeRay v1.5.1's behaviour, for the migration guide ("let
	// upgrades finish before switching back"): on its first pass it rewrites an active cluster
	// whose ray.io/kuberay-version is not its own from the RayService's current spec, in
	// place, before it compares spec hashes; the RayCluster controller recreates no pod for a
	// changed template, so the running pods keep the old image and no new cluster comes.
	It("KubeRay, started on raygate's RayService whose spec changed while no operator ran, updates the active cluster in place and recreates no pod", func(ctx context.Context) {
		By("raygate takes over again and stamps the RayService's cluster as its own")
		stopKubeRay()
		stopRaygate = startRaygate()
		active := rstest.WaitServing(ctx, k8s, ns, service)
		Eventually(func() map[string]string { return getCluster(ctx, ns, active).Annotations }).Should(And(
			HaveKey(rayv1.SpecHashKey), Not(HaveKeyWithValue(rayv1.KubeRayVersionKey, "v1.5.1"))))
		Eventually(raygateIdle).Should(BeTrue())
		pods := podUIDs(ctx, ns)()
		clusters := clusterNames(ctx, ns)()
		before := imagesOf(ctx, ns, active)()
		stopRaygate()

		By("changing the RayService's image while no operator runs")
		const changed = "rayproject/ray:2.53.0"
		rstest.Update(ctx, k8s, ns, service, func(s *rayv1.RayService) { rstest.SetImage(s, changed) })
		ready := watchReadiness(ns, service)
		stopKubeRay = startKubeRay(ctx)

		By("recording what KubeRay does")
		specImage := func() string {
			return getCluster(ctx, ns, active).Spec.HeadGroupSpec.Template.Spec.Containers[0].Image
		}
		Eventually(specImage).Should(Equal(changed), "KubeRay rewrites the active cluster's spec in place")
		Consistently(clusterNames(ctx, ns), settle).Should(Equal(clusters), "no new cluster")
		Expect(podUIDs(ctx, ns)()).To(Equal(pods), "no pod recreated")
		Expect(imagesOf(ctx, ns, active)()).To(Equal(before), "the running pods keep the old image")
		Expect(rstest.PendingName(ctx, k8s, ns, service)()).To(BeEmpty())
		Expect(rstest.ActiveName(ctx, k8s, ns, service)()).To(Equal(active))
		Expect(getCluster(ctx, ns, active).Annotations).To(HaveKeyWithValue(rayv1.KubeRayVersionKey, "v1.5.1"))
		GinkgoWriter.Printf("KubeRay on a spec changed while no operator ran: clusters %v, RayCluster %s image %s, its pods run %v\n",
			clusterNames(ctx, ns)(), active, specImage(), imagesOf(ctx, ns, active)())
		ready.expectReadyThroughout()
	})
})

// lastDeploys are when each Serve application of a simulated cluster was last (re)deployed.
func lastDeploys(s *raysim.Server) map[string]float64 {
	out := map[string]float64{}
	for name, app := range s.Details().Applications {
		out[name] = app.LastDeploy
	}
	return out
}

// podWrites are the writes to pods among counted writes.
func podWrites(writes map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range writes {
		if strings.HasSuffix(k, " pods") || strings.Contains(k, " pods/") {
			out[k] = n
		}
	}
	return out
}

// withHost drops the refused requests without a host: KubeRay checks the Serve proxy of a
// head pod that has no IP yet, which goes nowhere in a real cluster either.
func withHost(refused []string) []string {
	var out []string
	for _, r := range refused {
		if _, target, _ := strings.Cut(r, " "); !strings.HasPrefix(target, ":") {
			out = append(out, r)
		}
	}
	return out
}

func sorted(s ...string) []string {
	sort.Strings(s)
	return s
}

func indent(s string) string {
	out := ""
	for i, r := range s {
		out += string(r)
		if r == '\n' && i < len(s)-1 {
			out += "  "
		}
	}
	return out
}
