package operator

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// Behaviour KubeRay users depend on, checked where users see it (issue 17's parity list;
// docs/migrating-from-kuberay.md names these specs).
var _ = Describe("KubeRay parity", func() {
	podsOf := func(ctx context.Context, ns, cluster string) []corev1.Pod {
		var pods corev1.PodList
		Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: cluster})).To(Succeed())
		return pods.Items
	}
	podUIDs := func(ctx context.Context, ns, cluster string) func() []types.UID {
		return func() []types.UID {
			var out []types.UID
			for _, p := range podsOf(ctx, ns, cluster) {
				out = append(out, p.UID)
			}
			return out
		}
	}

	It("copies a RayService's labels and annotations to its new RayClusters; ray.io/overwrite-container-cmd keeps the user's command in the pods", func(ctx context.Context) {
		const name = "meta"
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		svc := builders.RayService(name, ns).DeletionDelay(1).Obj()
		svc.Labels = map[string]string{"team": "search", "kueue.x-k8s.io/queue-name": "serving"}
		svc.Annotations = map[string]string{rayv1.OverwriteContainerCmdKey: "true", "example.com/owner": "search-oncall"}
		// A user's own start script: with the annotation, raygate must not wrap it in its
		// generated `ray start` command.
		command, args := []string{"/bin/bash", "-lc", "--"}, []string{"ulimit -n 65536; echo custom-start && $KUBERAY_GEN_RAY_START_CMD"}
		for _, c := range []*corev1.Container{
			&svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0],
			&svc.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.Containers[0],
		} {
			c.Command, c.Args = command, args
		}
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)

		rc := world.RayCluster(ctx, ns, blue)
		Expect(rc.Labels).To(And(HaveKeyWithValue("team", "search"), HaveKeyWithValue("kueue.x-k8s.io/queue-name", "serving"),
			HaveKeyWithValue(rayv1.OriginatedFromCRNameLabelKey, name)))
		Expect(rc.Annotations).To(And(HaveKeyWithValue(rayv1.OverwriteContainerCmdKey, "true"), HaveKeyWithValue("example.com/owner", "search-oncall")))
		pods := podsOf(ctx, ns, blue)
		Expect(pods).To(HaveLen(2))
		for _, p := range pods {
			Expect(p.Annotations).To(HaveKeyWithValue(rayv1.OverwriteContainerCmdKey, "true"), p.Name)
			Expect(p.Spec.Containers[0].Command).To(Equal(command), p.Name)
			Expect(p.Spec.Containers[0].Args).To(Equal(args), p.Name)
			Expect(p.Spec.Containers[0].Env).To(ContainElement(HaveField("Name", "KUBERAY_GEN_RAY_START_CMD")), p.Name)
		}

		By("changing a label on the RayService: no upgrade, and the next cluster gets it")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { s.Labels["team"] = "ranking" })
		Consistently(world.ClusterNames(ctx, ns), time.Second).Should(ConsistOf(blue))
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		green := world.PendingName(ctx, ns, name)()
		Expect(world.RayCluster(ctx, ns, green).Labels).To(HaveKeyWithValue("team", "ranking"))
		Eventually(world.ActiveName(ctx, ns, name)).Should(Equal(green))
	})

	It("exposes the head's serve-grpc port on the serve Service next to serve", func(ctx context.Context) {
		const name = "grpc"
		ns := world.NewNamespace(ctx)
		svc := builders.RayService(name, ns).Obj()
		head := &svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
		head.Ports = append(head.Ports,
			corev1.ContainerPort{Name: "serve", ContainerPort: 8000},
			corev1.ContainerPort{Name: "serve-grpc", ContainerPort: 9000},
			corev1.ContainerPort{Name: "grpc-other", ContainerPort: 9100})
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		world.WaitServing(ctx, ns, name)
		ports := func() map[string]int32 {
			s := &corev1.Service{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-serve-svc"}, s); err != nil {
				return nil
			}
			out := map[string]int32{}
			for _, p := range s.Spec.Ports {
				out[p.Name] = p.Port
			}
			return out
		}
		Eventually(ports).Should(Equal(map[string]int32{"serve": 8000, "serve-grpc": 9000}), "serve and serve-* ports only")
	})

	It("plans a RayService without a strategy type as None under ENABLE_ZERO_DOWNTIME=false, and still upgrades one that asks for NewCluster", func(ctx context.Context) {
		// ENABLE_ZERO_DOWNTIME=false, as the operator reads it at start.
		world.RestartManager(0, func(o *app.Options) { o.DisableZeroDowntime = true })
		DeferCleanup(func() { world.RestartManager(0) })
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		unset := builders.RayService("unset", ns).Obj()
		Expect(unset.Spec.UpgradeStrategy).To(BeNil())
		Expect(k8s.Create(ctx, unset)).To(Succeed())
		Expect(k8s.Create(ctx, builders.RayService("explicit", ns).Strategy(rayv1.NewCluster).DeletionDelay(1).Obj())).To(Succeed())
		unsetBlue := world.WaitServing(ctx, ns, "unset")
		explicitBlue := world.WaitServing(ctx, ns, "explicit")
		pods := podUIDs(ctx, ns, unsetBlue)()
		Expect(pods).NotTo(BeEmpty())

		By("changing the image of both")
		world.Update(ctx, ns, "unset", func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		world.Update(ctx, ns, "explicit", func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.PendingName(ctx, ns, "explicit")).ShouldNot(BeEmpty())
		Eventually(world.ActiveName(ctx, ns, "explicit")).ShouldNot(Equal(explicitBlue))
		Eventually(world.Events(ctx, ns, "unset")).Should(ContainSubstring("Normal ClusterSpecNotApplied"))
		Consistently(world.PendingName(ctx, ns, "unset"), time.Second).Should(BeEmpty())
		Expect(world.ActiveName(ctx, ns, "unset")()).To(Equal(unsetBlue))
		Expect(world.RayCluster(ctx, ns, unsetBlue).Spec.HeadGroupSpec.Template.Spec.Containers[0].Image).To(Equal(builders.DefaultImage))
		Expect(podUIDs(ctx, ns, unsetBlue)()).To(ConsistOf(pods), "no pod was recreated")
		Expect(world.RayService(ctx, ns, "unset").Spec.UpgradeStrategy).To(BeNil(), "the stored spec is not rewritten")
		Expect(world.Condition(ctx, ns, "unset", rayv1.RayServiceReady)()).To(Equal("True/NonZeroServeEndpoints"))
	})

	It("keeps a user's target_capacity with the None strategy, and gives it to the new cluster of a NewCluster upgrade", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		withCapacity := func(tc string) string { return "target_capacity: " + tc + "\n" + builders.DefaultServeConfig }
		Expect(k8s.Create(ctx, builders.RayService("inplace", ns).Strategy(rayv1.None).ServeConfig(withCapacity("50")).Obj())).To(Succeed())
		Expect(k8s.Create(ctx, builders.RayService("newcluster", ns).DeletionDelay(1).ServeConfig(withCapacity("50")).Obj())).To(Succeed())
		inplace := world.WaitServing(ctx, ns, "inplace")
		blue := world.WaitServing(ctx, ns, "newcluster")
		for _, c := range []string{inplace, blue} {
			subs := world.Simulator(ns, c).Submissions()
			Expect(subs).To(HaveLen(1), c)
			Expect(subs[0].TargetCapacity).To(HaveValue(BeNumerically("==", 50)), c)
		}

		By("None: a change of target_capacity reaches the running cluster as written")
		world.Update(ctx, ns, "inplace", func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = withCapacity("70") })
		Eventually(world.Simulator(ns, inplace).Submissions).Should(HaveLen(2))
		Expect(world.Simulator(ns, inplace).Submissions()[1].TargetCapacity).To(HaveValue(BeNumerically("==", 70)))

		By("NewCluster: the new cluster runs the user's target_capacity")
		world.Update(ctx, ns, "newcluster", func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.PendingName(ctx, ns, "newcluster")).ShouldNot(BeEmpty())
		green := world.PendingName(ctx, ns, "newcluster")()
		Eventually(world.ActiveName(ctx, ns, "newcluster")).Should(Equal(green))
		subs := world.Simulator(ns, green).Submissions()
		Expect(subs).NotTo(BeEmpty())
		for _, s := range subs {
			Expect(s.TargetCapacity).To(HaveValue(BeNumerically("==", 50)))
		}
		Expect(world.Condition(ctx, ns, "newcluster", rayv1.RayServiceReady)()).To(Equal("True/NonZeroServeEndpoints"))
	})
})
