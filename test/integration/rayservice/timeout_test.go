package rayservice

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

var _ = Describe("ray.io/initializing-timeout", func() {
	const name = "deadline"

	It("fails a RayService that does not become ready in time, deletes its clusters and does not retry", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		svc := builders.RayService(name, ns).DeletionDelay(1).
			ServeConfig(strings.Replace(builders.DefaultServeConfig, "fruit.deployment_graph", rsenv.BrokenImport, 1)).Obj()
		svc.Annotations = map[string]string{validation.InitializingTimeoutAnnotation: "4"}
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		Eventually(world.PendingName(ctx, ns, name)).ShouldNot(BeEmpty())
		first := world.PendingName(ctx, ns, name)()
		Expect(world.Condition(ctx, ns, name, rayv1.RayServiceReady)()).To(Equal("False/Initializing"))

		Eventually(world.Condition(ctx, ns, name, rayv1.RayServiceReady), 15*time.Second).Should(Equal("False/InitializingTimeout"))
		Expect(world.ConditionMessage(ctx, ns, name, rayv1.RayServiceReady)).To(HavePrefix(
			"the RayService did not become ready within ray.io/initializing-timeout=4s (initializing for "))
		st := world.RayService(ctx, ns, name).Status
		Expect(st.PendingServiceStatus.RayClusterName).To(BeEmpty())
		Expect(st.ActiveServiceStatus.RayClusterName).To(BeEmpty())
		Eventually(rstest.Events(ctx, k8s, ns, name)).Should(ContainSubstring("Warning RayServiceInitializingTimeout: the RayService did not become ready"))
		Eventually(world.ClusterNames(ctx, ns)).Should(BeEmpty(), "its cluster %s is deleted after the deletion delay", first)

		By("fixing the spec: the RayService stays failed")
		world.Update(ctx, ns, name, func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = builders.DefaultServeConfig })
		Consistently(world.ClusterNames(ctx, ns), 2*time.Second).Should(BeEmpty())
		Expect(world.Condition(ctx, ns, name, rayv1.RayServiceReady)()).To(Equal("False/InitializingTimeout"))
	})

	It("does not fail a RayService that becomes ready in time", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		svc := builders.RayService(name, ns).Obj()
		svc.Annotations = map[string]string{validation.InitializingTimeoutAnnotation: "8s"}
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		created := world.RayService(ctx, ns, name).CreationTimestamp.Time
		world.WaitServing(ctx, ns, name)
		Expect(time.Since(created)).To(BeNumerically("<", 8*time.Second), "the RayService served before its timeout")
		// Past the timeout, it is still Ready.
		Consistently(world.Condition(ctx, ns, name, rayv1.RayServiceReady), time.Until(created.Add(9*time.Second))).Should(Equal("True/NonZeroServeEndpoints"))
	})
})
