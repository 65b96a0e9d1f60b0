package permissions

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/test/builders"
)

// The chart's operatorPolicy, rendered for a release in raygate-system and applied as the
// API server would get it from `helm install` on Kubernetes 1.30 or newer.
const (
	chartPolicy  = "raygate-system-raygate-operator-rights"
	scopedPolicy = "raygate-system-policy-scoped-raygate-operator-rights"
	policyRefuse = "ValidatingAdmissionPolicy '"
)

// applyOperatorPolicy renders the chart's operator policy for release with the given --set
// values and applies it with kubectl.
func applyOperatorPolicy(ctx context.Context, release string, sets ...string) {
	GinkgoHelper()
	helm, err := tools.Path("helm")
	Expect(err).NotTo(HaveOccurred())
	args := []string{"template", release, filepath.Join(tools.RepoRoot(), "charts", "raygate"), "--namespace", "raygate-system",
		"--api-versions", "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy", "--show-only", "templates/operator-policy.yaml"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := exec.CommandContext(ctx, helm, args...).Output()
	Expect(err).NotTo(HaveOccurred(), "helm template: %v", err)
	Expect(string(out)).To(ContainSubstring("kind: ValidatingAdmissionPolicyBinding"))
	_, stderr, err := harness.Env.Kubectl(ctx, string(out), "apply", "-f", "-")
	Expect(err).NotTo(HaveOccurred(), stderr)
}

// asOperator is a client holding the ServiceAccount's token, as an attacker who stole it
// from an operator pod would.
func asOperator(sa framework.ServiceAccount) client.Client {
	GinkgoHelper()
	c, err := client.New(sa.Config(harness.Env.Config), client.Options{Scheme: k8s.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// refusedBy is the error of a write the named policy refused with a message containing msg.
func refusedBy(policy, msg string) OmegaMatcher {
	return MatchError(And(ContainSubstring(policyRefuse+policy+"'"), ContainSubstring(msg)))
}

func rayPod(name, ns string, labels map[string]string, owners ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: owners},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0"}}},
	}
}

// Release names and ServiceAccounts the suite's policies are rendered for: the chart's own,
// a namespace-scoped release whose ServiceAccount holds (by mistake, say) the cluster-wide
// rules, and those of the suite's other specs, so they run under the policy too.
var (
	chartSA        = framework.ChartServiceAccount()
	policyScopedSA = framework.ServiceAccount{Namespace: "raygate-system", Name: "raygate-policy-scoped"}
	policyWatched  = "policy-watched"
	otherReleases  = map[string]string{"missing-rule": "raygate-missing-rule", "scoped": "raygate-scoped"}
)

// installOperatorPolicies applies the chart's operator policy for every ServiceAccount the
// suite's managers run as, and waits until the API server enforces it.
func installOperatorPolicies(ctx context.Context) {
	GinkgoHelper()
	_, stderr, err := harness.Env.Kubectl(ctx, "", "create", "namespace", policyWatched)
	Expect(err).NotTo(HaveOccurred(), stderr)
	applyOperatorPolicy(ctx, "raygate")
	applyOperatorPolicy(ctx, "policy-scoped", "serviceAccount.name="+policyScopedSA.Name, "watchNamespaces={"+policyWatched+"}")
	for release, sa := range otherReleases {
		applyOperatorPolicy(ctx, release, "serviceAccount.name="+sa)
	}
	Expect(framework.GrantChartRBAC(ctx, harness.Env.Config, policyScopedSA, framework.RBACOptions{})).To(Succeed())
	// Token authentication's Secret rights: the widest grant the chart makes.
	Expect(framework.GrantChartRBAC(ctx, harness.Env.Config, chartSA, framework.RBACOptions{TokenAuthentication: true})).To(Succeed())
	for sa, policy := range map[framework.ServiceAccount]string{chartSA: chartPolicy, policyScopedSA: scopedPolicy} {
		c := asOperator(sa)
		Eventually(func() error {
			return c.Create(ctx, rayPod("probe", "kube-system", nil), client.DryRunAll)
		}).Should(refusedBy(policy, "protected namespace kube-system"))
	}
}

var _ = Describe("the chart's bound on the operator's own rights (operatorPolicy)", func() {
	It("refuses a stolen operator token the writes its RBAC allows and raygate never makes", func(ctx context.Context) {
		ns := newNamespace(ctx)
		for _, check := range []struct{ verb, resource, ns string }{
			{"create", "pods", "kube-system"}, {"create", "configmaps", ns}, {"update", "configmaps", ns},
			{"create", "secrets", ns}, {"create", "pods", ns},
		} {
			Expect(allowed(ctx, chartSA, check.verb, "", check.resource, check.ns)).To(BeTrue(), "RBAC allows %v: the refusals below are the policy's", check)
		}
		Expect(allowed(ctx, chartSA, "create", "rbac.authorization.k8s.io", "rolebindings", ns)).To(BeTrue())
		stolen := asOperator(chartSA)
		rc := builders.RayCluster("victim", ns).Obj()
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		owner := *metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))
		rayLabels := map[string]string{rayv1.ClusterLabelKey: "victim", rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName}

		By("a pod in kube-system, even one labelled and owned as raygate's")
		Expect(stolen.Create(ctx, rayPod("miner", "kube-system", rayLabels))).To(refusedBy(chartPolicy,
			"raygate writes nothing in the protected namespace kube-system (chart value operatorPolicy.protectedNamespaces): refused CREATE of pods kube-system/miner"))
		By("a pod without raygate's labels and owner")
		Expect(stolen.Create(ctx, rayPod("miner", ns, map[string]string{"app": "miner"}))).To(refusedBy(chartPolicy,
			"raygate writes only the pods of RayClusters (labelled ray.io/cluster and controlled by that RayCluster): refused CREATE of pods "+ns+"/miner"))
		By("a pod labelled for a cluster but controlled by none")
		Expect(stolen.Create(ctx, rayPod("miner", ns, rayLabels))).To(refusedBy(chartPolicy, "raygate writes only the pods of RayClusters"))

		By("a ConfigMap that is not a serve-config record, created or changed")
		Expect(stolen.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-settings", Namespace: ns}})).To(refusedBy(chartPolicy,
			"raygate writes ConfigMaps only as the serve-config records of RayClusters (<cluster>-serve-configs, labelled ray.io/cluster and controlled by that RayCluster): refused CREATE of configmaps "+ns+"/app-settings"))
		tenants := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-settings", Namespace: ns}, Data: map[string]string{"debug": "false"}}
		Expect(k8s.Create(ctx, tenants)).To(Succeed())
		tenants.Data["debug"] = "true"
		Expect(stolen.Update(ctx, tenants)).To(refusedBy(chartPolicy, "refused UPDATE of configmaps "+ns+"/app-settings"))

		By("a Secret that is not a cluster's token Secret")
		Expect(stolen.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-creds", Namespace: ns}})).To(refusedBy(chartPolicy,
			"raygate writes Secrets only by creating the auth token Secret of a RayCluster (named after it, labelled ray.io/cluster and controlled by it): refused CREATE of secrets "+ns+"/registry-creds"))
		By("handing raygate's rights to a user the policy does not bound")
		// RBAC lets a user bind a role whose rules it holds itself, as raygate holds these.
		podCreator := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "pod-creator-"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}},
		}
		Expect(k8s.Create(ctx, podCreator)).To(Succeed())
		DeferCleanup(k8s.Delete, podCreator)
		Expect(stolen.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: ns, Labels: rayLabels, OwnerReferences: []metav1.OwnerReference{owner}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: podCreator.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}},
		})).To(refusedBy(chartPolicy, "raygate binds only its autoscaler Role of the same name, to ServiceAccounts of the namespace"))

		By("a connection through the API server to a pod in kube-system, with dashboardAPIServerProxy's rule")
		proxy := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "dashboard-proxy-"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/proxy"}, Verbs: []string{"get", "update"}}},
		}
		Expect(k8s.Create(ctx, proxy)).To(Succeed())
		DeferCleanup(k8s.Delete, proxy)
		proxyBinding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "dashboard-proxy-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: proxy.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: chartSA.Namespace, Name: chartSA.Name}},
		}
		Expect(k8s.Create(ctx, proxyBinding)).To(Succeed())
		DeferCleanup(k8s.Delete, proxyBinding)
		clientset, err := kubernetes.NewForConfig(chartSA.Config(harness.Env.Config))
		Expect(err).NotTo(HaveOccurred())
		// Until the binding reaches the authorizer, RBAC refuses first, with its own message.
		// A proxied answer is not decoded: the refusal is in its body.
		Eventually(func() string {
			body, err := clientset.CoreV1().Pods("kube-system").ProxyGet("http", "kube-apiserver", "8080", "/", nil).DoRaw(ctx)
			Expect(err).To(HaveOccurred())
			return string(body)
		}).Should(And(ContainSubstring(policyRefuse+chartPolicy+"'"), ContainSubstring("refused CONNECT of pods/proxy kube-system/http:kube-apiserver:8080")))

		By("outside the watched namespaces of a namespace-scoped release")
		other := asOperator(policyScopedSA)
		Expect(other.Create(ctx, rayPod("miner", ns, rayLabels, owner))).To(refusedBy(scopedPolicy,
			"raygate writes only in the namespaces it watches ("+policyWatched+"): refused CREATE of pods "+ns+"/miner"))

		By("nothing was written")
		var pods corev1.PodList
		Expect(k8s.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		Expect(pods.Items).To(BeEmpty())
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-settings"}, tenants)).To(Succeed())
		Expect(tenants.Data).To(HaveKeyWithValue("debug", "false"))
	})

	It("lets the operator run token-authenticated, autoscaled RayClusters and a RayService under it", func(ctx context.Context) {
		dashboards := framework.StartDashboardsWith(raysim.Options{})
		DeferCleanup(dashboards.Close)
		Expect(dashboards.ListenOnPods(harness.Env.Config)).To(Succeed())
		opts := dashboards.Wire(framework.ManagerOptions())
		opts.TokenAuthentication = true
		mgr := harness.StartManager(opts)
		DeferCleanup(mgr.Stop)
		ns := newNamespace(ctx)

		rc := builders.RayCluster("auth", ns).Autoscaling().Obj()
		rc.Spec.RayVersion = "2.52.0"
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		Expect(k8s.Create(ctx, builders.RayService("serve", ns).Obj())).To(Succeed())

		Eventually(func(g Gomega) {
			got := &rayv1.RayCluster{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "auth"}, got)).To(Succeed())
			g.Expect(got.Status.State).To(Equal(rayv1.Ready))
		}).Should(Succeed())
		By("its token Secret and the autoscaler's ServiceAccount, Role and RoleBinding were written")
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "auth"}, &corev1.Secret{})).To(Succeed())
		for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "auth"}, obj)).To(Succeed())
		}

		By("the RayService serves, its config recorded in its cluster's ConfigMap")
		Eventually(func(g Gomega) {
			svc := &rayv1.RayService{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "serve"}, svc)).To(Succeed())
			g.Expect(svc.Status.ActiveServiceStatus.RayClusterName).NotTo(BeEmpty())
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc.Status.ActiveServiceStatus.RayClusterName + "-serve-configs"}, &corev1.ConfigMap{})).To(Succeed())
			g.Expect(svc.Status.ServiceStatus).To(Equal(rayv1.Running))
		}, "60s").Should(Succeed())

		By("scaling the workers down as the autoscaler does: the operator deletes the pod it controls")
		workers := func() []string {
			var pods corev1.PodList
			Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: "auth", rayv1.NodeTypeLabelKey: string(rayv1.WorkerNode)})).To(Succeed())
			var names []string
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil {
					names = append(names, p.Name)
				}
			}
			return names
		}
		Expect(workers()).To(HaveLen(1))
		Eventually(func(g Gomega) {
			got := &rayv1.RayCluster{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "auth"}, got)).To(Succeed())
			got.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](0)
			got.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = workers()
			g.Expect(k8s.Update(ctx, got)).To(Succeed())
		}).Should(Succeed())
		Eventually(workers).Should(BeEmpty())
	})
})

