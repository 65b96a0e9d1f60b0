package nogatewayapi

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

var _ = Describe("Without the Gateway API CRDs", func() {
	It("serves, and blocks an incremental upgrade with a condition and an event", func(ctx context.Context) {
		c := k8s
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nogw-"}}
		Expect(c.Create(ctx, ns)).To(Succeed())
		Expect(c.Create(ctx, builders.RayService("inc", ns.Name).Incremental(20, 5, 1, "istio").Obj())).To(Succeed())
		get := func() *rayv1.RayService {
			s := &rayv1.RayService{}
			Expect(c.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: "inc"}, s)).To(Succeed())
			return s
		}
		cond := func(t rayv1.RayServiceConditionType) func() string {
			return func() string {
				x := meta.FindStatusCondition(get().Status.Conditions, string(t))
				if x == nil {
					return ""
				}
				return string(x.Status) + "/" + x.Reason
			}
		}
		Eventually(cond(rayv1.RayServiceReady)).Should(Equal("True/NonZeroServeEndpoints"))
		active := get().Status.ActiveServiceStatus.RayClusterName

		s := get()
		rstest.SetImage(s, "rayproject/ray:2.53.0")
		Expect(c.Update(ctx, s)).To(Succeed())
		Eventually(cond(rayv1.UpgradeInProgress)).Should(Equal("False/GatewayAPIUnavailable"))
		msg := meta.FindStatusCondition(get().Status.Conditions, string(rayv1.UpgradeInProgress)).Message
		Expect(msg).To(ContainSubstring("needs the Gateway API CRDs"))
		Expect(get().Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
		Expect(get().Status.ActiveServiceStatus.RayClusterName).To(Equal(active))
		Expect(cond(rayv1.RayServiceReady)()).To(Equal("True/NonZeroServeEndpoints"))
	})
})
