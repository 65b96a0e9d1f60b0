package incremental

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/invariants"
	"github.com/raygate/raygate/test/builders"
)

// The checker must be able to fail: hand-made objects that break the rules are reported.
var _ = Describe("The invariant checker", func() {
	It("reports broken weights, traffic beyond capacity or to non-running applications, and an active cluster deleted", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		c, err := invariants.Start(ctx, env.Config, invariants.Options{Namespace: ns, Dashboards: dashboards.Registry})
		Expect(err).NotTo(HaveOccurred())
		defer c.Stop()

		By("a simulated cluster running its applications at 10% capacity")
		url, err := dashboards.DashboardURL(ctx, dashboard.Head{Cluster: types.NamespacedName{Namespace: ns, Name: "low"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(dashboard.New(url, nil).DeployApplications(ctx, []byte(`{"applications":[{"name":"a","import_path":"m.a"}],"target_capacity":10}`))).To(Succeed())
		Eventually(world.Simulator(ns, "low").AllRunning).Should(BeTrue())

		backend := func(cluster string, w int32) gwv1.HTTPBackendRef {
			return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
				Name: gwv1.ObjectName(cluster + "-serve-svc"), Port: ptr.To(gwv1.PortNumber(8000))}, Weight: ptr.To(w)}}
		}
		rt := &gwv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Name: "x-httproute", Namespace: ns},
			Spec: gwv1.HTTPRouteSpec{
				CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "x-gateway"}}},
				Rules:           []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{backend("low", 50), backend("nowhere", 40)}}},
			},
		}
		Expect(k8s.Create(ctx, rt)).To(Succeed())

		By("an active cluster deleted while still active")
		svc := builders.RayService("x", ns).ServeConfig("applications: [unclosed").Obj() // invalid: the controller leaves it alone
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		Eventually(world.Condition(ctx, ns, "x", rayv1.RayServiceReady)).Should(Equal("False/ValidationFailed"))
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := world.RayService(ctx, ns, "x")
			s.Status.ActiveServiceStatus.RayClusterName = "x-abcde"
			return k8s.Status().Update(ctx, s)
		})).To(Succeed())
		rc := builders.RayCluster("x-abcde", ns).Obj()
		rc.Labels = map[string]string{rayv1.OriginatedFromCRNameLabelKey: "x", rayv1.OriginatedFromCRDLabelKey: "RayService"}
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		Eventually(func() string { return world.RayService(ctx, ns, "x").Status.ActiveServiceStatus.RayClusterName }).Should(Equal("x-abcde"))
		Eventually(func() bool { return c.SawActive("x-abcde") }).Should(BeTrue(), "the checker sees the status before the deletion")
		Expect(k8s.Delete(ctx, rc)).To(Succeed())

		rules := func() []string {
			var out []string
			for _, v := range c.Violations() {
				out = append(out, v.Rule)
			}
			return out
		}
		Eventually(rules).Should(ContainElements(
			invariants.RuleWeightsSum,
			invariants.RuleWithinCapacity,
			invariants.RuleTrafficToRunning,
			invariants.RuleDeleteAfterDelay,
		))
		Expect(c.Err()).To(MatchError(ContainSubstring("route x-httproute gives low 50% of traffic; its target capacity is 10%")))
		Expect(c.Err()).To(MatchError(ContainSubstring("raised nowhere to 40% while its applications are not all RUNNING")))
		Expect(c.Err()).To(MatchError(ContainSubstring("active cluster x-abcde deleted")))
	})
})