// namespaceBoundOnly are the resources raygate writes that the operator policy bounds by
// namespace only, each with the reason it cannot narrow them further. Every other resource
// the chart lets raygate write must be named in the policy's own rules.
var namespaceBoundOnly = map[string]string{
	"events":      "events carry no labels or owners; raygate records them about the objects it reconciles",
	"leases":      "the leader election Lease, in the release namespace only (Role)",
	"rayservices": "raygate patches the annotations of the RayServices users create, which no Ray object controls",
	"status":      "the status of the ray.io objects users create",
	"finalizers":  "the finalizers of the ray.io objects users create",
}

func isWrite(verb string) bool {
	return slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection", "*"}, verb)
}

var _ = Describe("the chart's operator policy", func() {
	It("narrows every resource the chart lets raygate write beyond the namespace rules, or says why not", func(ctx context.Context) {
		gen, err := framework.ReadGeneratedRBAC(filepath.Join(tools.RepoRoot(), "config", "rbac"))
		Expect(err).NotTo(HaveOccurred())
		// Token authentication's rules are granted from the chart's template, not generated.
		rules := append(append(append(gen.Cluster, gen.Own...), gen.LeaderElection...),
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}})
		helm, err := tools.Path("helm")
		Expect(err).NotTo(HaveOccurred())
		policy, err := exec.CommandContext(ctx, helm, "template", "raygate", filepath.Join(tools.RepoRoot(), "charts", "raygate"), "--namespace", "raygate-system",
			"--api-versions", "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy", "--show-only", "templates/operator-policy.yaml").Output()
		Expect(err).NotTo(HaveOccurred())

		var unbounded []string
		for _, r := range rules {
			if !slices.ContainsFunc(r.Verbs, isWrite) {
				continue
			}
			for _, res := range r.Resources {
				_, sub, _ := strings.Cut(res, "/")
				if _, ok := namespaceBoundOnly[res]; ok {
					continue
				}
				if _, ok := namespaceBoundOnly[sub]; ok {
					continue
				}
				if !strings.Contains(string(policy), "'"+res+"'") {
					unbounded = append(unbounded, res)
				}
			}
		}
		Expect(unbounded).To(BeEmpty(), "resources raygate may write that charts/raygate/templates/operator-policy.yaml does not narrow: add a rule there, or a reason to namespaceBoundOnly")
	})
})
