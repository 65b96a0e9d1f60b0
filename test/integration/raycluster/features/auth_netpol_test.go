package features

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

// The operator's namespace as the chart passes it (POD_NAMESPACE); here only a name the
// head NetworkPolicies admit.
const operatorNS = "raygate-system"

// withTokenDashboards replaces the suite's manager, for one spec, with one that knows its
// namespace and reaches simulated dashboards which, like Ray with token authentication,
// answer 401 without the cluster's token (read from the Secret its pods read).
func withTokenDashboards(ctx context.Context) *framework.Dashboards {
	GinkgoHelper()
	dashboards := framework.StartDashboardsWith(raysim.Options{RequireToken: func(c types.NamespacedName) string {
		rc := &rayv1.RayCluster{}
		if err := k8s.Get(context.Background(), c, rc); err != nil || rc.Spec.AuthOptions == nil || rc.Spec.AuthOptions.Mode != rayv1.AuthModeToken {
			return ""
		}
		secret := &corev1.Secret{}
		name := ptr.Deref(rc.Spec.AuthOptions.SecretName, rc.Name)
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: c.Namespace, Name: name}, secret); err != nil {
			return "no Secret yet: nothing matches"
		}
		return string(secret.Data["auth_token"])
	}})
	Expect(mgr.Stop()).To(Succeed())
	opts := dashboards.Wire(rctest.ManagerOptions())
	opts.OperatorNamespace = operatorNS
	mgr = harness.StartManager(opts)
	DeferCleanup(func() {
		Expect(mgr.Stop()).To(Succeed())
		dashboards.Close()
		mgr = harness.StartManager(rctest.ManagerOptions())
	})
	return dashboards
}

func tokenCluster(name, ns string) *rayv1.RayCluster {
	rc := builders.RayCluster(name, ns).Obj()
	rc.Spec.RayVersion = "2.52.0"
	rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
	return rc
}

func secretOf(ctx context.Context, ns, name string) func() (*corev1.Secret, error) {
	return func() (*corev1.Secret, error) {
		s := &corev1.Secret{}
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)
		return s, err
	}
}

// tokenEnv is the environment raygate gives every Ray process of a token-authenticated
// cluster: the mode, and the token by reference.
func tokenEnv(secret string) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "RAY_AUTH_MODE", Value: "token"},
		{Name: "RAY_AUTH_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "auth_token"}}},
	}
}

func authEnvOf(c corev1.Container) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "RAY_AUTH_") {
			out = append(out, e)
		}
	}
	return out
}

