package raycluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

// replicaFailure polls a cluster's ReplicaFailure condition as "Reason: message".
func replicaFailure(ctx context.Context, ns, name string) func() string {
	return func() string {
		c := rctest.Condition(world.Get(ctx, ns, name).Status, rayv1.RayClusterReplicaFailure)
		if c == nil {
			return ""
		}
		return c.Reason + ": " + c.Message
	}
}

// refusedUntilReady waits until a probe pod in the namespace is refused with text: the API
// server applies new admission configuration (webhooks, policies) a moment after it is written.
func refusedUntilReady(ctx context.Context, ns, text string) {
	GinkgoHelper()
	one := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "rayproject/ray:2.52.0",
			Resources: corev1.ResourceRequirements{Requests: one, Limits: one}}}}}
	Eventually(func() string {
		err := k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil {
			return "admitted"
		}
		return err.Error()
	}).Should(ContainSubstring(text))
}

var _ = Describe("pod creates refused by admission", func() {
	It("shows a Pod Security refusal in ReplicaFailure and a Warning event", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		var nsObj corev1.Namespace
		Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, &nsObj)).To(Succeed())
		nsObj.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
		Expect(k8s.Update(ctx, &nsObj)).To(Succeed())

		rc := builders.RayCluster("psa", ns).Obj()
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		want := `creating a worker pod of group workers: pods "psa-workers-worker-" is forbidden: violates PodSecurity "baseline:latest": ` +
			`privileged (containers "wait-gcs-ready", "ray-worker" must not set securityContext.privileged=true)`
		Eventually(replicaFailure(ctx, ns, "psa")).Should(Equal(rayv1.FailedCreateWorkerPod + ": " + want))
		Eventually(world.Events(ctx, ns, "psa")).Should(ContainElement(`Warning FailedToCreateWorkerPod: Failed to create a worker pod of group workers: ` +
			`pods "psa-workers-worker-" is forbidden: violates PodSecurity "baseline:latest": privileged (containers "wait-gcs-ready", "ray-worker" must not set securityContext.privileged=true)`))
		Expect(world.HeadPods(ctx, ns, "psa")).To(HaveLen(1), "the head meets baseline")
	})

	It("shows a LimitRange refusal of the head", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: ns},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
				Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}})).To(Succeed())
		refusedUntilReady(ctx, ns, "maximum cpu usage per Container is 500m")
		Expect(k8s.Create(ctx, builders.RayCluster("lr", ns).Obj())).To(Succeed())
		Eventually(replicaFailure(ctx, ns, "lr")).Should(Equal(rayv1.FailedCreateHeadPod + ": creating head pod: " +
			`pods "lr-head-" is forbidden: maximum cpu usage per Container is 500m, but limit is 1`))
		Eventually(world.Events(ctx, ns, "lr")).Should(ContainElement(`Warning FailedToCreateHeadPod: Failed to create head pod: pods "lr-head-" is forbidden: maximum cpu usage per Container is 500m, but limit is 1`))
	})

	It("shows a ValidatingAdmissionPolicy's message", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "registry-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
				Validations: []admissionregistrationv1.Validation{{
					Expression: "object.spec.containers.all(c, c.image.startsWith('registry.example.com/'))",
					Message:    "images must come from registry.example.com"}},
			}}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "registry-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}}}
		Expect(k8s.Create(ctx, policy)).To(Succeed())
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(k8s.Delete(ctx, binding)).To(Succeed())
			Expect(k8s.Delete(ctx, policy)).To(Succeed())
		})
		refusedUntilReady(ctx, ns, "images must come from registry.example.com")

		Expect(k8s.Create(ctx, builders.RayCluster("vap", ns).Obj())).To(Succeed())
		want := fmt.Sprintf(`creating head pod: pods "vap-head-" is forbidden: ValidatingAdmissionPolicy 'registry-%[1]s' with binding 'registry-%[1]s' denied request: images must come from registry.example.com`, ns)
		Eventually(replicaFailure(ctx, ns, "vap")).Should(Equal(rayv1.FailedCreateHeadPod + ": " + want))
		Eventually(world.Events(ctx, ns, "vap")).Should(ContainElement(ContainSubstring("Warning FailedToCreateHeadPod: Failed to create head pod: " +
			`pods "vap-head-" is forbidden: ValidatingAdmissionPolicy`)))
	})

	It("shows a policy webhook's message, sanitized and cut, and the event still fits the API's limit", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		// Like a Gatekeeper or Kyverno webhook whose message quotes a long, multi-line policy.
		message := "pods need a cost-center label\n" + strings.Repeat("policy text ", 200)
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var review admissionv1.AdmissionReview
			if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
				Result: &metav1.Status{Code: http.StatusForbidden, Message: message}}
			_ = json.NewEncoder(w).Encode(review)
		}))
		srv.TLS.MinVersion = tls.VersionTLS12
		DeferCleanup(srv.Close)
		url := srv.URL + "/deny"
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "deny-" + ns},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name:                    "deny.policy.example.com",
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
				Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
				NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			}}}
		Expect(k8s.Create(ctx, cfg)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(k8s.Delete(ctx, cfg)).To(Succeed()) })
		refusedUntilReady(ctx, ns, "pods need a cost-center label")

		Expect(k8s.Create(ctx, builders.RayCluster("hook", ns).Obj())).To(Succeed())
		Eventually(replicaFailure(ctx, ns, "hook")).Should(HavePrefix(rayv1.FailedCreateHeadPod + ": creating head pod: " +
			`admission webhook "deny.policy.example.com" denied the request: pods need a cost-center label policy text policy text`))
		msg := replicaFailure(ctx, ns, "hook")()
		Expect(msg).NotTo(ContainSubstring("\n"))
		Expect(msg).To(HaveSuffix("…"))
		Expect(len(msg)).To(BeNumerically("<", 1024))
		Eventually(world.Events(ctx, ns, "hook")).Should(ContainElement(And(
			HavePrefix(`Warning FailedToCreateHeadPod: Failed to create head pod: admission webhook "deny.policy.example.com" denied the request: pods need a cost-center label policy text`),
			HaveSuffix("…"))), "a note over 1 KiB would have been refused by the API server, and the event lost")
	})

	It("shows a ResourceQuota refusal and retries with backoff, not in a loop", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "one-pod", Namespace: ns},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
		Expect(k8s.Create(ctx, quota)).To(Succeed())
		// No quota controller runs in this suite: publish the status as it would; the API
		// server's quota admission keeps "used" up to date from then on.
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
		Expect(k8s.Status().Update(ctx, quota)).To(Succeed())

		Expect(k8s.Create(ctx, builders.RayCluster("q", ns).Obj())).To(Succeed())
		Eventually(replicaFailure(ctx, ns, "q")).Should(Equal(rayv1.FailedCreateWorkerPod + ": creating a worker pod of group workers: " +
			`pods "q-workers-worker-" is forbidden: exceeded quota: one-pod, requested: pods=1, used: pods=1, limited: pods=1`))
		Eventually(world.Status(ctx, ns, "q")).Should(rctest.HaveCondition(rayv1.HeadPodReady, metav1.ConditionTrue, rayv1.HeadPodRunningAndReady))

		// Every try is refused the same way: the pass returns the error, so the rate limiter
		// spaces the tries out exponentially, and the unchanged status is not written again.
		// The bound holds wherever in the backoff sequence the window starts (delays from
		// 5 ms doubling add up to 3 s within ten tries); a loop without backoff makes hundreds.
		mgr.Writes.Reset()
		count := func(key string) func() int { return func() int { return world.WritesIn(ns)()[key] } }
		Consistently(count("create pods"), 3*time.Second, 100*time.Millisecond).Should(BeNumerically("<=", 10))
		Expect(count("patch rayclusters/status")()).To(BeZero())
		Eventually(count("create pods")).Should(BeNumerically(">=", 1), "it keeps trying")
	})
})
