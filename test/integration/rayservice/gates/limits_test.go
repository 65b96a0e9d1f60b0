package gates

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
	"github.com/raygate/raygate/test/integration/rayservice/internal/rsenv"
)

// largestServeConfig is a valid serveConfigV2 of exactly the largest size admitted, its bulk
// in one environment variable; marker tells versions apart.
func largestServeConfig(marker string) string {
	head := "applications:\n  - name: big\n    route_prefix: /big\n    import_path: big.deployment_graph\n    runtime_env:\n      env_vars:\n        MARKER: \"" + marker + "\"\n        PAD: \""
	tail := "\"\n"
	return head + strings.Repeat("x", validation.MaxServeConfigBytes-len(head)-len(tail)) + tail
}

var _ = Describe("Serve configs of the largest size", func() {
	It("converge: the config is submitted once, recorded by hash, kept in a ConfigMap, and sent from there during an upgrade", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		checker := world.WatchInvariants(ctx, ns)
		first := largestServeConfig("one")
		Expect(len(first)).To(Equal(validation.MaxServeConfigBytes))
		Expect(k8s.Create(ctx, builders.RayService("big", ns).Incremental(50, 50, 1, rsenv.GatewayClass).DeletionDelay(1).ServeConfig(first).Obj())).To(Succeed())
		blue := world.WaitServing(ctx, ns, "big")

		By("submitted once, not again")
		sim := world.Simulator(ns, blue)
		Consistently(func() int { return len(sim.Submissions()) }, 3*time.Second).Should(Equal(1))
		rc := world.RayCluster(ctx, ns, blue)
		Expect(rc.Annotations).To(HaveKey(rayv1.ServeConfigHashKey))
		Expect(rc.Annotations).NotTo(HaveKey(rayservice.LegacyServeConfigKey), "the config itself is not in an annotation")
		record := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: blue + "-serve-configs"}, record)).To(Succeed())
		Expect(metav1.IsControlledBy(record, rc)).To(BeTrue())
		Expect(record.Data).To(HaveKeyWithValue(rc.Annotations[rayv1.ServeConfigHashKey], first))

		By("upgrading the cluster and the config: the active cluster's capacity changes resend its own config, read from the ConfigMap")
		world.Update(ctx, ns, "big", func(s *rayv1.RayService) {
			rstest.SetImage(s, "rayproject/ray:2.53.0")
			s.Spec.ServeConfigV2 = largestServeConfig("two")
		})
		Eventually(world.ActiveName(ctx, ns, "big"), 90*time.Second).ShouldNot(Equal(blue))
		subs := sim.Submissions()
		Expect(len(subs)).To(BeNumerically(">", 1), "the active cluster's target capacity changed")
		for _, s := range subs {
			Expect(s.ConfigWithoutTargetCapacity()).To(ContainSubstring(`"MARKER":"one"`), "the active cluster got another config")
		}
		green := world.ActiveName(ctx, ns, "big")()
		Expect(world.Simulator(ns, green).Submissions()[0].ConfigWithoutTargetCapacity()).To(ContainSubstring(`"MARKER":"two"`))
		Expect(checker.Err()).NotTo(HaveOccurred())
	})
})

var _ = Describe("Pods refused by the platform", func() {
	It("are named in the RayService's Ready message and one Warning event while the first cluster initializes", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		By("an admission policy that refuses Ray pods in the namespace")
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "no-ray-pods-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{
					Expression: `!has(object.metadata.labels) || !('ray.io/cluster' in object.metadata.labels)`,
					Message:    "Ray pods exceed the team's GPU quota",
				}},
			},
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        policy.Name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
				}},
			},
		}
		Expect(k8s.Create(ctx, policy)).To(Succeed())
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = k8s.Delete(ctx, policy) })
		probe := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns, Labels: map[string]string{rayv1.ClusterLabelKey: "probe"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		}
		Eventually(func() error { return k8s.Create(ctx, probe.DeepCopy()) }).Should(MatchError(ContainSubstring("GPU quota")))

		Expect(k8s.Create(ctx, builders.RayService("q", ns).Obj())).To(Succeed())
		Eventually(func() string { return world.ConditionMessage(ctx, ns, "q", rayv1.RayServiceReady) }, time.Minute).
			Should(And(ContainSubstring("cannot create pods"), ContainSubstring("GPU quota")))
		Expect(world.Condition(ctx, ns, "q", rayv1.RayServiceReady)()).To(Equal("False/" + rayv1.RayServiceInitializing))
		Eventually(world.Events(ctx, ns, "q")).Should(ContainSubstring("Warning RayClusterReplicaFailure: RayCluster q-"))
		Consistently(func() int { return strings.Count(world.Events(ctx, ns, "q")(), "Warning RayClusterReplicaFailure") }, 3*time.Second).Should(Equal(1))

		By("the policy goes: the pods come, the message goes")
		Expect(k8s.Delete(ctx, binding)).To(Succeed())
		Eventually(world.Condition(ctx, ns, "q", rayv1.RayServiceReady), 2*time.Minute).Should(Equal("True/NonZeroServeEndpoints"))
		Expect(world.ConditionMessage(ctx, ns, "q", rayv1.RayServiceReady)).NotTo(ContainSubstring("cannot create pods"))
	})
})