var _ = Describe("Ray token authentication", func() {
	It("generates the cluster's token Secret once, owned and immutable, and gives every Ray process the token by reference", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := tokenCluster("auth", ns)
		rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "auth")

		secret, err := secretOf(ctx, ns, "auth")()
		Expect(err).NotTo(HaveOccurred())
		owner := metav1.GetControllerOf(secret)
		Expect(owner).NotTo(BeNil())
		Expect(owner.Kind).To(Equal("RayCluster"))
		Expect(owner.UID).To(Equal(world.Get(ctx, ns, "auth").UID))
		Expect(secret.Immutable).To(Equal(ptr.To(true)))
		Expect(secret.Labels).To(HaveKeyWithValue("ray.io/cluster", "auth"))
		token := string(secret.Data["auth_token"])
		raw, err := base64.StdEncoding.DecodeString(token)
		Expect(err).NotTo(HaveOccurred())
		Expect(raw).To(HaveLen(32))

		head := world.HeadPods(ctx, ns, "auth")[0]
		Expect(authEnvOf(head.Spec.Containers[0])).To(ConsistOf(tokenEnv("auth")))
		var autoscaler *corev1.Container
		for i := range head.Spec.Containers {
			if head.Spec.Containers[i].Name == "autoscaler" {
				autoscaler = &head.Spec.Containers[i]
			}
		}
		Expect(autoscaler).NotTo(BeNil())
		Expect(authEnvOf(*autoscaler)).To(ConsistOf(tokenEnv("auth")))
		worker := world.WorkerPods(ctx, ns, "auth", "workers")[0]
		Expect(authEnvOf(worker.Spec.Containers[0])).To(ConsistOf(tokenEnv("auth")))
		Expect(worker.Spec.InitContainers).NotTo(BeEmpty())
		Expect(authEnvOf(worker.Spec.InitContainers[0])).To(ConsistOf(tokenEnv("auth")))

		// The token is in no pod spec and no event.
		for _, p := range append(world.HeadPods(ctx, ns, "auth"), world.WorkerPods(ctx, ns, "auth", "workers")...) {
			Expect(p.Spec.String()).NotTo(ContainSubstring(token))
		}
		Eventually(world.Events(ctx, ns, "auth")).Should(ContainElement(HavePrefix("Normal CreatedAuthSecret: Created Secret auth with a new random Ray auth token")))
		Expect(strings.Join(world.Events(ctx, ns, "auth")(), "\n")).NotTo(ContainSubstring(token))

		// Never rotated: later passes (a label change, a scale-up) leave the Secret alone.
		world.ExpectQuiet()
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			c := world.Get(ctx, ns, "auth")
			c.Labels = map[string]string{"team": "ml"}
			c.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2)
			return k8s.Update(ctx, c)
		})).To(Succeed())
		Eventually(func() int { return len(world.WorkerPods(ctx, ns, "auth", "workers")) }).Should(Equal(2))
		Consistently(secretOf(ctx, ns, "auth"), time.Second).Should(And(
			WithTransform(func(s *corev1.Secret) types.UID { return s.UID }, Equal(secret.UID)),
			WithTransform(func(s *corev1.Secret) string { return string(s.Data["auth_token"]) }, Equal(token))))
		created := 0
		for _, e := range world.Events(ctx, ns, "auth")() {
			if strings.HasPrefix(e, "Normal CreatedAuthSecret") {
				created++
			}
		}
		Expect(created).To(Equal(1), "the Secret was created once")
	})

	It("uses the Secret named in secretName and generates none", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := tokenCluster("named", ns)
		rc.Spec.AuthOptions.SecretName = ptr.To("team-token")
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "named")
		Expect(authEnvOf(world.HeadPods(ctx, ns, "named")[0].Spec.Containers[0])).To(ConsistOf(tokenEnv("team-token")))
		Expect(authEnvOf(world.WorkerPods(ctx, ns, "named", "workers")[0].Spec.Containers[0])).To(ConsistOf(tokenEnv("team-token")))
		_, err := secretOf(ctx, ns, "named")()
		Expect(err).To(MatchError(ContainSubstring("not found")))
	})

	It("never uses a Secret of the token's name that the cluster does not control, and creates no pods meanwhile", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		squatter := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns},
			Data:       map[string][]byte{"auth_token": []byte("chosen-by-someone-else")},
		}
		Expect(k8s.Create(ctx, squatter)).To(Succeed())
		Expect(k8s.Create(ctx, tokenCluster("taken", ns))).To(Succeed())
		Eventually(world.Status(ctx, ns, "taken")).Should(rctest.HaveCondition(rayv1.OwnershipConflict, metav1.ConditionTrue, rayv1.ForeignObject))
		Consistently(func() int { return len(world.Pods(ctx, ns, "taken")) }, 2*time.Second).Should(BeZero())
		s, err := secretOf(ctx, ns, "taken")()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(s.Data["auth_token"])).To(Equal("chosen-by-someone-else"), "left untouched")

		By("once the Secret is gone, raygate generates its own and the pods start (Secrets are not watched: the conflict is looked at again every 30 s)")
		Expect(k8s.Delete(ctx, squatter)).To(Succeed())
		Eventually(world.Status(ctx, ns, "taken"), 90*time.Second).Should(rctest.StateIs(rayv1.Ready))
		s, err = secretOf(ctx, ns, "taken")()
		Expect(err).NotTo(HaveOccurred())
		Expect(metav1.GetControllerOf(s)).NotTo(BeNil())
		Expect(string(s.Data["auth_token"])).NotTo(Equal("chosen-by-someone-else"))
	})

	It("sends the token with raygate's own dashboard calls", func(ctx context.Context) {
		dashboards := withTokenDashboards(ctx)
		ns := world.NewNamespace(ctx)
		svc := builders.RayService("svc", ns).Obj()
		svc.Spec.RayClusterSpec.RayVersion = "2.52.0"
		svc.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
		Expect(k8s.Create(ctx, svc)).To(Succeed())

		var cluster types.NamespacedName
		Eventually(func() string {
			s := &rayv1.RayService{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(svc), s)).To(Succeed())
			cluster = types.NamespacedName{Namespace: ns, Name: s.Status.ActiveServiceStatus.RayClusterName}
			if cluster.Name == "" {
				cluster.Name = s.Status.PendingServiceStatus.RayClusterName
			}
			return cluster.Name
		}).ShouldNot(BeEmpty())
		Eventually(func() int {
			s := dashboards.Server(cluster)
			if s == nil {
				return 0
			}
			return len(s.Submissions())
		}).Should(BeNumerically(">=", 1), "the serve config reached the dashboard that requires the token")
		Expect(dashboards.Server(cluster).Unauthorized()).To(BeZero(), "no call went without the token")
		Eventually(func() bool { return dashboards.Server(cluster).AllRunning() }).Should(BeTrue())
	})
})

