package incremental

import (
	"context"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

var _ = Describe("NewClusterWithIncrementalUpgrade", func() {
	const name = "llm"

	It("runs the guide's example (maxSurge 20, step 5) step by step, through an operator restart, with every invariant holding", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Incremental(20, 5, 1, rsenv.GatewayClass).DeletionDelay(2).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)

		By("creating the Gateway and HTTPRoute, accepted and programmed by the gateway controller")
		g := &gwv1.Gateway{}
		Eventually(func() error { return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-gateway"}, g) }).Should(Succeed())
		Expect(string(g.Spec.GatewayClassName)).To(Equal(rsenv.GatewayClass))
		Expect(g.Spec.Listeners).To(HaveLen(1))
		Expect(string(g.Spec.Listeners[0].Name)).To(Equal("http"))
		Expect(g.Spec.Listeners[0].Protocol).To(Equal(gwv1.HTTPProtocolType))
		Expect(int32(g.Spec.Listeners[0].Port)).To(Equal(int32(80)))
		Expect(metav1.GetControllerOf(g).Name).To(Equal(name))
		Eventually(func() bool {
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-gateway"}, g)).To(Succeed())
			return meta.IsStatusConditionTrue(g.Status.Conditions, "Programmed")
		}).Should(BeTrue())
		Eventually(func() []gwv1.HTTPBackendRef {
			rt := world.Route(ctx, ns, name)
			if len(rt.Spec.Rules) == 0 {
				return nil
			}
			return rt.Spec.Rules[0].BackendRefs
		}).Should(HaveLen(1))
		rt := world.Route(ctx, ns, name)
		Expect(rt.Spec.ParentRefs).To(HaveLen(1))
		Expect(string(rt.Spec.ParentRefs[0].Name)).To(Equal(name + "-gateway"))
		Expect(rt.Spec.Rules).To(HaveLen(1))
		Expect(rt.Spec.Rules[0].Matches).To(HaveLen(1))
		Expect(*rt.Spec.Rules[0].Matches[0].Path.Type).To(Equal(gwv1.PathMatchPathPrefix))
		Expect(*rt.Spec.Rules[0].Matches[0].Path.Value).To(Equal("/"))
		b := rt.Spec.Rules[0].BackendRefs[0]
		Expect(string(b.Name)).To(Equal(blue + "-serve-svc"))
		Expect(int32(*b.Port)).To(Equal(int32(8000)))
		Expect(*b.Weight).To(Equal(int32(100)))
		Expect(metav1.GetControllerOf(rt).Name).To(Equal(name))
		perCluster := &corev1.Service{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: blue + "-serve-svc"}, perCluster)).To(Succeed())
		Expect(metav1.GetControllerOf(perCluster).Kind).To(Equal("RayCluster"))
		Expect(perCluster.Spec.Selector).To(HaveKeyWithValue(rayv1.ClusterLabelKey, blue))
		st := world.RayService(ctx, ns, name).Status
		Expect(st.ActiveServiceStatus.TargetCapacity).To(HaveValue(Equal(int32(100))))
		Expect(world.Simulator(ns, blue).TargetCapacity()).To(HaveValue(Equal(100.0)))

		By("upgrading: a pending cluster at 0% capacity, starting from minReplicas")
		started := time.Now()
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		green := world.PendingName(ctx, ns, name)()
		pendingRC := world.RayCluster(ctx, ns, green)
		Expect(ptr.Deref(pendingRC.Spec.WorkerGroupSpecs[0].Replicas, 0)).To(BeZero(), "starts from minReplicas (0), not the active cluster's 1")
		Eventually(func() *float64 {
			if s := world.Simulator(ns, green); s != nil && len(s.Submissions()) > 0 {
				return s.Submissions()[0].TargetCapacity
			}
			return nil
		}).Should(HaveValue(BeZero()), "the pending cluster's first config has target_capacity 0")

		By("restarting the operator in the middle of the traffic shift")
		Eventually(world.PendingTraffic(ctx, ns, name), time.Minute).Should(BeNumerically(">=", 30))
		world.RestartManager(1500 * time.Millisecond)

		By("completing: promotion once all capacity and traffic moved")
		Eventually(world.ActiveName(ctx, ns, name), time.Minute).Should(Equal(green))
		elapsed := time.Since(started)
		Eventually(func() []gwv1.HTTPBackendRef { return world.Route(ctx, ns, name).Spec.Rules[0].BackendRefs }).Should(HaveLen(1))
		Expect(string(world.Route(ctx, ns, name).Spec.Rules[0].BackendRefs[0].Name)).To(Equal(green + "-serve-svc"))
		Expect(world.SelectorOf(ctx, ns, name+"-serve-svc")()).To(Equal(green))
		st = world.RayService(ctx, ns, name).Status
		Expect(st.ActiveServiceStatus.TargetCapacity).To(HaveValue(Equal(int32(100))))
		Expect(st.ActiveServiceStatus.TrafficRoutedPercent).To(HaveValue(Equal(int32(100))))
		Expect(world.Condition(ctx, ns, name, rayv1.UpgradeInProgress)()).To(Equal("False/NoPendingCluster"))

		By("moving traffic 5% at a time, at most once per interval, capacity in 20% steps")
		steps := rsenv.TrafficSteps(checker, green)
		want := []int32{}
		for v := int32(0); v <= 100; v += 5 {
			want = append(want, v)
		}
		Expect(steps).To(Equal(want))
		// The checker timestamps route changes when its watch delivers them, which on a busy
		// machine jitters by a few hundred milliseconds; two steps taken in one pass would be
		// tens of milliseconds apart. The total time below is the exact pacing check.
		times := rsenv.RouteTimes(checker)
		for i := 1; i < len(times); i++ {
			Expect(times[i].Sub(times[i-1])).To(BeNumerically(">=", 250*time.Millisecond), "route changes %d and %d", i-1, i)
		}
		Expect(elapsed).To(BeNumerically(">=", 19*time.Second), "20 traffic steps, the first at once, 1 s apart")
		var pendingCaps []float64
		for _, s := range world.Simulator(ns, green).Submissions() {
			if s.TargetCapacity != nil && (len(pendingCaps) == 0 || pendingCaps[len(pendingCaps)-1] != *s.TargetCapacity) {
				pendingCaps = append(pendingCaps, *s.TargetCapacity)
			}
		}
		Expect(pendingCaps).To(Equal([]float64{0, 20, 40, 60, 80, 100}))
		var activeCaps []float64
		for _, s := range world.Simulator(ns, blue).Submissions() {
			Expect(s.ConfigWithoutTargetCapacity()).To(Equal(world.Simulator(ns, blue).Submissions()[0].ConfigWithoutTargetCapacity()))
			if s.TargetCapacity != nil && (len(activeCaps) == 0 || activeCaps[len(activeCaps)-1] != *s.TargetCapacity) {
				activeCaps = append(activeCaps, *s.TargetCapacity)
			}
		}
		Expect(activeCaps).To(Equal([]float64{100, 80, 60, 40, 20, 0}))

		By("deleting the old cluster only after the deletion delay")
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(green))
		Eventually(func() error {
			return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: blue + "-serve-svc"}, &corev1.Service{})
		}).ShouldNot(Succeed())
	})

	It("rolls back step by step when the spec goes back, waits while the route is not programmed, and survives a restart", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		blue, green := world.MidShift(ctx, ns, name, 50, 25, 1, 25)

		By("freezing while the gateway controller does not program the route")
		gw.Pause(true)
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, builders.DefaultImage) })
		Eventually(world.Condition(ctx, ns, name, rayv1.RollbackInProgress)).Should(Equal("True/DesiredClusterSpecChanged"))
		frozen := len(checker.RouteWeights())
		Consistently(func() int { return len(checker.RouteWeights()) }, 2*time.Second).Should(BeNumerically("<=", frozen+1))
		Expect(world.ConditionMessage(ctx, ns, name, rayv1.RollbackInProgress)).To(ContainSubstring("waiting for the last step to take effect"))
		gw.Pause(false)
		Eventually(world.PendingTraffic(ctx, ns, name)).Should(BeNumerically("<", 50))
		world.RestartManager(0)

		By("moving traffic and capacity back, then removing the pending cluster")
		Eventually(world.PendingName(ctx, ns, name)).Should(BeEmpty())
		Expect(world.ActiveName(ctx, ns, name)()).To(Equal(blue))
		Eventually(world.Condition(ctx, ns, name, rayv1.RollbackInProgress)).Should(Equal("False/NoRollback"))
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(blue))
		steps := rsenv.TrafficSteps(checker, green)
		peak := 0
		for i := range steps {
			if steps[i] > steps[peak] {
				peak = i
			}
		}
		Expect(steps[peak:]).To(HaveLen(int(steps[peak]/25)+1), "back down in steps of 25: %v", steps)
		Expect(sort.SliceIsSorted(steps[peak:], func(i, j int) bool { return steps[peak+i] > steps[peak+j] })).To(BeTrue(), "%v", steps)
		st := world.RayService(ctx, ns, name).Status
		Expect(st.ActiveServiceStatus.TargetCapacity).To(HaveValue(Equal(int32(100))))
		Expect(world.Simulator(ns, blue).TargetCapacity()).To(HaveValue(Equal(100.0)))
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("rollback complete"))
		Eventually(rsenv.Upgrades(map[string]string{"strategy": string(rayv1.NewClusterWithIncrementalUpgrade), "result": "rolled_back"})).Should(BeNumerically(">=", 1))
	})

	It("returns to the active cluster before upgrading to a third spec", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		blue, second := world.MidShift(ctx, ns, name, 50, 50, 1, 50)

		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.54.0") })
		Eventually(world.Condition(ctx, ns, name, rayv1.RollbackInProgress)).Should(Equal("True/DesiredClusterSpecChanged"))
		Expect(world.ConditionMessage(ctx, ns, name, rayv1.RollbackInProgress)).To(ContainSubstring("changed again"))

		Eventually(world.ActiveName(ctx, ns, name), time.Minute).ShouldNot(Equal(blue))
		third := world.ActiveName(ctx, ns, name)()
		Expect(third).NotTo(Equal(second))
		Expect(world.RayCluster(ctx, ns, third).Spec.HeadGroupSpec.Template.Spec.Containers[0].Image).To(Equal("rayproject/ray:2.54.0"))
		// The checker sees HTTPRoutes through its own watch, which may trail the status.
		Eventually(func() []int32 { return rsenv.TrafficSteps(checker, third) }).Should(Equal([]int32{0, 50, 100}))
		Expect(rsenv.TrafficSteps(checker, second)).To(Equal([]int32{0, 50, 0}))
		Eventually(world.ClusterNames(ctx, ns)).Should(ConsistOf(third))
	})

	It("moves no traffic to a pending cluster whose applications are unhealthy, and says why", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayService(name, ns).Incremental(50, 50, 1, rsenv.GatewayClass).DeletionDelay(1).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		world.Update(ctx, ns, name, func(s *rayv1.RayService) {
			rstest.SetImage(s, "rayproject/ray:2.53.0")
			s.Spec.ServeConfigV2 = strings.Replace(builders.DefaultServeConfig, "fruit.deployment_graph", rsenv.BrokenImport, 1)
		})
		Eventually(world.Condition(ctx, ns, name, rayv1.UpgradeInProgress)).Should(Equal("True/PendingApplicationsUnhealthy"))
		Expect(world.ConditionMessage(ctx, ns, name, rayv1.UpgradeInProgress)).To(ContainSubstring("fruit (UNHEALTHY: The deployment failed to start"))
		green := world.PendingName(ctx, ns, name)()
		Consistently(world.PendingTraffic(ctx, ns, name), 3*time.Second).Should(BeZero())
		Expect(rsenv.TrafficSteps(checker, green)).To(Equal([]int32{0}))
		Eventually(world.Events(ctx, ns, name)).Should(ContainSubstring("PendingApplicationsUnhealthy"))

		By("fixing the config: the same pending cluster gets it and the upgrade proceeds")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = builders.DefaultServeConfig })
		Eventually(world.ActiveName(ctx, ns, name), time.Minute).Should(Equal(green))
		Expect(world.ActiveName(ctx, ns, name)()).NotTo(Equal(blue))
	})
})