var _ = Describe("network isolation", func() {
	tcp := ptr.To(corev1.ProtocolTCP)
	udp := ptr.To(corev1.ProtocolUDP)
	port := func(p int32) *intstr.IntOrString { v := intstr.FromInt32(p); return &v }
	policy := func(ctx context.Context, ns, name string) func() (*networkingv1.NetworkPolicy, error) {
		return func() (*networkingv1.NetworkPolicy, error) {
			np := &networkingv1.NetworkPolicy{}
			err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, np)
			return np, err
		}
	}
	policyNames := func(ctx context.Context, ns string) func() []string {
		return func() []string {
			var list networkingv1.NetworkPolicyList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var out []string
			for _, np := range list.Items {
				if np.DeletionTimestamp.IsZero() {
					out = append(out, np.Name)
				}
			}
			return out
		}
	}
	spec := func(np *networkingv1.NetworkPolicy) networkingv1.NetworkPolicySpec { return np.Spec }
	fromCluster := networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ray.io/cluster": "iso"}}}}}
	toCluster := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ray.io/cluster": "iso"}}}}}
	fromOperator := networkingv1.NetworkPolicyIngressRule{
		From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": operatorNS}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/component": "operator"}},
		}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: port(8265)}},
	}
	dns := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{{Protocol: udp, Port: port(53)}, {Port: port(53)}}}
	dnsStored := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{{Protocol: udp, Port: port(53)}, {Protocol: tcp, Port: port(53)}}}
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	headSel := metav1.LabelSelector{MatchLabels: map[string]string{"ray.io/cluster": "iso", "ray.io/node-type": "head"}}
	groupSel := func(g string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"ray.io/cluster": "iso", "ray.io/node-type": "worker", "ray.io/group": g}}
	}
	update := func(ctx context.Context, ns string, mutate func(*rayv1.RayCluster)) {
		GinkgoHelper()
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			c := world.Get(ctx, ns, "iso")
			mutate(c)
			return k8s.Update(ctx, c)
		})).To(Succeed())
	}

	It("keeps owned, minimal NetworkPolicies in step with spec.networkPolicy, admitting the operator to the dashboard", func(ctx context.Context) {
		withTokenDashboards(ctx)
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("iso", ns).Obj()
		rc.Spec.NetworkPolicy = &rayv1.NetworkPolicyConfig{
			Mode: ptr.To(rayv1.NetworkPolicyDenyAll),
			Head: &rayv1.NetworkPolicyRules{EgressRules: []networkingv1.NetworkPolicyEgressRule{dns}},
		}
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "iso")
		uid := world.Get(ctx, ns, "iso").UID

		Expect(policyNames(ctx, ns)()).To(ConsistOf("iso-head", "iso-workers-workers"))
		head, err := policy(ctx, ns, "iso-head")()
		Expect(err).NotTo(HaveOccurred())
		Expect(metav1.IsControlledBy(head, &metav1.ObjectMeta{UID: uid})).To(BeTrue())
		Expect(head.Labels).To(Equal(map[string]string{"ray.io/cluster": "iso", "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator"}))
		Expect(head.Spec).To(Equal(networkingv1.NetworkPolicySpec{
			PodSelector: headSel, PolicyTypes: both,
			Ingress: []networkingv1.NetworkPolicyIngressRule{fromCluster, fromOperator},
			Egress:  []networkingv1.NetworkPolicyEgressRule{toCluster, dnsStored},
		}))
		Expect(policy(ctx, ns, "iso-workers-workers")()).To(WithTransform(spec, Equal(networkingv1.NetworkPolicySpec{
			PodSelector: groupSel("workers"), PolicyTypes: both,
			Ingress: []networkingv1.NetworkPolicyIngressRule{fromCluster},
			Egress:  []networkingv1.NetworkPolicyEgressRule{toCluster},
		})))
		Eventually(world.Events(ctx, ns, "iso")).Should(ContainElements("Normal CreatedNetworkPolicy: Created NetworkPolicy iso-head", "Normal CreatedNetworkPolicy: Created NetworkPolicy iso-workers-workers"))

		By("a converged cluster with NetworkPolicies writes nothing")
		world.ExpectQuiet()
		Consistently(world.WritesIn(ns), 2*time.Second).Should(BeEmpty())

		By("a mode change updates the policies in place")
		update(ctx, ns, func(c *rayv1.RayCluster) {
			c.Spec.NetworkPolicy.Mode = ptr.To(rayv1.NetworkPolicyDenyAllIngress)
			c.Spec.NetworkPolicy.Head = nil
		})
		Eventually(policy(ctx, ns, "iso-head")).Should(WithTransform(spec, Equal(networkingv1.NetworkPolicySpec{
			PodSelector: headSel, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{fromCluster, fromOperator},
		})))
		Eventually(policy(ctx, ns, "iso-workers-workers")).Should(WithTransform(spec, Equal(networkingv1.NetworkPolicySpec{
			PodSelector: groupSel("workers"), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{fromCluster},
		})))
		Expect(policy(ctx, ns, "iso-head")()).To(WithTransform(func(np *networkingv1.NetworkPolicy) types.UID { return np.UID }, Equal(head.UID)))

		By("a new worker group gets its own policy, with its workerGroups rules; removing the group removes it")
		gpuRule := networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "feeder"}}}}}
		update(ctx, ns, func(c *rayv1.RayCluster) {
			c.Spec.WorkerGroupSpecs = append(c.Spec.WorkerGroupSpecs, builders.WorkerGroup("gpu", 1))
			c.Spec.NetworkPolicy.WorkerGroups = []rayv1.WorkerGroupNetworkPolicyRules{{GroupName: "gpu",
				NetworkPolicyRules: rayv1.NetworkPolicyRules{IngressRules: []networkingv1.NetworkPolicyIngressRule{gpuRule}}}}
		})
		Eventually(policy(ctx, ns, "iso-workers-gpu")).Should(WithTransform(spec, Equal(networkingv1.NetworkPolicySpec{
			PodSelector: groupSel("gpu"), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{fromCluster, gpuRule},
		})))
		update(ctx, ns, func(c *rayv1.RayCluster) {
			c.Spec.WorkerGroupSpecs = c.Spec.WorkerGroupSpecs[:1]
			c.Spec.NetworkPolicy.WorkerGroups = nil
		})
		Eventually(policyNames(ctx, ns)).Should(ConsistOf("iso-head", "iso-workers-workers"))

		By("a policy raygate did not make is left alone, even with the cluster's label")
		foreign := &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "iso-workers-extra", Namespace: ns, Labels: map[string]string{"ray.io/cluster": "iso"}},
			Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}},
		}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())

		By("removing networkPolicy deletes raygate's policies")
		update(ctx, ns, func(c *rayv1.RayCluster) { c.Spec.NetworkPolicy = nil })
		Eventually(policyNames(ctx, ns)).Should(ConsistOf("iso-workers-extra"))
		Eventually(world.Events(ctx, ns, "iso")).Should(ContainElement("Normal DeletedNetworkPolicy: Deleted NetworkPolicy iso-head: the cluster no longer asks for it"))
	})
})
